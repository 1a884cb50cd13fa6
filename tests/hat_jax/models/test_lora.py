"""LoRA: identity at init, numerics against a NumPy merge, merge on export."""

import chex
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch
import transformers
from flax import nnx

from hat_jax.checkpoints.hf import save_hf
from hat_jax.models import ModelConfig, build_model
from hat_jax.models.lora import (
    LoRAConfig,
    LoRALinear,
    LoRAParam,
    apply_lora,
    frozen_filter,
    has_lora,
    lora_param_count,
    merge_lora,
    trainable_filter,
    trainable_fraction,
)
from tests.tiny_configs import tiny_hybrid

TINY = dict(
    vocab_size=89,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)
LLAMA = ModelConfig(model_type="llama", tie_word_embeddings=True, **TINY)
QWEN3 = ModelConfig(model_type="qwen3", **TINY)
MOE = ModelConfig(
    model_type="qwen3_moe",
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=24,
    mlp_only_layers=(0,),
    **TINY,
)
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TOKENS = jnp.asarray(np.random.default_rng(0).integers(0, 89, size=(2, 9)))


def _parent(layer, name):
    return layer.self_attn if name in ALL[:4] else layer.mlp


def _randomize(model, seed=0, std=0.1):
    """Random A and B everywhere, so the adapters change the model."""
    rng = np.random.default_rng(seed)
    for _, m in nnx.iter_modules(model):
        if isinstance(m, LoRALinear):
            m.lora_a[...] = jnp.asarray(rng.normal(0, std, m.lora_a.shape), jnp.float32)
            m.lora_b[...] = jnp.asarray(rng.normal(0, std, m.lora_b.shape), jnp.float32)


def _paths(model, filt=nnx.Param):
    return {p for p, _ in nnx.to_flat_state(nnx.state(model, filt))}


@nnx.jit
def _forward(model, tokens):
    return model(tokens)


def _logits(model):
    return np.asarray(_forward(model, jnp.asarray(TOKENS)))


@pytest.mark.parametrize("cfg", [LLAMA, QWEN3], ids=["llama", "qwen3"])
def test_identity_at_init(cfg):
    base = build_model(cfg, seed=1)
    lora = apply_lora(base, LoRAConfig(rank=4, alpha=8.0), rngs=nnx.Rngs(params=0))
    assert has_lora(lora) and not has_lora(base)  # the input is left unchanged
    assert np.array_equal(_logits(lora), _logits(base))
    # base weights keep their paths; adapters are the only additions
    assert _paths(lora, frozen_filter(lora=True)) == _paths(base)
    assert all(p[-1] in ("lora_a", "lora_b") for p in _paths(lora, LoRAParam))


def test_matches_numpy_merge():
    rank, alpha = 4, 8.0
    base = build_model(QWEN3, seed=1)
    lora = apply_lora(base, LoRAConfig(rank=rank, alpha=alpha), rngs=nnx.Rngs(0))
    _randomize(lora)
    by_hand = nnx.clone(base)
    for i in range(QWEN3.num_hidden_layers):
        for name in ALL:
            m = getattr(_parent(lora.layers[i], name), name)
            w = np.asarray(m.kernel[...], np.float64)
            a, b = np.asarray(m.lora_a[...], np.float64), np.asarray(m.lora_b[...])
            target = getattr(_parent(by_hand.layers[i], name), name)
            merged = w + alpha / rank * a @ b.astype(np.float64)
            target.kernel[...] = jnp.asarray(merged, jnp.float32)
    ours, ref = _logits(lora), _logits(by_hand)
    assert np.abs(ours - _logits(base)).max() > 1e-2  # the adapters matter
    assert np.abs(ours - ref).max() <= 1e-5


