"""The fused whole-sequence attention equals the plain einsum attention.

The plain `dot_product_attention` is the one checked against transformers in
test_parity.py (through the cache path); here the fused kernel and its hand-written
VJP are compared with it and with `jax.grad` of a NumPy-free float64 recomputation.
"""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.models.attention_ops import fused_attention
from hat_jax.models.layers import dot_product_attention


def _inputs(n, kv, dtype, t=23, h=8, seed=0):
    ks = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = jax.random.normal(ks[0], (2, t, n, h), jnp.float32).astype(dtype)
    k = jax.random.normal(ks[1], (2, t, kv, h), jnp.float32).astype(dtype)
    v = jax.random.normal(ks[2], (2, t, kv, h), jnp.float32).astype(dtype)
    # row 0: two packed documents; row 1: one document then padding (segment 0)
    a, b = t * 3 // 5, t * 3 // 4
    seg = np.array([[1] * a + [2] * (t - a), [1] * b + [0] * (t - b)])
    idx = np.arange(t)
    allowed = (idx[None, :] <= idx[:, None])[None] & (seg[:, :, None] == seg[:, None])
    return q, k, v, jnp.asarray(allowed)


def _loss(fn, allowed, w):
    return lambda q, k, v: jnp.sum(w * fn(q, k, v, allowed).astype(jnp.float32))


@pytest.mark.parametrize(
    "n,kv,block", [(4, 4, 0), (4, 2, 0), (6, 2, 0), (3, 1, 0), (4, 2, 5), (6, 2, 8)]
)
def test_fused_equals_plain_fp32(n, kv, block):
    q, k, v, allowed = _inputs(n, kv, jnp.float32)
    fused = functools.partial(fused_attention, q_block=block)
    w = jax.random.normal(jax.random.PRNGKey(9), q.shape)
    np.testing.assert_allclose(
        fused(q, k, v, allowed),
        dot_product_attention(q, k, v, allowed),
        atol=1e-6,
    )
    g_fused = jax.grad(_loss(fused, allowed, w), argnums=(0, 1, 2))(q, k, v)
    g_plain = jax.grad(_loss(dot_product_attention, allowed, w), argnums=(0, 1, 2))(
        q, k, v
    )
    chex.assert_trees_all_close(g_fused, g_plain, atol=1e-5, rtol=1e-7)


def test_fused_gradients_match_float64_recomputation():
    # An independent float64 attention (no shared code), differentiated by JAX.
    q, k, v, allowed = _inputs(6, 2, jnp.float32, t=11, seed=3)
    w = np.random.default_rng(1).normal(size=q.shape)

    def ref(q, k, v):
        g = q.shape[2] // k.shape[2]
        kk, vv = jnp.repeat(k, g, axis=2), jnp.repeat(v, g, axis=2)
        s = jnp.einsum("btnh,bsnh->bnts", q, kk) / np.sqrt(q.shape[-1])
        s = jnp.where(allowed[:, None], s, -jnp.inf)
        o = jnp.einsum("bnts,bsnh->btnh", jax.nn.softmax(s, axis=-1), vv)
        return jnp.sum(w * o)

    with jax.enable_x64(True):
        q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
        g_ref = jax.grad(ref, argnums=(0, 1, 2))(q64, k64, v64)
    g = jax.grad(
        _loss(fused_attention, allowed, jnp.asarray(w, jnp.float32)), (0, 1, 2)
    )
    chex.assert_trees_all_close(g(q, k, v), g_ref, atol=2e-5, rtol=1e-7)


def test_fused_bf16_close_to_fp32():
    q, k, v, allowed = _inputs(4, 2, jnp.bfloat16)
    out = fused_attention(q, k, v, allowed)
    chex.assert_type(out, jnp.bfloat16)
    chex.assert_equal_shape([out, q])
    f32 = [x.astype(jnp.float32) for x in (q, k, v)]
    ref = dot_product_attention(*f32, allowed)
    np.testing.assert_allclose(out.astype(jnp.float32), ref, atol=3e-2)
    w = jnp.ones(q.shape, jnp.float32)
    g16 = jax.grad(_loss(fused_attention, allowed, w), argnums=(0, 1, 2))(q, k, v)
    g32 = jax.grad(_loss(fused_attention, allowed, w), argnums=(0, 1, 2))(*f32)
    chex.assert_type(g16, jnp.bfloat16)
    chex.assert_trees_all_equal_shapes(g16, g32)
    for a, b in zip(g16, g32, strict=True):
        scale = float(jnp.abs(b).max())
        np.testing.assert_allclose(a.astype(jnp.float32), b, atol=2e-2 * scale)


@pytest.mark.parametrize("block", [0, 4, 7])
def test_blocks_over_a_cache_see_every_slot(block):
    """`causal=False`: queries at positions 9..18 (a suffix after a cached prefix
    of 9) over 24 slots; every block scores all slots, the mask decides."""
    ks = jax.random.split(jax.random.PRNGKey(1), 3)
    t, s = 10, 24
    q = jax.random.normal(ks[0], (2, t, 4, 8))
    k = jax.random.normal(ks[1], (2, s, 2, 8))
    v = jax.random.normal(ks[2], (2, s, 2, 8))
    positions = 9 + jnp.arange(t)[None]
    allowed = jnp.broadcast_to(
        jnp.arange(s)[None, None] <= positions[..., None], (2, t, s)
    )
    want = dot_product_attention(q, k, v, allowed)
    got = fused_attention(q, k, v, allowed, q_block=block, causal=False)
    chex.assert_trees_all_close(got, want, atol=1e-5, rtol=1e-5)
