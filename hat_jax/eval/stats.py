"""Aggregates with percentile-bootstrap confidence intervals.

Every interval here is a percentile bootstrap over cases: ``n_resamples``
(1,000) resamples of the cases with replacement, drawn once as an index matrix
``rng.integers(0, n, size=(n_resamples, n))`` from ``default_rng(seed)``
(seed 0), the statistic computed on each row, and the 2.5th / 97.5th
percentiles (numpy's default linear interpolation) reported as ``[lo, hi]``.
Paired statistics (the harness-edit test's error reduction, the difference of
two runs over their shared cases) resample the same indices in every array, so
each case keeps its pair. A fixed seed
makes a summary a pure function of its records.

``wilson_ci`` and ``case_mean_ci`` serve the paper's tables: a mean of 0/1
scores gets the Wilson score interval (closed form, no resampling), which stays
honest where the percentile bootstrap collapses (0 of 6 correct reads [0, 0]
under the bootstrap, [0, 39] under Wilson); any other mean keeps the bootstrap.
Likewise ``paired_difference`` gives a difference of 0/1 scores (unweighted)
Tango's score interval (``tango_ci``): two runs that disagree on no case read
[0, 0] under the bootstrap, though 0 disagreements in 300 cases leave room
for a difference of about +-1.3 points; the score interval says so. Any other
difference keeps the paired bootstrap, and has no interval when fewer than
``MIN_DIFFERING`` cases differ (there is no score interval to fall back on).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
from jaxtyping import Float

N_RESAMPLES = 1000
CI_SEED = 0
LEVEL = 0.95
# A paired bootstrap of graded scores needs this many cases where the runs
# differ: with fewer, most resamples hold none of them and the interval
# collapses towards [0, 0], so ``paired_difference`` gives none.
MIN_DIFFERING = 10
# A relative error reduction's bootstrap leaves out the resamples with nothing
# wrong before (a zero denominator): about e^-k of them with k cases wrong, so
# with few wrong its interval stands on a biased sample (one wrong case gives
# [100, 100] from the two thirds of resamples that hold it). Below MIN_WRONG
# cases wrong before, or MIN_DIFFERING cases whose error the edit changed (none
# changed reads [0, 0]), ``error_reduction`` gives no interval.
MIN_WRONG = 10


def too_few_to_resample(before: Sequence[float], after: Sequence[float]) -> bool:
    """Whether a relative error reduction over these paired errors gets no
    interval: fewer than ``MIN_WRONG`` cases wrong before, or fewer than
    ``MIN_DIFFERING`` whose error differs after."""
    b, a = np.asarray(before, np.float64), np.asarray(after, np.float64)
    return (
        np.count_nonzero(b > 0) < MIN_WRONG or np.count_nonzero(b != a) < MIN_DIFFERING
    )


# A statistic over resampled arrays: each argument is [R, n], the result [R].
Statistic = Callable[..., Float[np.ndarray, " R"]]


def _mean(x: Float[np.ndarray, "R n"]) -> Float[np.ndarray, " R"]:
    return x.mean(axis=-1)


def bootstrap(
    stat: Statistic,
    *arrays: Sequence[float],
    n_resamples: int = N_RESAMPLES,
    seed: int = CI_SEED,
    level: float = LEVEL,
) -> tuple[float, float] | None:
    """The percentile-bootstrap interval of ``stat`` over paired ``arrays``.

    Args:
      stat: maps resampled arrays (each [R, n]) to one value per resample [R];
        resamples where it is NaN (e.g. a zero denominator) are left out.
      *arrays: equal-length per-case values [n] (resampled with shared indices).
      n_resamples, seed, level: see the module docstring.

    Returns:
      (lo, hi), or None with no cases or no finite resample.
    """
    xs = [np.asarray(a, np.float64) for a in arrays]
    n = len(xs[0])
    if any(len(x) != n for x in xs):
        raise ValueError(f"paired arrays differ in length: {[len(x) for x in xs]}")
    if n == 0:
        return None
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.asarray(stat(*(x[idx] for x in xs)), np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def bootstrap_ci(values: Sequence[float], **kw: Any) -> tuple[float, float] | None:
    """The bootstrap interval of the mean of ``values`` (kwargs of bootstrap)."""
    return bootstrap(_mean, values, **kw)


def mean_ci(values: Sequence[float], **kw: Any) -> dict[str, Any]:
    """``{"mean", "ci": [lo, hi], "n"}`` of per-case values (None when empty)."""
    x = np.asarray(values, np.float64)
    ci = bootstrap_ci(x, **kw)
    return {
        "mean": float(x.mean()) if x.size else None,
        "ci": list(ci) if ci else None,
        "n": int(x.size),
    }


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return num.sum(axis=-1) / den.sum(axis=-1)


def weighted_mean_ci(
    values: Sequence[float], weights: Sequence[float], **kw: Any
) -> dict[str, Any]:
    """``mean_ci`` of a mean weighted per case (e.g. IFEval's instruction-level
    accuracy: per-prompt rates weighted by their number of instructions), with
    the cases (not the weights' units) resampled."""
    x, w = np.asarray(values, np.float64), np.asarray(weights, np.float64)
    ci = bootstrap(_ratio, x * w, w, **kw) if x.size and w.sum() else None
    return {
        "mean": float((x * w).sum() / w.sum()) if x.size and w.sum() else None,
        "ci": list(ci) if ci else None,
        "n": int(x.size),
    }


def _reduction(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    b = before.mean(axis=-1)
    return (b - after.mean(axis=-1)) / b


def error_reduction(
    before: Sequence[float], after: Sequence[float], **kw: Any
) -> dict[str, Any]:
    """Error rates before and after an edit and the relative error reduction.

    Args:
      before, after: per-case errors in [0, 1] (1 = wrong), paired by case.

    Returns:
      ``{"before": mean_ci, "after": mean_ci, "reduction": {"value", "ci"}}``;
      reduction is ``(before - after) / before`` of the mean error rates (None
      when nothing was wrong before), with a paired bootstrap interval (None
      when ``too_few_to_resample``).
    """
    b, a = np.asarray(before, np.float64), np.asarray(after, np.float64)
    if b.shape != a.shape:
        raise ValueError(f"unpaired errors: {b.shape} before, {a.shape} after")
    value = float((b.mean() - a.mean()) / b.mean()) if b.size and b.mean() else None
    few = too_few_to_resample(b, a)
    ci = bootstrap(_reduction, b, a, **kw) if value is not None and not few else None
    return {
        "before": mean_ci(b, **kw),
        "after": mean_ci(a, **kw),
        "reduction": {"value": value, "ci": list(ci) if ci else None, "n": int(b.size)},
    }


def sign_p(k: int, other: int) -> float:
    """One-sided exact sign test (exact McNemar): the chance that at least
    ``k`` of ``k + other`` discordant pairs go one way when either way is
    equally likely (1.0 with no discordant pair)."""
    n = k + other
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n if n else 1.0


def wilson_ci(k: float, n: int, *, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion ``k / n``.

    The interval holds every ``p`` the score test does not reject,
    ``|k / n - p| <= z sqrt(p (1 - p) / n)`` with ``z`` the normal quantile of
    ``(1 + level) / 2`` (1.96 at 95 %), solved in closed form; no continuity
    correction. None when ``n`` is 0.
    """
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p, z2 = k / n, z * z / n
    centre = (p + z2 / 2) / (1 + z2)
    half = z / (1 + z2) * math.sqrt(p * (1 - p) / n + z2 / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def case_mean_ci(
    values: Sequence[float], weights: Sequence[float] | None = None, **kw: Any
) -> dict[str, Any]:
    """``{"mean", "ci", "n", "method"}`` of per-case values: the Wilson interval
    when every value is 0 or 1 (method "wilson"), else ``weighted_mean_ci``
    (with ``weights``) or ``mean_ci`` (method "bootstrap"); kwargs as for
    ``bootstrap`` (``level`` also sets Wilson's)."""
    x = np.asarray(values, np.float64)
    if weights is not None:
        return {**weighted_mean_ci(x, weights, **kw), "method": "bootstrap"}
    if x.size and np.isin(x, (0.0, 1.0)).all():
        ci = wilson_ci(float(x.sum()), int(x.size), level=kw.get("level", LEVEL))
        mean = float(x.mean())
        return {"mean": mean, "ci": list(ci), "n": int(x.size), "method": "wilson"}
    return {**mean_ci(x, **kw), "method": "bootstrap"}


def tango_ci(
    gain: int, loss: int, n: int, *, level: float = LEVEL
) -> tuple[float, float] | None:
    """Tango's score interval of a paired difference of proportions.

    Over ``n`` paired 0/1 cases, ``gain`` cases score 1 in the second run and
    0 in the first, ``loss`` the other way round; the difference is
    ``(gain - loss) / n``. Writing ``d`` for a candidate difference and ``q``
    for the chance of a loss, the score statistic is
    ``(gain - loss - n d) / sqrt(n (2 q + d (1 - d)))`` with ``q`` at its
    maximum-likelihood value under ``d`` (the root of ``2n q^2 + B q + C``,
    ``B = (2n - gain + loss) d - gain - loss``, ``C = -loss d (1 - d)``); the
    interval holds every ``d`` whose statistic is within the normal quantile
    ``z`` (1.96 at 95 %), found by bisection (it falls as ``d`` grows). It
    depends only on the discordant counts: no disagreement gives
    ``+-z^2 / (n + z^2)``. None when ``n`` is 0. (Tango 1998, Statistics in
    Medicine 17:891; recommended for paired proportions by Fagerland, Lydersen
    and Laake 2013.)
    """
    if n == 0:
        return None
    if not (0 <= gain and 0 <= loss and gain + loss <= n):
        raise ValueError(f"discordant counts {gain}, {loss} do not fit {n} cases")
    z = NormalDist().inv_cdf((1 + level) / 2)

    def score(d: float) -> float:
        b = (2 * n - gain + loss) * d - gain - loss
        q = (math.sqrt(max(b * b + 8 * n * loss * d * (1 - d), 0.0)) - b) / (4 * n)
        var, num = n * (2 * q + d * (1 - d)), gain - loss - n * d
        if var > 0:
            return num / math.sqrt(var)
        return math.copysign(math.inf, num) if num else 0.0

    def solve(lo: float, hi: float, target: float) -> float:
        for _ in range(60):  # 2^-60 of the span: past float64 at these scales
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if score(mid) > target else (lo, mid)
        return (lo + hi) / 2

    est = (gain - loss) / n
    return solve(-1.0, est, z), solve(est, 1.0, -z)


def _paired_gap(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``b``'s weighted mean minus ``a``'s (each [R, n] -> [R])."""
    return (b * w).sum(axis=-1) / w.sum(axis=-1) - (a * w).sum(axis=-1) / w.sum(axis=-1)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    weights: Sequence[float] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """The paired difference ``mean(b) - mean(a)`` over cases both runs hold.

    ``a[i]`` and ``b[i]`` are one case's scores in two runs. When every score
    is 0 or 1 and the weights are equal, the interval is ``tango_ci`` over the
    cases where the runs disagree (method "tango"; ``gain`` / ``loss`` count
    them). Otherwise it is the percentile bootstrap of the difference with
    shared indices (method "bootstrap"; module docstring), so a resampled case
    keeps its pair; with fewer than ``MIN_DIFFERING`` cases whose scores
    differ there is no interval (method "too few differing"). Either interval
    is narrower than an unpaired one whenever the runs agree on which cases
    are hard. ``weights`` (one per case, default 1) give weighted means, e.g.
    IFEval's instruction-level accuracy. ``hat eval compare`` and the paper's
    tables (``paper.compare``, which calls it with the runs swapped for its
    ``a - b``) both use it.

    Returns:
      ``{"a", "b", "diff", "ci": [lo, hi], "n", "method"}`` (and ``"gain"``,
      ``"loss"`` for "tango"): the two means, their difference, its interval
      (None where the values are None: no cases, or zero total weight).
    """
    xa, xb = np.asarray(a, np.float64), np.asarray(b, np.float64)
    w = np.ones_like(xa) if weights is None else np.asarray(weights, np.float64)
    if not xa.shape == xb.shape == w.shape:
        raise ValueError(f"unpaired scores: {xa.shape}, {xb.shape}, {w.shape}")
    if xa.size == 0 or w.sum() == 0:
        return {"a": None, "b": None, "diff": None, "ci": None, "n": int(xa.size)}
    out = {
        "a": float((xa * w).sum() / w.sum()),
        "b": float((xb * w).sum() / w.sum()),
        "diff": float(_paired_gap(xa, xb, w)),
        "n": int(xa.size),
    }
    if (
        np.isin(xa, (0.0, 1.0)).all()
        and np.isin(xb, (0.0, 1.0)).all()
        and (w == w[0]).all()
    ):
        gain, loss = int((xb > xa).sum()), int((xa > xb).sum())
        ci = tango_ci(gain, loss, xa.size, level=kw.get("level", LEVEL))
        return out | {"ci": list(ci), "method": "tango", "gain": gain, "loss": loss}
    if np.count_nonzero(xa != xb) < MIN_DIFFERING:
        return out | {"ci": None, "method": "too few differing"}
    ci = bootstrap(_paired_gap, xa, xb, w, **kw)
    return out | {"ci": list(ci) if ci else None, "method": "bootstrap"}
