"""The model's own forward on packed examples (training) equals each one alone.

Reference: transformers' logits of every example run by itself; the packed row
holds three examples and padding, through `CausalLM.forward(segment_ids=...)`,
with and without `remat` (values and gradients).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.checkpoints.hf import load_hf
from tests.hat_jax.models.hf_reference import hf_logits, make_hf

DOCS = [[5, 17, 3, 9, 40], [8, 1, 44, 2, 71, 6, 12], [60, 61, 62]]
PAD = 3  # padding positions (segment 0) at the end of the row


def _packed_row():
    tokens = sum(DOCS, []) + [0] * PAD
    seg = sum(([i + 1] * len(d) for i, d in enumerate(DOCS)), []) + [0] * PAD
    pos = sum((list(range(len(d))) for d in DOCS), []) + list(range(PAD))
    return (jnp.asarray([x]) for x in (tokens, pos, seg))


@pytest.mark.parametrize("family", ["llama", "qwen3", "qwen3_moe"])
def test_packed_forward_equals_transformers_per_example(tmp_path, family):
    hf = make_hf(family, heads=4, kv_heads=2)
    hf.save_pretrained(tmp_path)
    model, _ = load_hf(tmp_path)
    tokens, pos, seg = _packed_row()
    out = nnx.jit(lambda m, t, p, s: m.forward(t, p, segment_ids=s))(
        model, tokens, pos, seg
    )
    packed = np.asarray(out.logits)[0]
    start = 0
    for d in DOCS:
        ref = hf_logits(hf, np.asarray([d]))[0]
        np.testing.assert_allclose(packed[start : start + len(d)], ref, atol=1e-4)
        start += len(d)
    if family == "qwen3_moe":  # one router output per MoE layer, every token
        assert [r.shape for r in out.router_logits] == [(len(packed), 4)]


def test_remat_changes_neither_values_nor_gradients(tmp_path):
    hf = make_hf("qwen3_moe", heads=4, kv_heads=2)
    hf.save_pretrained(tmp_path)
    model, _ = load_hf(tmp_path)
    tokens, pos, seg = _packed_row()
    graphdef, params = nnx.split(model)

    def loss(params, remat):
        m = nnx.merge(graphdef, params)
        h, _, routers = m.hidden_states(tokens, pos, segment_ids=seg, remat=remat)
        return jnp.sum(jnp.sin(h)) + jnp.sum(routers[0] ** 2)

    plain = jax.jit(jax.value_and_grad(lambda p: loss(p, False)))(params)
    remat = jax.jit(jax.value_and_grad(lambda p: loss(p, True)))(params)
    np.testing.assert_allclose(float(remat[0]), float(plain[0]), rtol=1e-6)
    for a, b in zip(jax.tree.leaves(remat[1]), jax.tree.leaves(plain[1]), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)


def test_segment_ids_refuse_a_cache(tmp_path):
    hf = make_hf("qwen3", heads=4, kv_heads=2)
    hf.save_pretrained(tmp_path)
    model, _ = load_hf(tmp_path)
    tokens, pos, seg = _packed_row()
    with pytest.raises(ValueError, match="cache"):
        model.hidden_states(tokens, pos, cache=model.init_cache(1, 32), segment_ids=seg)
