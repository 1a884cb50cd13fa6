"""Divergences against a float64 NumPy reference, finite differences and limits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.losses import divergence_names, get_divergence

B, T, V = 2, 5, 37
NAMES = ["reverse_kl", "forward_kl", "jsd(0.5)", "jsd(beta=0.2)"]


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _np_per_token(name, s, t):
    """Brute force in float64, one position at a time."""
    out = np.zeros(s.shape[:-1])
    for b in range(s.shape[0]):
        for i in range(s.shape[1]):
            ps = np.exp(_log_softmax(s[b, i]))
            pt = np.exp(_log_softmax(t[b, i]))
            if name == "reverse_kl":
                val = sum(ps[v] * np.log(ps[v] / pt[v]) for v in range(len(ps)))
            elif name == "forward_kl":
                val = sum(pt[v] * np.log(pt[v] / ps[v]) for v in range(len(ps)))
            else:
                beta = 0.5 if name == "jsd(0.5)" else 0.2
                m = beta * pt + (1 - beta) * ps
                val = beta * np.sum(pt * np.log(pt / m)) + (1 - beta) * np.sum(
                    ps * np.log(ps / m)
                )
            out[b, i] = val
    return out


def _np_loss(name, s, t, mask, top_k=None):
    if top_k is not None:
        chooser = s if name == "reverse_kl" else t
        idx = np.argsort(-chooser, axis=-1, kind="stable")[..., :top_k]
        s = np.take_along_axis(s, idx, -1)
        t = np.take_along_axis(t, idx, -1)
    per = _np_per_token(name, s, t)
    return (per * mask).sum() / mask.sum()


def _data(seed, scale=3.0):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(B, T, V)) * scale
    t = rng.normal(size=(B, T, V)) * scale
    mask = rng.random((B, T)) < 0.7
    mask[0, 0] = True
    return s, t, mask


def test_registry_names():
    assert {"reverse_kl", "forward_kl", "jsd"} <= set(divergence_names())
    with pytest.raises(ValueError, match="needs parameters"):
        get_divergence("jsd")
    with pytest.raises(ValueError, match="unknown"):
        get_divergence("kl")


@pytest.mark.parametrize("name", NAMES)
def test_zero_for_identical_logits(name):
    s, _, mask = _data(0)
    s = jnp.asarray(s, jnp.float32)
    for top_k in (None, 5):
        loss, metrics = get_divergence(name)(
            student_logits=s, teacher_logits=s, mask=mask, top_k=top_k
        )
        assert abs(float(loss)) <= 1e-6
        assert float(metrics["n_tokens"]) == mask.sum()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("top_k", [None, 4])
def test_matches_numpy(name, top_k):
    s, t, mask = _data(1)
    loss, metrics = get_divergence(name)(
        student_logits=jnp.asarray(s, jnp.float32),
        teacher_logits=jnp.asarray(t, jnp.float32),
        mask=jnp.asarray(mask),
        top_k=top_k,
    )
    ref = _np_loss(name, s, t, mask, top_k)
    assert ref > 0.01
    np.testing.assert_allclose(float(loss), ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(float(metrics["divergence"]), ref, atol=1e-5)


def test_bf16_logits_compute_in_float32():
    s, t, mask = _data(2)
    loss, _ = get_divergence("reverse_kl")(
        student_logits=jnp.asarray(s, jnp.bfloat16),
        teacher_logits=jnp.asarray(t, jnp.bfloat16),
        mask=mask,
    )
    assert loss.dtype == jnp.float32
    s16 = np.asarray(jnp.asarray(s, jnp.bfloat16), np.float64)
    t16 = np.asarray(jnp.asarray(t, jnp.bfloat16), np.float64)
    np.testing.assert_allclose(
        float(loss), _np_loss("reverse_kl", s16, t16, mask), atol=1e-5
    )


def test_jsd_symmetric_at_half_and_bounded():
    s, t, mask = _data(3)
    fn = get_divergence("jsd(0.5)")
    a, _ = fn(student_logits=s, teacher_logits=t, mask=mask)
    b, _ = fn(student_logits=t, teacher_logits=s, mask=mask)
    np.testing.assert_allclose(float(a), float(b), atol=1e-6)
    assert 0 < float(a) <= np.log(2)
    # asymmetric away from 0.5: swapping roles maps beta -> 1 - beta
    c, _ = get_divergence("jsd(0.2)")(student_logits=s, teacher_logits=t, mask=mask)
    d, _ = get_divergence("jsd(0.8)")(student_logits=t, teacher_logits=s, mask=mask)
    np.testing.assert_allclose(float(c), float(d), atol=1e-6)


def test_jsd_limits_are_scaled_kls():
    s, t, mask = _data(4, scale=1.0)
    kw = dict(student_logits=s, teacher_logits=t, mask=mask)
    fwd, _ = get_divergence("forward_kl")(**kw)
    rev, _ = get_divergence("reverse_kl")(**kw)
    small = 1e-3
    lo, _ = get_divergence(f"jsd({small})")(**kw)
    hi, _ = get_divergence(f"jsd({1 - small})")(**kw)
    np.testing.assert_allclose(float(lo) / small, float(fwd), rtol=0.02)
    np.testing.assert_allclose(float(hi) / small, float(rev), rtol=0.02)
    for beta in ("0", "1", "1.5"):
        with pytest.raises(ValueError, match="0 < beta < 1"):
            get_divergence(f"jsd({beta})")(**kw)


def test_masked_positions_do_not_contribute():
    s, t, mask = _data(5)
    fn = get_divergence("reverse_kl")
    s2 = s.copy()
    s2[~mask] += np.random.default_rng(0).normal(size=s2[~mask].shape) * 5
    a, _ = fn(student_logits=s, teacher_logits=t, mask=mask)
    b, _ = fn(student_logits=s2, teacher_logits=t, mask=mask)
    assert float(a) == float(b)
    g = jax.grad(lambda x: fn(student_logits=x, teacher_logits=t, mask=mask)[0])(
        jnp.asarray(s, jnp.float32)
    )
    assert np.all(np.asarray(g)[~mask] == 0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("top_k", [None, 6])
def test_gradient_matches_finite_differences(name, top_k):
    s, t, mask = _data(6, scale=1.5)
    s, t = s[:, :3, :9], t[:, :3, :9]
    mask = mask[:, :3]
    with jax.enable_x64(True):
        fn = get_divergence(name)

        @jax.jit
        def f(x):
            return fn(student_logits=x, teacher_logits=t, mask=mask, top_k=top_k)[0]

        x = jnp.asarray(s, jnp.float64)
        grad = np.asarray(jax.grad(f)(x))
        assert grad.dtype == np.float64
        h = 1e-6
        fd = np.zeros_like(s)
        for i in np.ndindex(s.shape):
            e = np.zeros_like(s)
            e[i] = h
            # top-k support is fixed by the (gap-separated) ranking; h cannot flip it
            fd[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    np.testing.assert_allclose(grad, fd, atol=1e-8, rtol=1e-6)
    assert np.abs(grad).max() > 1e-3
