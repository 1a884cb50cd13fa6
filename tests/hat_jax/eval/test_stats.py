"""Wilson intervals and the tables' per-case means (hat_jax.eval.stats)."""

import numpy as np
import pytest

from hat_jax.eval.stats import case_mean_ci, mean_ci, weighted_mean_ci, wilson_ci

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
