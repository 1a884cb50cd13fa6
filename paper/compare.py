"""Paired differences between two runs' per-case records, with 95 % intervals.

Both runs answered the same cases (same suite, seed and limit), so a
difference is computed over the case ids they share, each case keeping its pair
in every bootstrap resample (``hat_jax.eval.stats.bootstrap``: 1,000 resamples,
seed 0, percentile interval).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hat_jax.eval.stats import bootstrap
from paper.results import Run, Stat

# metric -> the score weighting it per case (IFEval's instruction-level accuracy)
WEIGHTS = {
    "instruction_level_strict": "n_instructions",
    "instruction_level_loose": "n_instructions",
}


def _diff(xa, xb, w):  # each [R, n] -> [R]
    return (xa * w).sum(-1) / w.sum(-1) - (xb * w).sum(-1) / w.sum(-1)


def paired_arrays(
    a: Sequence[dict], b: Sequence[dict], metric: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-case values of ``metric`` in ``a`` and ``b`` and the case weights, over
    the ids both hold a score for (in ``a``'s order)."""
    weight = WEIGHTS.get(metric)
    by_id = {r["id"]: r["scores"] for r in b if metric in r["scores"]}
    xa, xb, w = [], [], []
    for r in a:
        s = r["scores"]
        if metric in s and r["id"] in by_id:
            xa.append(s[metric])
            xb.append(by_id[r["id"]][metric])
            w.append(s[weight] if weight else 1.0)
    return (np.asarray(xa, float), np.asarray(xb, float), np.asarray(w, float))


def paired_diff(
    a: Sequence[dict], b: Sequence[dict], metric: str, subset: dict | None = None
) -> Stat | None:
    """``mean(a) - mean(b)`` of ``metric`` over shared cases, with a paired
    bootstrap interval; ``subset`` keeps the cases whose tags match it."""
    if subset:
        a = [r for r in a if all(r["tags"].get(k) == v for k, v in subset.items())]
    xa, xb, w = paired_arrays(a, b, metric)
    if xa.size == 0 or w.sum() == 0:
        return None
    value = float(_diff(xa, xb, w))
    ci = bootstrap(_diff, xa, xb, w)
    return Stat(value, *(ci or (None, None)), n=int(xa.size))


def run_diff(
    a: Run, b: Run, suite: str, metric: str, subset: dict | None = None
) -> Stat | None:
    """``a - b`` on a suite metric: paired when both runs have records, else the
    difference of the summary means without an interval (None if either lacks
    the metric)."""
    ra, rb = a.records(suite), b.records(suite)
    if ra is not None and rb is not None:
        return paired_diff(ra, rb, metric, subset)
    if subset:
        ((tag, value),) = subset.items()
        sa, sb = a.by(suite, tag, value, metric), b.by(suite, tag, value, metric)
    else:
        sa, sb = a.stat(suite, metric), b.stat(suite, metric)
    if sa is None or sb is None:
        return None
    return Stat(sa.mean - sb.mean, n=min(sa.n, sb.n))
