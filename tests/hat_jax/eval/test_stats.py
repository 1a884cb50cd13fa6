"""Wilson and Tango intervals, the tables' per-case means and paired differences
(hat_jax.eval.stats)."""

import math

import numpy as np
import pytest

from hat_jax.eval.stats import (
    bootstrap,
    case_mean_ci,
    mean_ci,
    paired_difference,
    tango_ci,
    weighted_mean_ci,
    wilson_ci,
)

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("n", [1, 2, 6, 40, 541])
def test_wilson_matches_scipy(n):
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        ref = scipy_stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert wilson_ci(k, n) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_wilson_is_the_inverted_score_test():
    """Brute force: the p on a fine grid that the 95 % score test keeps."""
    z = 1.959963984540054
    p = np.linspace(0, 1, 2_000_001)
    for k, n in ((0, 6), (3, 6), (6, 6), (7, 40), (33, 40)):
        keep = p[np.abs(k / n - p) <= z * np.sqrt(p * (1 - p) / n)]
        lo, hi = wilson_ci(k, n)
        assert (lo, hi) == pytest.approx((keep.min(), keep.max()), abs=1e-6)
    assert wilson_ci(0, 0) is None
    assert wilson_ci(0, 6)[0] == 0.0 and wilson_ci(6, 6)[1] == 1.0


def test_case_mean_ci_picks_wilson_for_binary_scores_only():
    s = case_mean_ci([1.0, 0.0, 1.0, 1.0])
    assert s["method"] == "wilson" and s["n"] == 4 and s["mean"] == 0.75
    assert s["ci"] == pytest.approx(list(wilson_ci(3, 4)))
    assert case_mean_ci([0.0] * 6)["ci"][1] > 0.3  # the bootstrap would say 0
    graded = [0.0, 0.5, 1.0, 1.0]
    assert case_mean_ci(graded) == {**mean_ci(graded), "method": "bootstrap"}
    w = case_mean_ci([1.0, 0.0, 1.0], [1, 2, 3])  # weighted: always bootstrap
    assert w == {**weighted_mean_ci([1.0, 0.0, 1.0], [1, 2, 3]), "method": "bootstrap"}
    assert case_mean_ci([])["mean"] is None


def test_sign_p_is_the_binomial_tail_by_enumeration():
    import itertools

    from hat_jax.eval.stats import sign_p

    for n in range(0, 9):
        patterns = list(itertools.product((0, 1), repeat=n))
        for k in range(n + 1):
            brute = sum(sum(p) >= k for p in patterns) / len(patterns)
            assert abs(sign_p(k, n - k) - brute) < 1e-12
    assert sign_p(5, 0) == 1 / 32 and sign_p(0, 0) == 1.0


def _score_test_keeps(gain, loss, n, grid):
    """Brute force: the differences d on ``grid`` that the 95 % score test keeps,
    the nuisance chance of a loss at each maximised numerically (bounded
    scalar search over the multinomial log-likelihood, no closed form)."""
    optimize = pytest.importorskip("scipy.optimize")
    same = n - gain - loss
    kept = []
    for d in grid:

        def nll(q, d=d):
            cells = ((gain, q + d), (loss, q), (same, 1 - 2 * q - d))
            return -sum(k * math.log(max(p, 1e-300)) for k, p in cells if k)

        bounds = (max(0.0, -d), (1 - d) / 2)
        q = optimize.minimize_scalar(
            nll, bounds=bounds, method="bounded", options={"xatol": 1e-12}
        ).x
        var = n * (2 * q + d * (1 - d))
        if var > 0 and abs(gain - loss - n * d) <= 1.959963984540054 * math.sqrt(var):
            kept.append(d)
    return min(kept), max(kept)


