"""Means and paired differences from runs' per-case records, with 95 % intervals.

How every interval in the tables is made (``METHOD``):

- a mean of 0/1 scores (success, accuracy, IFEval prompt-level, an edit error)
  has the Wilson score interval (``hat_jax.eval.stats.wilson_ci``);
- any other mean (effectiveness, IFEval instruction-level, weighted by each
  prompt's instructions) a percentile bootstrap over cases;
- a difference between two runs, over the case ids both runs answered, of 0/1
  scores Tango's score interval over the cases where they disagree
  (``hat_jax.eval.stats.tango_ci``: 0 disagreements in 300 cases read
  +-1.3 points, where a bootstrap reads [0, 0]), of any other score a paired
  percentile bootstrap: each resampled case keeps its pair
  (``hat_jax.eval.stats.bootstrap``: 1,000 resamples, seed 0), so the same
  records always give the same interval; none with fewer than
  ``MIN_DIFFERING`` (10) cases that differ.

A run without a records file falls back to its summary (bootstrap intervals; a
difference of two summary means has no interval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hat_jax.eval.compare import paired_scores
from hat_jax.eval.stats import case_mean_ci, paired_difference
from paper.checks import WEIGHTS  # metric -> the score weighting it per case
from paper.results import Run, Stat

METHOD = (
    "95 % intervals: Wilson score for a mean of 0/1 scores, percentile bootstrap "
    "over cases for other means; for a difference, over the cases both runs "
    "answered, Tango's paired score interval of 0/1 scores, a paired percentile "
    "bootstrap of others (1,000 resamples, seed 0; none with fewer than 10 cases "
    "that differ); * marks a difference whose interval excludes 0."
)


def select(records: Sequence[dict], subset: dict | None) -> list[dict]:
    """The records whose tags match every item of ``subset``."""
    subset = subset or {}
    return [r for r in records if all(r["tags"].get(k) == v for k, v in subset.items())]


def level(records: Sequence[dict], metric: str, subset: dict | None = None):
    """The mean of ``metric`` over the (``subset``'s) cases that hold it, with
    its interval (``METHOD``); None when no case holds it. A NaN score (a judge
    without a valid vote) is left out, as ``hat eval compare`` does."""
    rows = [
        r["scores"]
        for r in select(records, subset)
        if metric in r["scores"] and math.isfinite(r["scores"][metric])
    ]
    if not rows:
        return None
    weight = WEIGHTS.get(metric)
    w = [s[weight] for s in rows] if weight else None
    return _stat(case_mean_ci([s[metric] for s in rows], w))


def _stat(d: dict) -> Stat | None:
    return Stat.from_summary(d) if d.get("mean") is not None else None


def paired_arrays(
    a: Sequence[dict], b: Sequence[dict], metric: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-case values of ``metric`` in ``a`` and ``b`` and the case weights, over
    the ids both hold a score for (in ``a``'s order;
    ``hat_jax.eval.compare.paired_scores``)."""
    return paired_scores(a, b, metric, WEIGHTS.get(metric))


def paired(
    a: Sequence[dict], b: Sequence[dict], metric: str, subset: dict | None = None
) -> tuple[Stat, Stat, Stat] | None:
    """(mean of a, mean of b, a − b) of ``metric`` over the case ids both hold
    (``subset`` keeps the cases whose tags match it), each with its interval;
    None without a shared case."""
    xa, xb, w = paired_arrays(select(a, subset), b, metric)
    keep = np.isfinite(xa) & np.isfinite(xb) & np.isfinite(w)  # NaN: no valid vote
    xa, xb, w = xa[keep], xb[keep], w[keep]
    if xa.size == 0 or w.sum() == 0:
        return None
    ww = w if metric in WEIGHTS else None
    sa, sb = _stat(case_mean_ci(xa, ww)), _stat(case_mean_ci(xb, ww))
    gap = paired_difference(xb, xa, w)  # mean(xa) - mean(xb): the tables' a - b
    d = Stat(gap["diff"], *(gap["ci"] or (None, None)), n=gap["n"])
    return sa, sb, d


def run_level(
    run: Run | None, suite: str, metric: str, subset: dict | None = None
) -> Stat | None:
    """A run's mean of a suite metric from its records, else its summary."""
    if run is None:
        return None
    recs = run.records(suite)
    if recs is not None:
        return level(recs, metric, subset)
    if subset:
        ((tag, value),) = subset.items()
        return run.by(suite, tag, value, metric)
    return run.stat(suite, metric)


def run_cases(run: Run | None, suite: str, subset: dict | None = None) -> int | None:
    """How many cases of a suite (``subset``) a run answered (None: no suite)."""
    if run is None:
        return None
    recs = run.records(suite)
    if recs is not None:
        return len(select(recs, subset))
    s = run.suite(suite)
    if s is None:
        return None
    if subset:
        ((tag, value),) = subset.items()
        return ((s.get("by") or {}).get(tag) or {}).get(value, {}).get("n")
    return s.get("n")


def run_paired(
    a: Run | None, b: Run | None, suite: str, metric: str, subset: dict | None = None
) -> tuple[Stat | None, Stat | None, Stat | None]:
    """(a, b, a − b) on a suite metric: paired over shared cases when both runs
    have records, else the summary means and their difference without an
    interval (None where either lacks the metric)."""
    if a is None or b is None:
        sa, sb = (
            run_level(a, suite, metric, subset),
            run_level(b, suite, metric, subset),
        )
        return sa, sb, None
    ra, rb = a.records(suite), b.records(suite)
    if ra is not None and rb is not None:
        return paired(ra, rb, metric, subset) or (None, None, None)
    sa, sb = run_level(a, suite, metric, subset), run_level(b, suite, metric, subset)
    if sa is None or sb is None:
        return sa, sb, None
    return sa, sb, Stat(sa.mean - sb.mean, n=min(sa.n, sb.n))


def run_diff(
    a: Run | None, b: Run | None, suite: str, metric: str, subset: dict | None = None
) -> Stat | None:
    """``a - b`` on a suite metric (``run_paired``'s difference)."""
    return run_paired(a, b, suite, metric, subset)[2]


def tag_values(run: Run | None, suite: str, tag: str) -> list[str]:
    """The values of a tag in a run's suite, in the order the records first show
    them (else the summary's ``by`` block's order)."""
    if run is None:
        return []
    recs = run.records(suite)
    if recs is not None:
        return list(
            dict.fromkeys(str(r["tags"][tag]) for r in recs if tag in r["tags"])
        )
    return list(((run.suite(suite) or {}).get("by") or {}).get(tag) or {})