@pytest.mark.parametrize("cfg", [LLAMA, MOE], ids=["llama", "qwen3_moe"])
def test_merge_restores_base_tree(cfg):
    base = build_model(cfg, seed=1)
    lora = apply_lora(base, LoRAConfig(rank=2, alpha=4.0), rngs=nnx.Rngs(0))
    _randomize(lora)
    merged = merge_lora(lora)
    assert not has_lora(merged) and has_lora(lora)
    assert _paths(merged, ...) == _paths(base, ...)  # every variable, not only Params
    assert np.abs(_logits(merged) - _logits(lora)).max() <= 1e-5
    for layer in merged.layers:
        assert isinstance(layer.self_attn.q_proj, nnx.Linear)


def test_merged_export_loads_in_transformers(tmp_path):
    base = build_model(QWEN3, seed=3)
    lora = apply_lora(base, LoRAConfig(rank=4, alpha=16.0), rngs=nnx.Rngs(0))
    _randomize(lora, std=0.2)
    save_hf(merge_lora(lora), tmp_path / "merged")
    save_hf(lora, tmp_path / "auto")  # save_hf merges adapters itself
    for folder in ("merged", "auto"):
        hf = transformers.AutoModelForCausalLM.from_pretrained(
            tmp_path / folder, dtype=torch.float32
        ).eval()
        with torch.no_grad():
            theirs = hf(torch.tensor(np.asarray(TOKENS))).logits.numpy()
        assert np.abs(theirs - _logits(lora)).max() <= 1e-4
    assert has_lora(lora)  # the caller's model keeps its adapters


def test_only_adapters_are_trained():
    lora = apply_lora(build_model(LLAMA, seed=1), LoRAConfig(4, 8.0), rngs=nnx.Rngs(0))
    frozen_before = nnx.state(lora, frozen_filter(lora=True))
    wrt = trainable_filter(lora=True)
    opt = nnx.Optimizer(lora, optax.sgd(0.1), wrt=wrt)

    def loss_fn(model):
        return jnp.mean(model(TOKENS) ** 2)

    grads = nnx.jit(nnx.grad(loss_fn, argnums=nnx.DiffState(0, wrt)))(lora)
    grad_paths = {p for p, _ in nnx.to_flat_state(grads)}
    assert grad_paths == _paths(lora, LoRAParam)  # no gradient for any base weight
    assert _paths(lora, LoRAParam).isdisjoint(_paths(lora, frozen_filter(lora=True)))
    nnx.jit(lambda m, o, g: o.update(m, g))(lora, opt, grads)
    b = lora.layers[0].self_attn.q_proj.lora_b[...]
    assert np.abs(np.asarray(b)).max() > 0  # B moved off zero
    chex.assert_trees_all_equal(
        frozen_before, nnx.state(lora, frozen_filter(lora=True))
    )


def test_targets_and_counts():
    base = build_model(LLAMA, seed=1)
    lora = apply_lora(base, LoRAConfig(3, 3.0, ("q_proj", "v_proj")), rngs=nnx.Rngs(0))
    for layer in lora.layers:
        for name in ALL:
            kind = LoRALinear if name in ("q_proj", "v_proj") else nnx.Linear
            assert type(getattr(_parent(layer, name), name)) is kind, name
    d, q, kv = 32, 4 * 16, 2 * 16
    expect = LLAMA.num_hidden_layers * 3 * ((d + q) + (d + kv))
    assert lora_param_count(lora) == expect
    total = sum(x.size for x in nnx.to_flat_state(nnx.state(base, nnx.Param)).leaves)
    assert trainable_fraction(lora) == pytest.approx(expect / (total + expect))
    assert lora_param_count(base) == 0
    with pytest.raises(ValueError, match="unknown LoRA targets"):
        LoRAConfig(4, 8.0, ("q_proj", "qproj"))
    with pytest.raises(ValueError, match="already has"):
        apply_lora(lora, LoRAConfig(3, 3.0, ("q_proj",)), rngs=nnx.Rngs(0))


