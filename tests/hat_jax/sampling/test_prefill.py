"""`prefill=True` (fused attention over the prompt's own keys) against the plain
cached path (attention over every cache slot): same hidden states, same cache."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.models import ModelConfig, build_model
from tests.tiny_configs import tiny_hybrid

DENSE = ModelConfig(
    model_type="qwen3",
    vocab_size=101,
    hidden_size=48,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=6,
    num_key_value_heads=2,
    head_dim=16,
)
HYBRID = tiny_hybrid()


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
        h, cache, _ = model.hidden_states(
            tokens, positions, mask, cache=model.init_cache(b, slots), prefill=prefill
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
