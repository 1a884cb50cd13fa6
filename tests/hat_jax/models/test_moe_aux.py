"""The MoE load-balancing loss is trained: SFT's step adds it, equal to transformers'.

References: transformers' Qwen3-MoE `loss` and `aux_loss` (labels given: CE +
router_aux_loss_coef * aux) on the same batch and weights; and a short run from a
collapsed router (every token sent to experts 0 and 1 of 4), which the language
loss alone cannot reopen (with normalised top-k weights the unchosen experts get
no gradient from it) and the aux term does.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import torch
from flax import nnx

from hat_jax.checkpoints.hf import load_hf
from hat_jax.train.sft import jit_sft_step
from hat_jax.train.state import init_state, make_optimizer
from tests.hat_jax.models.hf_reference import make_hf

OPTIM = dict(
    lr=1e-2,
    b1=0.9,
    b2=0.95,
    eps=1e-8,
    weight_decay=0.0,
    warmup_steps=0,
    total_steps=100,
    end_lr_frac=1.0,
    clip_norm=0.0,
)


def _cfg(**optim):
    return ml_collections.ConfigDict(
        dict(
            grad_accum=1,
            compute_dtype="float32",
            loss_chunk=8,
            mtp_weight=0.0,
            optim=OPTIM | optim,
        )
    )


def _batch(tokens: np.ndarray, real: np.ndarray) -> dict:
    """Rows of one example each, right-padded; position t predicts token t + 1."""
    b, t = tokens.shape
    nxt = np.concatenate([tokens[:, 1:], np.zeros((b, 1), tokens.dtype)], 1)
    nxt_real = np.concatenate([real[:, 1:], np.zeros((b, 1), bool)], 1)
    return {
        "inputs": tokens.astype(np.int32),
        "targets": nxt.astype(np.int32),
        "loss_mask": nxt_real.astype(np.float32),
        "segment_ids": real.astype(np.int32),
        "positions": np.broadcast_to(np.arange(t, dtype=np.int32), (b, t)).copy(),
    }


def test_sft_step_loss_and_aux_equal_transformers(tmp_path):
    hf = make_hf("qwen3_moe", heads=4, kv_heads=2, router_aux_loss_coef=0.5)
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path)
    assert cfg.router_aux_loss_coef == 0.5
    rng = np.random.default_rng(3)
    tokens = rng.integers(1, cfg.vocab_size, size=(3, 11))
    real = np.arange(11)[None] < np.array([[11], [8], [5]])
    tokens = np.where(real, tokens, 0)
    with torch.no_grad():
        ref = hf(
            input_ids=torch.tensor(tokens),
            attention_mask=torch.tensor(real.astype(np.int64)),
            labels=torch.tensor(np.where(real, tokens, -100)),
            output_router_logits=True,
        )
    graphdef, state = init_state(model, make_optimizer(_cfg().optim), seed=0)
    _, m = jit_sft_step(graphdef, _cfg())(
        state, _batch(tokens, real), jax.random.PRNGKey(0)
    )
    np.testing.assert_allclose(float(m["train/moe_aux_loss"]), ref.aux_loss, rtol=1e-5)
    np.testing.assert_allclose(float(m["train/loss"]), ref.loss, rtol=1e-5)


def _collapsed(tmp_path, coef: float):
    """A Qwen3-MoE whose router sends every token to experts 0 and 1."""
    hf = make_hf(
        "qwen3_moe", heads=4, kv_heads=2, mlp_only_layers=[], router_aux_loss_coef=coef
    )
    hf.save_pretrained(tmp_path)
    model, cfg = load_hf(tmp_path)
    d = cfg.hidden_size
    lift = np.zeros(d, np.float32)
    lift[0] = 1.0  # one shared direction in every token's state ...
    model.embed_tokens.embedding[...] = model.embed_tokens.embedding[...] + 4 * lift
    for layer in model.layers:  # ... that each router reads as "experts 0 and 1"
        w = np.array(layer.post_attention_layernorm.weight[...])
        w[0] = 1.0
        layer.post_attention_layernorm.weight[...] = jnp.asarray(w)
        k = np.array(layer.mlp.gate.kernel[...])
        k[0] = [1.0, 1.0, -1.0, -1.0]
        layer.mlp.gate.kernel[...] = jnp.asarray(k)
    return model, cfg


def _loads(model, batch) -> np.ndarray:
    """Share of the top-k assignments each expert got [E], pooled over the MoE
    layers as the loss (and transformers') pools them: one layer on {0, 1} and
    the other on {2, 3} is balanced."""
    _, _, routers = model.hidden_states(
        jnp.asarray(batch["inputs"]), segment_ids=jnp.asarray(batch["segment_ids"])
    )
    out = []
    for logits in routers:
        _, idx = jax.lax.top_k(logits, 2)
        out.append(np.bincount(np.asarray(idx).ravel(), minlength=4) / idx.size)
    return np.mean(out, axis=0)


def _train(tmp_path, coef: float, steps: int = 40) -> np.ndarray:
    model, cfg = _collapsed(tmp_path, coef)
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, cfg.vocab_size, size=(4, 24))
    batch = _batch(tokens, np.ones_like(tokens, bool))
    assert _loads(model, batch)[2:].max() < 0.01  # collapsed at the start
    graphdef, state = init_state(model, make_optimizer(_cfg().optim), seed=0)
    step = jit_sft_step(graphdef, _cfg())
    for _ in range(steps):
        state, m = step(state, batch, jax.random.PRNGKey(0))
    assert np.isfinite(float(m["train/loss"]))
    return _loads(nnx.merge(graphdef, state.params, state.frozen), batch)


def test_aux_loss_reopens_a_collapsed_router(tmp_path):
    without = _train(tmp_path / "a", coef=0.0)
    trained = _train(tmp_path / "b", coef=1.0)
    assert without[2:].max() < 0.1, without  # the LM loss alone: still collapsed
    assert trained.min() > 0.15, trained  # every expert near its 0.25 share
