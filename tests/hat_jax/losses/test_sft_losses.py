"""Token log-probs, masked cross-entropy and the MTP shift against NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hat_jax.losses import cross_entropy, mtp_loss, token_logprobs

B, T, V = 3, 7, 29


def _np_logprobs(logits, targets):
    out = np.zeros(targets.shape)
    for b in range(targets.shape[0]):
        for t in range(targets.shape[1]):
            x = logits[b, t].astype(np.float64)
            lse = x.max() + np.log(np.exp(x - x.max()).sum())
            out[b, t] = x[targets[b, t]] - lse
    return out


def _data(seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(B, T, V)) * 4
    targets = rng.integers(0, V, size=(B, T))
    mask = rng.random((B, T)) < 0.6
    mask[0, 0] = True
    return logits, targets, mask


def test_token_logprobs_matches_numpy():
    logits, targets, _ = _data(0)
    got = token_logprobs(logits=jnp.asarray(logits, jnp.float32), targets=targets)
    assert got.shape == (B, T) and got.dtype == jnp.float32
    np.testing.assert_allclose(got, _np_logprobs(logits, targets), atol=1e-5)


def test_token_logprobs_bf16_in_float32():
    logits, targets, _ = _data(1)
    x16 = jnp.asarray(logits, jnp.bfloat16)
    got = token_logprobs(logits=x16, targets=targets)
    assert got.dtype == jnp.float32
    ref = _np_logprobs(np.asarray(x16, np.float64), targets)
    np.testing.assert_allclose(got, ref, atol=1e-5)


@pytest.mark.parametrize("z_loss", [0.0, 1e-3])
def test_cross_entropy_matches_numpy(z_loss):
    logits, targets, mask = _data(2)
    loss, m = cross_entropy(
        logits=jnp.asarray(logits, jnp.float32),
        targets=targets,
        mask=mask,
        z_loss=z_loss,
    )
    lp = _np_logprobs(logits, targets)
    ce = -(lp * mask).sum() / mask.sum()
    lse = np.log(np.exp(logits).sum(-1))
    z = (lse**2 * mask).sum() / mask.sum()
    acc = ((logits.argmax(-1) == targets) * mask).sum() / mask.sum()
    np.testing.assert_allclose(float(loss), ce + z_loss * z, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(float(m["ce"]), ce, atol=1e-5)
    np.testing.assert_allclose(float(m["accuracy"]), acc, atol=1e-6)
    assert float(m["n_tokens"]) == mask.sum()


def test_cross_entropy_accuracy_and_empty_mask():
    logits = np.full((1, 3, 4), -5.0)
    targets = np.array([[0, 1, 2]])
    logits[0, 0, 0] = logits[0, 1, 1] = logits[0, 2, 3] = 5.0  # last one is wrong
    _, m = cross_entropy(logits=logits, targets=targets, mask=np.ones((1, 3), bool))
    np.testing.assert_allclose(float(m["accuracy"]), 2 / 3, atol=1e-6)
    loss, m = cross_entropy(logits=logits, targets=targets, mask=np.zeros((1, 3)))
    assert float(loss) == 0.0 and float(m["n_tokens"]) == 0


def test_masked_tokens_do_not_contribute():
    logits, targets, mask = _data(3)
    other = logits.copy()
    other[~mask] = np.random.default_rng(9).normal(size=other[~mask].shape) * 10

    def f(x):
        return cross_entropy(logits=x, targets=targets, mask=mask, z_loss=1e-2)[0]

    a, ga = jax.value_and_grad(f)(jnp.asarray(logits, jnp.float32))
    b, gb = jax.value_and_grad(f)(jnp.asarray(other, jnp.float32))
    assert float(a) == float(b)
    np.testing.assert_array_equal(ga, gb)
    assert np.all(np.asarray(ga)[~mask] == 0)


def test_mtp_predicts_two_ahead():
    rng = np.random.default_rng(4)
    tokens = rng.integers(0, V, size=(B, T))
    mask = rng.random((B, T)) < 0.8
    logits = rng.normal(size=(B, T, V))
    loss, m = mtp_loss(
        mtp_logits=jnp.asarray(logits, jnp.float32), tokens=tokens, mask=mask
    )
    # brute force: position t is scored against tokens[t + 2] with weight mask[t + 2]
    num = den = 0.0
    for b in range(B):
        for t in range(T - 2):
            if mask[b, t + 2]:
                num -= _np_logprobs(
                    logits[b : b + 1, t : t + 1], tokens[b, t + 2, None, None]
                )[0, 0]
                den += 1
    np.testing.assert_allclose(float(loss), num / den, atol=1e-5)
    assert float(m["mtp/n_tokens"]) == den


def test_mtp_perfect_head_and_tail_ignored():
    tokens = np.array([[3, 1, 4, 1, 5, 9]])
    mask = np.ones_like(tokens, bool)
    logits = np.full((1, 6, 10), -20.0)
    for t in range(4):
        logits[0, t, tokens[0, t + 2]] = 20.0  # a perfect two-ahead predictor
    logits[0, 4:] = np.random.default_rng(0).normal(size=(2, 10))  # tail: no target
    loss, m = mtp_loss(mtp_logits=logits, tokens=tokens, mask=mask)
    assert float(loss) < 1e-6
    assert float(m["mtp/accuracy"]) == 1.0 and float(m["mtp/n_tokens"]) == 4
    # a one-ahead predictor is wrong under the MTP shift
    wrong = np.full((1, 6, 10), -20.0)
    for t in range(5):
        wrong[0, t, tokens[0, t + 1]] = 20.0
    _, m = mtp_loss(mtp_logits=wrong, tokens=tokens, mask=mask)
    assert float(m["mtp/accuracy"]) < 0.5