@pytest.mark.parametrize(
    "gain, loss, n",
    [(0, 0, 300), (1, 0, 541), (4, 0, 300), (5, 2, 75), (30, 12, 300), (0, 3, 10)],
)
def test_tango_is_the_inverted_score_test(gain, loss, n):
    lo, hi = tango_ci(gain, loss, n)
    est = (gain - loss) / n
    # a grid 0.001 wide around each end, 1e-5 apart
    for end, side in ((lo, 0), (hi, 1)):
        grid = np.linspace(end - 1e-3, end + 1e-3, 201)
        grid = grid[(grid > -1) & (grid < 1)]
        grid = grid[grid <= est] if side == 0 else grid[grid >= est]
        ref = _score_test_keeps(gain, loss, n, grid)[side]
        assert end == pytest.approx(ref, abs=1.1e-5)
    assert lo <= est <= hi


def test_tango_without_disagreement_and_at_the_bounds():
    z2 = 1.959963984540054**2
    for n in (6, 75, 300):
        lo, hi = tango_ci(0, 0, n)
        assert (lo, hi) == pytest.approx((-z2 / (n + z2), z2 / (n + z2)), abs=1e-12)
    assert tango_ci(10, 0, 10)[1] == pytest.approx(1.0)
    assert tango_ci(0, 10, 10)[0] == pytest.approx(-1.0)
    assert tango_ci(0, 0, 0) is None
    with pytest.raises(ValueError, match="do not fit"):
        tango_ci(6, 5, 10)


def test_paired_difference_of_binary_scores_uses_tango():
    a = np.array([0, 1, 1, 0, 0, 1, 0, 0], float)
    b = np.array([1, 1, 0, 1, 0, 1, 1, 0], float)
    d = paired_difference(a, b)
    assert d["method"] == "tango" and (d["gain"], d["loss"]) == (3, 1)
    assert d["diff"] == pytest.approx(2 / 8)
    assert d["ci"] == pytest.approx(list(tango_ci(3, 1, 8)))
    assert paired_difference(a, b, np.full(8, 2.0))["ci"] == d["ci"]  # equal weights
    for other in (paired_difference(a, b, np.arange(1.0, 9.0)), paired_difference(
        a, np.where(b == 1, 0.5, 0.0))):  # fmt: skip
        assert other["method"] == "too few differing" and "gain" not in other
        assert other["ci"] is None and other["diff"] is not None  # 4 or 5 differ
    same = paired_difference(a, a)
    assert same["diff"] == 0.0 and same["ci"] == pytest.approx(list(tango_ci(0, 0, 8)))


def test_a_graded_difference_needs_ten_differing_cases():
    """Graded scores have no score interval: below 10 differing cases the
    percentile bootstrap is not to be trusted (with none it reads [0, 0]), so
    no interval is given; from 10 on, the bootstrap."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 300) / 2
    for k, method in ((9, "too few differing"), (10, "bootstrap")):
        b = a.copy()
        b[:k] = np.where(a[:k] == 1.0, 0.5, a[:k] + 0.5)  # k cases differ
        d = paired_difference(a, b, np.full(300, 3.0))
        assert d["method"] == method and (d["ci"] is None) == (k == 9)
        assert d["diff"] == pytest.approx((b - a).mean())


def test_tango_covers_where_the_paired_bootstrap_does_not():
    """Coverage over 400 simulated pairs of runs per setting: two runs that
    rarely disagree (the regime of the paper tables' floors) and a middling one.
    The score interval keeps its 95 %; the percentile bootstrap, which reads
    [0, 0] whenever no case disagrees, misses the true difference far more
    often near the floor."""
    rng = np.random.default_rng(0)
    n = 300
    for p_gain, p_loss, boot_max in ((0.003, 0.0, 0.7), (0.1, 0.05, 1.0)):
        true = p_gain - p_loss
        hit_t = hit_b = 0
        for _ in range(400):
            u = rng.random(n)
            gain, loss = (u < p_gain), (u >= p_gain) & (u < p_gain + p_loss)
            a, b = loss.astype(float), gain.astype(float)  # b - a: +1, -1 or 0
            lo, hi = paired_difference(a, b)["ci"]
            hit_t += lo <= true <= hi
            blo, bhi = bootstrap(lambda x, y: y.mean(-1) - x.mean(-1), a, b)
            hit_b += blo <= true <= bhi
        assert hit_t / 400 >= 0.93, (p_gain, p_loss, hit_t)
        assert hit_b / 400 <= boot_max, (p_gain, p_loss, hit_b)