def test_moe_experts_untouched():
    lora = apply_lora(
        build_model(MOE, seed=1), LoRAConfig(2, 2.0, ALL[4:]), rngs=nnx.Rngs(0)
    )
    dense, sparse = lora.layers[0].mlp, lora.layers[1].mlp  # layer 0 is mlp-only
    assert isinstance(dense.up_proj, LoRALinear)
    assert isinstance(sparse.up_proj, nnx.Param)  # stacked experts [E, D, F]
    assert isinstance(sparse.gate, nnx.Linear)  # the router is never wrapped


def test_dropout_only_in_training():
    base = build_model(LLAMA, seed=1)
    lora = apply_lora(
        base, LoRAConfig(4, 8.0, dropout=0.5), rngs=nnx.Rngs(params=0, dropout=1)
    )
    _randomize(lora)
    assert not np.array_equal(_logits(lora), _logits(lora))  # fresh masks
    lora.eval()
    assert np.array_equal(_logits(lora), _logits(lora))
    merged = merge_lora(lora)
    assert _paths(merged, ...) == _paths(base, ...)  # rng state dropped too
    assert np.abs(_logits(merged) - _logits(lora)).max() <= 1e-5


HYBRID = tiny_hybrid(vocab_size=89)
# Qwen3.5 hybrid: (parent path inside a layer, projection names) that get adapters
HYBRID_SLOTS = {
    "linear_attention": [
        ("linear_attn", ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")),
        ("linear_attn", ("out_proj",)),
        ("mlp.shared_expert", ("gate_proj", "up_proj", "down_proj")),
    ],
    "full_attention": [
        ("self_attn", ("q_proj", "k_proj", "v_proj", "o_proj")),
        ("mlp.shared_expert", ("gate_proj", "up_proj", "down_proj")),
    ],
}


def _hybrid_slots(model):
    for i, kind in enumerate(HYBRID.layer_types):
        for parent, names in HYBRID_SLOTS[kind]:
            module = model.layers[i]
            for part in parent.split("."):
                module = getattr(module, part)
            for name in names:
                yield i, parent, name, module


def test_hybrid_deltanet_and_shared_expert_adapters(tmp_path):
    """Every DeltaNet, gated-attention and shared-expert projection is wrapped;
    the logits equal a NumPy merge of W + (alpha / r) A @ B, and the merged
    export loads in transformers' qwen3_5_moe with the same logits."""
    rank, alpha = 4, 8.0
    base = build_model(HYBRID, seed=1)
    lora = apply_lora(base, LoRAConfig(rank=rank, alpha=alpha), rngs=nnx.Rngs(0))
    assert np.array_equal(_logits(lora), _logits(base))  # B = 0: the base model
    _randomize(lora, std=0.2)
    by_hand = nnx.clone(base)
    slots = 0
    for (i, parent, name, m), (*_, target) in zip(
        _hybrid_slots(lora), _hybrid_slots(by_hand), strict=True
    ):
        m = getattr(m, name)
        assert isinstance(m, LoRALinear), (i, parent, name)
        w = np.asarray(m.kernel[...], np.float64)
        a, b = np.asarray(m.lora_a[...], np.float64), np.asarray(m.lora_b[...])
        merged = w + alpha / rank * a @ b.astype(np.float64)
        getattr(target, name).kernel[...] = jnp.asarray(merged, jnp.float32)
        slots += 1
    assert slots == sum(len(n) for k in HYBRID.layer_types for _, n in HYBRID_SLOTS[k])
    assert sum(isinstance(m, LoRALinear) for _, m in nnx.iter_modules(lora)) == slots
    ours = _logits(lora)
    assert np.abs(ours - _logits(base)).max() > 1e-2  # the adapters matter
    assert np.abs(ours - _logits(by_hand)).max() <= 1e-5
    save_hf(lora, tmp_path)  # merges the adapters
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, dtype=torch.float32
    )
    with torch.no_grad():
        theirs = hf.eval()(torch.tensor(np.asarray(TOKENS))).logits.numpy()
    assert np.abs(theirs - ours).max() <= 1e-4
