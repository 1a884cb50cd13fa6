"""Chunked cross-entropy equals the full-logits one and a NumPy recomputation."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.losses.chunked import chunked_cross_entropy
from hat_jax.losses.sft import cross_entropy


def _data(b=3, t=13, d=8, v=50, seed=0):
    rng = np.random.default_rng(seed)
    h = jnp.asarray(rng.normal(size=(b, t, d)), jnp.float32)
    e = jnp.asarray(rng.normal(size=(v, d)), jnp.float32)
    tg = jnp.asarray(rng.integers(0, v, size=(b, t)), jnp.int32)
    mask = jnp.asarray(rng.random((b, t)) > 0.3)
    return h, e, tg, mask


@pytest.mark.parametrize("chunk", [1, 7, 16, 39, 1000])
def test_chunked_equals_full_values_and_grads(chunk):
    h, e, tg, mask = _data()

    def full(h, e):
        return cross_entropy(logits=h @ e.T, targets=tg, mask=mask, z_loss=0.1)

    def chunked(h, e):
        return chunked_cross_entropy(
            hidden=h,
            head=lambda x: x @ e.T,
            targets=tg,
            mask=mask,
            chunk=chunk,
            z_loss=0.1,
        )

    (l1, m1), (l2, m2) = full(h, e), chunked(h, e)
    np.testing.assert_allclose(l1, l2, rtol=1e-6)
    for key in ("ce", "z_loss", "accuracy", "n_tokens"):
        np.testing.assert_allclose(m1[key], m2[key], rtol=1e-6)
    g1 = jax.grad(lambda h, e: full(h, e)[0], argnums=(0, 1))(h, e)
    g2 = jax.grad(lambda h, e: chunked(h, e)[0], argnums=(0, 1))(h, e)
    chex.assert_trees_all_close(g1, g2, atol=1e-6, rtol=1e-7)  # rtol: np.testing's


def test_chunked_matches_numpy():
    h, e, tg, mask = _data(seed=4)
    loss, m = chunked_cross_entropy(
        hidden=h, head=lambda x: x @ e.T, targets=tg, mask=mask, chunk=5
    )
    logits = np.asarray(h, np.float64) @ np.asarray(e, np.float64).T
    lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
    lse += logits.max(-1)
    nll = lse - np.take_along_axis(logits, np.asarray(tg)[..., None], -1)[..., 0]
    w = np.asarray(mask, np.float64)
    np.testing.assert_allclose(loss, (nll * w).sum() / w.sum(), rtol=1e-5)
    acc = ((logits.argmax(-1) == np.asarray(tg)) * w).sum() / w.sum()
    np.testing.assert_allclose(m["accuracy"], acc, rtol=1e-6)


def test_empty_mask_gives_zero_not_nan():
    h, e, tg, mask = _data()
    loss, m = chunked_cross_entropy(
        hidden=h, head=lambda x: x @ e.T, targets=tg, mask=jnp.zeros_like(mask)
    )
    assert float(loss) == 0.0 and float(m["n_tokens"]) == 0.0


@pytest.mark.parametrize("rows", [10, 30, 38])
@pytest.mark.parametrize("chunk", [4, 1000])
def test_gathered_rows_equal_full_values_and_grads(rows, chunk):
    """`rows` >= the counted positions (25 of 39): only they meet the head; fewer
    (10): the full path. Either way the full CE's values and gradients, also with
    weighted (not 0/1) masks."""
    h, e, tg, mask = _data()
    weights = mask * jnp.asarray(np.random.default_rng(1).uniform(0.5, 2, mask.shape))
    assert int(jnp.count_nonzero(mask)) == 25

    def full(h, e):
        return cross_entropy(logits=h @ e.T, targets=tg, mask=weights, z_loss=0.1)

    @jax.jit
    def gathered(h, e):
        return chunked_cross_entropy(
            hidden=h,
            head=lambda x: x @ e.T,
            targets=tg,
            mask=weights,
            chunk=chunk,
            z_loss=0.1,
            rows=rows,
        )

    (l1, m1), (l2, m2) = full(h, e), gathered(h, e)
    np.testing.assert_allclose(l1, l2, rtol=1e-6)
    for key in ("ce", "z_loss", "accuracy", "n_tokens"):
        np.testing.assert_allclose(m1[key], m2[key], rtol=1e-6)
    g1 = jax.grad(lambda h, e: full(h, e)[0], argnums=(0, 1))(h, e)
    g2 = jax.grad(lambda h, e: gathered(h, e)[0], argnums=(0, 1))(h, e)
    chex.assert_trees_all_close(g1, g2, atol=1e-6, rtol=1e-7)
    # untrained positions get no gradient on either path
    assert float(jnp.abs(jnp.where(mask[..., None], 0.0, g2[0])).max()) == 0.0
