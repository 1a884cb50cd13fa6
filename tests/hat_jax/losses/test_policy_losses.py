"""GRPO-family pieces against brute-force NumPy references and hand cases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hat_jax.losses import (
    advantage_names,
    get_advantage,
    get_kl_estimator,
    get_ratio,
    kl_penalty,
    length_penalty,
    parse_name,
    policy_loss,
    segment_advantages,
    segment_masks,
)

N, G, R, T = 3, 5, 4, 6
EPS = 1e-6


def _np_group_norm(x, scale=True):
    out = np.zeros_like(x, dtype=np.float64)
    for n in range(x.shape[0]):
        group = [float(v) for v in x[n]]
        mean = sum(group) / len(group)
        std = (sum((v - mean) ** 2 for v in group) / len(group)) ** 0.5
        for g, v in enumerate(group):
            out[n, g] = (v - mean) / (std + EPS) if scale else v - mean
    return out


def _rewards(seed):
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(N, G, R)) * np.array([1.0, 10.0, 0.1, 3.0])
    r[:, :, 0] = rng.integers(0, 2, size=(N, G))  # a binary reward, like accuracy
    r[0, :, 2] = 0.5  # a constant component in one group
    return r.astype(np.float32), rng.random(R).astype(np.float32)


def test_registries_and_names():
    assert {"grpo", "dr_grpo", "gdpo"} <= set(advantage_names())
    with pytest.raises(ValueError, match="positional argument after keyword"):
        parse_name("gdpo(renorm=group, 2)")
    assert parse_name("jsd(0.5)") == ("jsd", (0.5,), {})
    assert parse_name("gdpo(renorm=none)") == ("gdpo", (), {"renorm": None})
    with pytest.raises(ValueError, match="bad parameter"):
        get_advantage("grpo(eps=1)")  # eps is passed by the caller, not the name
    with pytest.raises(ValueError, match="unknown"):
        get_ratio("tokens")


@pytest.mark.parametrize("seed", [0, 1])
def test_grpo_matches_numpy(seed):
    r, w = _rewards(seed)
    scalar = r[..., 1]
    np.testing.assert_allclose(
        get_advantage("grpo")(scalar), _np_group_norm(scalar), atol=1e-5
    )
    np.testing.assert_allclose(
        get_advantage("dr_grpo")(scalar),
        _np_group_norm(scalar, scale=False),
        atol=1e-5,
    )
    summed = np.einsum("ngr,r->ng", r.astype(np.float64), w)
    np.testing.assert_allclose(
        get_advantage("grpo")(r, weights=w), _np_group_norm(summed), atol=1e-4
    )
    # identical rewards in a group -> advantage 0
    same = np.ones((2, G), np.float32)
    assert np.all(np.asarray(get_advantage("grpo")(same)) == 0)


@pytest.mark.parametrize("renorm", ["batch", "group", "none"])
def test_gdpo_matches_numpy(renorm):
    r, w = _rewards(2)
    got = get_advantage(f"gdpo(renorm={renorm})")(r, weights=w)
    ref = np.zeros((N, G))
    for k in range(R):  # each reward normalised within its group, then weighted
        ref += w[k] * _np_group_norm(r[:, :, k])
    if renorm == "batch":
        flat = ref.reshape(-1)
        ref = (ref - flat.mean()) / (flat.std() + EPS)
    elif renorm == "group":
        ref = _np_group_norm(ref)
    assert got.shape == (N, G)
    np.testing.assert_allclose(got, ref, atol=1e-4)


def test_gdpo_differs_from_grpo_on_mixed_scales():
    # GRPO on the sum lets the large-range reward dominate; GDPO does not
    r, _ = _rewards(3)
    a = np.asarray(get_advantage("gdpo(renorm=none)")(r))
    b = np.asarray(get_advantage("grpo")(r))
    assert np.abs(a - b).max() > 0.1


def _np_seq_ratio(logp, old, mask):
    out = np.ones_like(logp, dtype=np.float64)
    for b in range(logp.shape[0]):
        idx = [t for t in range(logp.shape[1]) if mask[b, t]]
        if idx:
            mean = sum(float(logp[b, t] - old[b, t]) for t in idx) / len(idx)
            out[b, :] = np.exp(mean)
    return out


def _policy_data(seed):
    rng = np.random.default_rng(seed)
    old = -rng.random((N * G, T)).astype(np.float32) * 3
    logp = (old + rng.normal(size=old.shape) * 0.3).astype(np.float32)
    mask = rng.random(old.shape) < 0.7
    mask[-1] = False  # a sequence with no trained token
    adv = rng.normal(size=old.shape).astype(np.float32)
    return logp, old, adv, mask


def test_ratios_match_numpy():
    logp, old, _, mask = _policy_data(0)
    got = get_ratio("sequence")(logp=logp, old_logp=old, mask=mask)
    np.testing.assert_allclose(got, _np_seq_ratio(logp, old, mask), rtol=1e-5)
    tok = get_ratio("token")(logp=logp, old_logp=old, mask=mask)
    np.testing.assert_allclose(tok, np.exp(logp - old), rtol=1e-5)


def _np_policy_loss(logp, old, adv, mask, rho, lo, hi, aggregation):
    per = np.zeros_like(logp, dtype=np.float64)
    for b, t in np.ndindex(logp.shape):
        r = rho[b, t]
        per[b, t] = -min(r * adv[b, t], min(max(r, 1 - lo), 1 + hi) * adv[b, t])
    if aggregation == "token-mean":
        return (per * mask).sum() / mask.sum()
    seqs = [
        (per[b] * mask[b]).sum() / mask[b].sum()
        for b in range(len(per))
        if mask[b].any()
    ]
    return sum(seqs) / len(seqs)


@pytest.mark.parametrize("ratio", ["token", "sequence"])
@pytest.mark.parametrize("aggregation", ["token-mean", "seq-mean-token-mean"])
def test_policy_loss_matches_numpy(ratio, aggregation):
    logp, old, adv, mask = _policy_data(1)
    loss, m = policy_loss(
        logp=logp,
        old_logp=old,
        advantages=adv,
        mask=mask,
        clip_eps=0.1,
        clip_eps_high=0.15,
        ratio=ratio,
        aggregation=aggregation,
    )
    rho = np.exp(logp - old) if ratio == "token" else _np_seq_ratio(logp, old, mask)
    ref = _np_policy_loss(logp, old, adv, mask, rho, 0.1, 0.15, aggregation)
    np.testing.assert_allclose(float(loss), ref, atol=1e-5)
    np.testing.assert_allclose(float(m["ratio_mean"]), rho[mask].mean(), atol=1e-5)
    assert 0 < float(m["clip_fraction"]) < 1
    assert float(m["approx_kl"]) >= 0


@pytest.mark.parametrize(
    "log_ratio, adv, clipped",
    [
        (np.log(1.5), 1.0, True),  # above 1 + eps, A > 0: clipped, no gradient
        (np.log(1.5), -1.0, False),  # above 1 + eps, A < 0: unclipped, pushes down
        (np.log(0.5), -1.0, True),  # below 1 - eps, A < 0: clipped
        (np.log(0.5), 1.0, False),  # below 1 - eps, A > 0: unclipped
        (np.log(1.1), 1.0, False),  # inside the range
    ],
)
def test_policy_loss_clip_hand_cases(log_ratio, adv, clipped):
    old = jnp.array([[-1.0]])
    a = jnp.array([[adv]])
    mask = jnp.ones((1, 1))

    def f(logp):
        return policy_loss(logp=logp, old_logp=old, advantages=a, mask=mask)

    (loss, m), g = jax.value_and_grad(f, has_aux=True)(old + log_ratio)
    rho = float(np.exp(log_ratio))
    expect = -min(rho * adv, float(np.clip(rho, 0.8, 1.2)) * adv)
    np.testing.assert_allclose(float(loss), expect, rtol=1e-5)
    assert float(m["clip_fraction"]) == float(clipped)
    if clipped:
        assert float(g[0, 0]) == 0.0
    else:  # d(-rho A)/d logp = -rho A
        np.testing.assert_allclose(float(g[0, 0]), -rho * adv, rtol=1e-5)


def test_clip_higher_is_asymmetric():
    old = jnp.zeros((1, 1))
    kw = dict(old_logp=old, advantages=jnp.ones((1, 1)), mask=jnp.ones((1, 1)))
    logp = jnp.log(jnp.array([[1.25]]))
    _, sym = policy_loss(logp=logp, clip_eps=0.2, **kw)
    _, high = policy_loss(logp=logp, clip_eps=0.2, clip_eps_high=0.28, **kw)
    assert float(sym["clip_fraction"]) == 1.0 and float(high["clip_fraction"]) == 0.0


def test_sequence_ratio_gradient_is_length_normalised():
    logp, old, adv, mask = _policy_data(2)
    adv = np.ones_like(adv)

    def f(x):
        return policy_loss(
            logp=x, old_logp=x, advantages=adv, mask=mask, ratio="sequence"
        )[0]

    g = np.asarray(jax.grad(f)(jnp.asarray(logp)))
    # at rho = 1, d rho_b / d logp_t = 1 / |y_b| and rho_b appears on |y_b| tokens,
    # so with the token-mean every trained token gets -A / (number of tokens)
    expect = np.where(mask, -1.0 / mask.sum(), 0.0)
    np.testing.assert_allclose(g, expect, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.int32,
        hnp.array_shapes(min_dims=2, max_dims=2, max_side=9),
        elements=st.integers(0, 2),
    )
)
def test_segment_masks_partition_trained_tokens(ids):
    masks = {k: np.asarray(v) for k, v in segment_masks(ids).items()}
    trained = ids != 0
    assert not np.any(masks["tool"] & masks["reply"])
    np.testing.assert_array_equal(
        masks["tool"].astype(int) + masks["reply"].astype(int), trained.astype(int)
    )
    np.testing.assert_array_equal(masks["trained"], trained)


@settings(max_examples=30, deadline=None)
@given(
    hnp.arrays(np.int32, (2, 4), elements=st.integers(-3, 6)).filter(
        lambda a: np.any((a < 0) | (a > 2))
    )
)
def test_segment_masks_reject_unknown_ids(ids):
    with pytest.raises(ValueError, match="segment id"):
        segment_masks(ids)


def test_segment_advantages():
    rng = np.random.default_rng(5)
    tool = rng.normal(size=(N, G)).astype(np.float32)
    reply = rng.normal(size=(N, G)).astype(np.float32)
    ids = rng.integers(0, 3, size=(N * G, T))
    got = np.asarray(
        segment_advantages(
            tool_advantages=tool, reply_advantages=reply, segment_ids=ids
        )
    )
    for n, g, t in np.ndindex(N, G, T):
        b = n * G + g
        want = {0: 0.0, 1: tool[n, g], 2: reply[n, g]}[int(ids[b, t])]
        assert got[b, t] == want
    # under jit the id check is skipped, the masks still work
    jitted = jax.jit(
        lambda i: segment_advantages(
            tool_advantages=tool, reply_advantages=reply, segment_ids=i
        )
    )
    np.testing.assert_array_equal(jitted(ids), got)


def test_kl_estimators_match_numpy():
    logp, ref, _, mask = _policy_data(3)
    d = ref.astype(np.float64) - logp
    np.testing.assert_allclose(
        get_kl_estimator("k1")(logp=logp, ref_logp=ref), -d, atol=1e-6
    )
    np.testing.assert_allclose(
        get_kl_estimator("k2")(logp=logp, ref_logp=ref), d**2 / 2, atol=1e-6
    )
    k3 = np.asarray(get_kl_estimator("k3")(logp=logp, ref_logp=ref))
    np.testing.assert_allclose(k3, np.exp(d) - d - 1, atol=1e-6)
    assert np.all(k3 >= 0)
    loss, m = kl_penalty(logp=logp, ref_logp=ref, mask=mask, estimator="k3")
    np.testing.assert_allclose(float(loss), (np.exp(d) - d - 1)[mask].mean(), atol=1e-6)
    assert float(m["kl"]) == float(loss)


@settings(max_examples=50, deadline=None)
@given(st.floats(-20, 20), st.floats(-20, 20))
def test_k3_nonnegative(logp, ref):
    k3 = get_kl_estimator("k3")(logp=jnp.float32(logp), ref_logp=jnp.float32(ref))
    assert float(k3) >= 0


def test_k3_unbiased_on_samples():
    # E_pi[k3] = KL(pi || ref) on a small categorical, by exact expectation
    pi = np.array([0.5, 0.3, 0.2])
    ref = np.array([0.2, 0.2, 0.6])
    k = np.asarray(get_kl_estimator("k3")(logp=np.log(pi), ref_logp=np.log(ref)))
    np.testing.assert_allclose((pi * k).sum(), (pi * np.log(pi / ref)).sum(), atol=1e-6)


def test_length_penalty():
    got = length_penalty(lengths=np.array([0, 100, 150, 400]), target=150, coef=0.01)
    np.testing.assert_allclose(got, [0.0, 0.0, 0.0, 2.5], atol=1e-6)
