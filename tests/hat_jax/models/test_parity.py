"""Logits parity with transformers on tiny random configs (fp32, max |d| <= 1e-4)."""

import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.checkpoints.hf import load_hf
from tests.hat_jax.models.hf_reference import hf_logits, make_hf

CASES = [
    # family, heads, kv_heads, head_dim, tie
    ("llama", 6, 6, None, True),  # GQA ratio 1
    ("llama", 6, 3, None, False),  # ratio 2, untied
    ("llama", 6, 2, 16, True),  # ratio 3, head_dim != hidden / heads
    ("qwen3", 6, 2, 16, False),
    ("qwen3", 4, 4, None, True),
    ("qwen3_moe", 6, 3, 12, False),
]


@pytest.mark.parametrize("family,heads,kv,head_dim,tie", CASES)
def test_logits_match_transformers(tmp_path, family, heads, kv, head_dim, tie):
    hf = make_hf(family, heads=heads, kv_heads=kv, head_dim=head_dim, tie=tie)
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path)
    assert cfg.num_key_value_heads == kv and cfg.tie_word_embeddings == tie

    rng = np.random.default_rng(0)
    tokens = rng.integers(0, cfg.vocab_size, size=(3, 11))
    lengths = np.array([11, 7, 4])
    mask = (np.arange(11)[None] < lengths[:, None]).astype(np.int64)
    tokens = np.where(mask == 1, tokens, 0)  # right padding

    ref = hf_logits(hf, tokens, mask)
    ours = np.asarray(model(jnp.asarray(tokens), mask=jnp.asarray(mask, bool)))
    assert ours.shape == ref.shape
    real = mask.astype(bool)
    np.testing.assert_array_less(np.abs(ours - ref)[real].max(), 1e-4)


def test_moe_aux_loss_matches_transformers(tmp_path):
    import torch

    from hat_jax.losses.moe import load_balancing_loss

    hf = make_hf("qwen3_moe", heads=4, kv_heads=2, mlp_only_layers=[])
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path)
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, cfg.vocab_size, size=(2, 9))
    mask = np.ones((2, 9), np.int64)
    mask[1, 6:] = 0
    with torch.no_grad():
        ref = hf(
            input_ids=torch.tensor(tokens),
            attention_mask=torch.tensor(mask),
            output_router_logits=True,
        ).aux_loss.item()
    out = model.forward(jnp.asarray(tokens), mask=jnp.asarray(mask, bool))
    assert len(out.router_logits) == cfg.num_hidden_layers
    ours = load_balancing_loss(
        out.router_logits,
        num_experts=cfg.num_experts,
        top_k=cfg.num_experts_per_tok,
        mask=jnp.asarray(mask, bool),
    )
    assert abs(float(ours) - ref) < 1e-5


def test_bfloat16_params_and_compute(tmp_path):
    """bf16 storage and compute stay close to the float32 reference."""
    hf = make_hf("qwen3", heads=4, kv_heads=2, head_dim=16)
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path, param_dtype="bfloat16", dtype="bfloat16")
    assert model.layers[0].self_attn.q_proj.kernel[...].dtype == jnp.bfloat16
    tokens = np.random.default_rng(2).integers(0, cfg.vocab_size, size=(2, 8))
    ours = np.asarray(model(jnp.asarray(tokens)))
    ref = hf_logits(hf, tokens)
    assert ours.dtype == np.float32
    scale = np.abs(ref).max()
    assert np.abs(ours - ref).max() / scale < 0.05
    assert (ours.argmax(-1) == ref.argmax(-1)).mean() > 0.8
