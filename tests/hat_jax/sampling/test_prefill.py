"""`prefill=True` (fused attention over the prompt's own keys) against the plain
cached path (attention over every cache slot): same hidden states, same cache."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.models import build_model
from tests.tiny_configs import tiny_dense, tiny_hybrid

DENSE = tiny_dense()
HYBRID = tiny_hybrid()


@functools.partial(nnx.jit, static_argnames="prefill")
def _hidden(model, tokens, positions=None, mask=None, cache=None, prefill=False):
    """`model.hidden_states`, jitted (eager, the hybrid compiles op by op)."""
    return model.hidden_states(tokens, positions, mask, cache=cache, prefill=prefill)


@pytest.mark.parametrize("cfg", [DENSE, HYBRID], ids=["qwen3", "qwen3_5_moe"])
def test_prefill_flag_equals_attention_over_cache_slots(cfg):
    model = build_model(cfg, seed=1)
    lengths = np.array([9, 3, 16])
    b, p, slots = len(lengths), 16, 40
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(1, 100, (b, p)), jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(p, dtype=jnp.int32), (b, p))
    mask = positions < lengths[:, None]
    outs = []
    for prefill in (False, True):
        h, cache, _ = _hidden(
            model, tokens, positions, mask, model.init_cache(b, slots), prefill=prefill
        )
        outs.append((h, cache))
    (h0, c0), (h1, c1) = outs
    for i, n in enumerate(lengths):  # real tokens only: padding rows may differ
        np.testing.assert_allclose(h1[i, :n], h0[i, :n], atol=2e-5, rtol=1e-5)
    for a, b_ in zip(jax.tree.leaves(c0), jax.tree.leaves(c1), strict=True):
        if a.ndim == 4 and a.shape[1] == slots:  # KV [B, S, K, H]: real slots
            for i, n in enumerate(lengths):
                np.testing.assert_allclose(b_[i, :n], a[i, :n], atol=2e-5, rtol=1e-5)
        else:  # DeltaNet state (padded steps are skipped in both)
            np.testing.assert_allclose(b_, a, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("cfg", [DENSE, HYBRID], ids=["qwen3", "qwen3_5_moe"])
def test_a_call_as_long_as_the_cache_continues_it(cfg):
    """A cached prefix of 4 tokens, then a right-padded call of T = S = 16 tokens
    (8 real) at positions 4..19: attention must read the cache's slots, not only
    this call's keys (it did not when T equalled the slots)."""
    model = build_model(cfg, seed=2)
    slots, n, real = 16, 4, 8
    seq = jnp.asarray(np.random.default_rng(1).integers(1, 100, (1, n + real)))
    cache = model.init_cache(1, slots)
    _, cache, _ = _hidden(model, seq[:, :n], cache=cache, prefill=True)
    rest = jnp.zeros((1, slots), jnp.int32).at[:, :real].set(seq[:, n:])
    positions = n + jnp.arange(slots, dtype=jnp.int32)[None]
    mask = jnp.arange(slots)[None] < real
    h, _, _ = _hidden(model, rest, positions, mask, cache)
    full, _, _ = _hidden(model, seq)
    np.testing.assert_allclose(h[0, :real], full[0, n:], atol=2e-5, rtol=1e-5)
