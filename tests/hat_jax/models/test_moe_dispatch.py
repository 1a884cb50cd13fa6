"""Top-k expert dispatch (`moe_impl="topk"`) against a per-token NumPy loop and
against the dense path: outputs and gradients, empty experts included."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.models import ModelConfig, build_model
from hat_jax.models.qwen3_moe import SparseMoeBlock
from tests.tiny_configs import tiny_hybrid

MOE = ModelConfig(
    model_type="qwen3_moe",
    vocab_size=71,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    num_experts=6,
    num_experts_per_tok=2,
    moe_intermediate_size=12,
)
HYBRID = tiny_hybrid(vocab_size=71, num_experts=8, num_experts_per_tok=3)


def _silu(x):
    return x / (1 + np.exp(-x))


@pytest.mark.parametrize("norm", [True, False])
def test_block_matches_a_per_token_loop(norm):
    cfg = MOE.replace(moe_impl="topk", norm_topk_prob=norm)
    block = SparseMoeBlock(cfg, rngs=nnx.Rngs(params=0))
    # expert 5 never wins (see x): one group of the ragged matmuls is empty
    block.gate.kernel[...] = block.gate.kernel[...].at[:, 5].set(-50.0)
    # positive inputs: expert 5's logit is -50 * sum(x) < 0, far below the rest
    x = np.abs(np.random.default_rng(1).normal(size=(3, 7, 16))).astype(np.float32)
    y, logits = block(jnp.asarray(x))
    wg, wu, wd = (
        np.asarray(p[...], np.float64)
        for p in (block.gate_proj, block.up_proj, block.down_proj)
    )
    flat = x.reshape(-1, 16).astype(np.float64)
    ref = np.zeros_like(flat)
    lg = np.asarray(logits, np.float64)
    for i, row in enumerate(flat):
        p = np.exp(lg[i] - lg[i].max())
        p /= p.sum()
        top = np.argsort(-p, kind="stable")[: cfg.num_experts_per_tok]
        w = p[top] / (p[top].sum() if norm else 1.0)
        for e, we in zip(top, w):
            ref[i] += we * ((_silu(row @ wg[e]) * (row @ wu[e])) @ wd[e])
    assert 5 not in np.argsort(-lg, axis=-1)[:, :2]
    np.testing.assert_allclose(np.asarray(y).reshape(-1, 16), ref, atol=1e-5)


def test_hybrid_block_with_shared_expert_equals_dense():
    """The Qwen3.5 block (routed experts + gated shared expert) either way."""
    from hat_jax.models.qwen3_5_moe import SparseMoeBlock as HybridBlock

    x = jnp.asarray(np.random.default_rng(2).normal(size=(2, 9, 32)), jnp.float32)
    outs = [
        HybridBlock(HYBRID.replace(moe_impl=impl), rngs=nnx.Rngs(params=0))(x)[0]
        for impl in ("dense", "topk")
    ]
    np.testing.assert_allclose(outs[1], outs[0], atol=1e-5)


def test_topk_equals_dense_logits_and_grads(cfg=MOE):
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 71, (2, 13)))
    out = {}
    for impl in ("dense", "topk"):
        model = build_model(cfg.replace(moe_impl=impl), seed=3)
        graphdef, params = nnx.split(model, nnx.Param)

        def loss(p, graphdef=graphdef):
            logits = nnx.merge(graphdef, p)(tokens)
            return jnp.mean(jax.nn.logsumexp(logits, -1) - logits[..., 0]), logits

        (_, logits), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
        out[impl] = (np.asarray(logits), jax.tree.map(np.asarray, grads))
    (ld, gd), (lt, gt) = out["dense"], out["topk"]
    np.testing.assert_allclose(lt, ld, atol=1e-5)
    chex.assert_trees_all_close(gt, gd, atol=1e-6, rtol=1e-7)  # rtol: np.testing's
    assert max(np.abs(b).max() for b in jax.tree.leaves(gd)) > 0


def test_unknown_impl_is_refused():
    with pytest.raises(ValueError, match="moe_impl"):
        build_model(MOE.replace(moe_impl="ragged"))


def test_moe_impl_reaches_a_loaded_model(tmp_path):
    """A stage starting from a saved model runs its experts as cfg.model says
    (config.json does not carry moe_impl), with the same logits."""
    import ml_collections

    from hat_jax.checkpoints.hf import save_hf
    from hat_jax.models.qwen3_moe import SparseMoeBlock as Block
    from hat_jax.train.build import make_model

    base = build_model(MOE, seed=2)
    save_hf(base, tmp_path)
    cfg = ml_collections.ConfigDict(
        {"init_from": str(tmp_path), "seed": 0, "model": {"moe_impl": "topk"}}
    )
    model, mcfg = make_model(cfg)
    assert mcfg.moe_impl == model.config.moe_impl == "topk"
    blocks = [m for _, m in nnx.iter_modules(model) if isinstance(m, Block)]
    assert blocks and all(b.impl == "topk" for b in blocks)
    tokens = jnp.asarray(np.random.default_rng(4).integers(0, 71, (2, 7)))
    np.testing.assert_allclose(model(tokens), base(tokens), atol=1e-5)
