"""``hat eval compare``: two evals' paired differences, per suite and per tag.

Two runs are compared only on the cases both answered: each case id held by
both gives one pair (A's score, B's score), and the difference ``B - A`` of
the means gets a paired interval (``hat_jax.eval.stats.paired_difference``):
Tango's score interval over the cases where the runs disagree when the scores
are 0/1, else a paired percentile bootstrap (1,000 resamples, seed 0), so the
same records always give the same interval. A case whose score is NaN in
either run (a judge without a valid vote) is left out of that metric's pairs.

Case sets that differ are reported (how many cases each run has, how many are
shared), and so are shared ids whose recorded input differs (runs made with
another ``--seed`` name different cases by the same ids); ``strict`` turns
either into an error. A suite with no shared case is skipped with a note.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from hat_jax.eval.browse import WEIGHTS, EvalRun, headline, metric_names, quoted
from hat_jax.eval.records import Record
from hat_jax.eval.show import select
from hat_jax.eval.stats import CI_SEED, MIN_DIFFERING, N_RESAMPLES, paired_difference
from hat_jax.printable import shown

MAX_GROUPS = 12  # a tag with more values than this is not broken down by default
COLUMNS = ("suite", "group", "metric", "n", "A", "B", "B-A", "95 % CI")


def paired_scores(
    a: Sequence[Record], b: Sequence[Record], metric: str, weight: str | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-case values of ``metric`` in ``a`` and ``b``, and the cases' weights
    (score ``weight`` in ``a``, else 1), over the ids both hold a score for, in
    ``a``'s order."""
    by_id = {r["id"]: r["scores"] for r in b if metric in r["scores"]}
    xa, xb, w = [], [], []
    for r in a:
        s = r["scores"]
        if metric in s and r["id"] in by_id:
            xa.append(s[metric])
            xb.append(by_id[r["id"]][metric])
            w.append(s[weight] if weight else 1.0)
    return np.asarray(xa, float), np.asarray(xb, float), np.asarray(w, float)


def compare_metric(
    a: Sequence[Record], b: Sequence[Record], metric: str, subset: dict | None = None
) -> dict:
    """``paired_difference`` of ``metric`` over the shared cases whose tags (in
    ``a``) match ``subset``, NaN pairs left out (module docstring)."""
    weight = WEIGHTS.get(metric)
    xa, xb, w = paired_scores(select(a, metric=None, tags=subset), b, metric, weight)
    keep = np.isfinite(xa) & np.isfinite(xb) & np.isfinite(w)
    return paired_difference(xa[keep], xb[keep], w[keep] if weight else None)


def _groups(a: Sequence[Record], tags: Sequence[str]) -> list[tuple[str, dict]]:
    out = [("all", {})]
    for tag in tags:
        values = sorted({str(r["tags"][tag]) for r in a if tag in r["tags"]})
        out += [(f"{tag}={v}", {tag: v}) for v in values]
    return out


def _auto_tags(a: Sequence[Record]) -> list[str]:
    """Tags with 2..MAX_GROUPS values, fewer than the cases (not per-case ids)."""
    seen: dict[str, set] = {}
    for r in a:
        for k, v in r["tags"].items():
            seen.setdefault(k, set()).add(str(v))
    return [k for k, v in seen.items() if 2 <= len(v) <= min(MAX_GROUPS, len(a) - 1)]


def _pct(values: Sequence[float]) -> bool:
    return all(0.0 <= v <= 1.0 for v in values if v is not None)


def _row(suite: str, group: str, metric: str, d: dict) -> list[str]:
    scale, digits = (100, 1) if _pct([d["a"], d["b"]]) else (1, 3)

    def num(v, sign=""):
        return "-" if v is None else f"{scale * v:{sign}.{digits}f}"

    ci = d["ci"]
    interval = "-" if ci is None else f"[{num(ci[0], '+')}, {num(ci[1], '+')}]"
    if ci is not None and (ci[0] > 0 or ci[1] < 0):
        interval += " *"
    cells = [suite, group, metric, str(d["n"]), num(d["a"]), num(d["b"])]
    return [shown(c) for c in cells] + [num(d["diff"], "+"), interval]


def _case_sets(name: str, ra: Sequence[Record], rb: Sequence[Record]) -> list[str]:
    """Warnings about the two runs' case sets (module docstring)."""
    ia, ib = {r["id"]: r for r in ra}, {r["id"]: r for r in rb}
    shared = [i for i in ia if i in ib]
    notes = []
    if len(shared) != len(ia) or len(shared) != len(ib):
        notes.append(
            f"{name}: the case sets differ: A has {len(ia)}, B has {len(ib)}, "
            f"{len(shared)} shared ({len(ia) - len(shared)} only in A, "
            f"{len(ib) - len(shared)} only in B)"
        )
    other = sum(ia[i].get("input") != ib[i].get("input") for i in shared)
    if other:
        notes.append(
            f"{name}: {other} of the {len(shared)} shared case ids have a different "
            "input in A and B (made with another --seed?)"
        )
    return notes


def compare_lines(
    run_a: EvalRun,
    run_b: EvalRun,
    *,
    suites: str | None = None,
    metrics: str | None = None,
    by: str | None = None,
    strict: bool = False,
) -> Iterator[str]:
    """``hat eval compare``'s output, line by line: the runs, warnings, then one
    table row per suite x group x metric.

    Args:
      suites: comma-separated (default: the suites both runs hold).
      metrics: comma-separated score names, or "all" (default: the headline).
      by: comma-separated tags to break down by, or "none" (default: the tags
        A's summary groups by, else those with 2..MAX_GROUPS values).
      strict: refuse (ValueError) case sets or inputs that differ.
    """
    names = run_a.suites(suites) if suites else list(run_a.files)
    if suites:
        run_b.suites(suites)  # fails naming a suite B lacks
    only = [(s, "A") for s in run_a.files if s not in run_b.files]
    only += [(s, "B") for s in run_b.files if s not in run_a.files]
    yield f"A: {shown(run_a.name)} ({run_a.source})"
    yield f"B: {shown(run_b.name)} ({run_b.source})"
    yield (
        f"B-A over the cases both runs hold, 95 % paired intervals: Tango's score "
        f"interval for 0/1 scores, else a bootstrap ({N_RESAMPLES:,} resamples, "
        f"seed {CI_SEED});"
    )
    yield (
        "* the interval excludes 0; - no interval (graded scores differing in "
        f"fewer than {MIN_DIFFERING} cases); scores in % where they lie in [0, 1]"
    )
    if not suites:
        for s, side in only:
            yield f"note: {shown(s)} is only in {side}; skipped"
    names = [s for s in names if s in run_b.files]
    rows = []
    for suite in names:
        ra, rb = run_a.records(suite), run_b.records(suite)
        notes = _case_sets(shown(suite), ra, rb)
        if notes and strict:
            raise ValueError(notes[0] + " (--strict)")
        yield from (f"warning: {n}" for n in notes)
        ids_b = {r["id"] for r in rb}
        shared = [r for r in ra if r["id"] in ids_b]
        if not shared:
            yield f"note: {shown(suite)}: no case in both runs; skipped"
            continue
        ms = _metrics(shared, metrics)
        have = set(metric_names(shared))
        for m in [m for m in ms if m not in have]:
            yield f"note: {shown(suite)} has no score {quoted(m)}"
        tags = _tags(run_a, suite, shared, by)
        for t in [t for t in tags if not any(t in r["tags"] for r in shared)]:
            yield f"note: {shown(suite)}: no shared case has the tag {quoted(t)}"
        for group, subset in _groups(shared, tags):
            for m in ms:
                d = compare_metric(shared, rb, m, subset)
                if d["n"]:
                    rows.append(_row(suite, group, m, d))
    if not rows:
        raise ValueError(
            f"{shown(run_a.name)} and {shown(run_b.name)} share no scored case"
        )
    yield from _table(rows)


def _metrics(shared: Sequence[Record], metrics: str | None) -> list[str]:
    if metrics == "all":
        return metric_names(shared)
    if metrics:
        return [m.strip() for m in metrics.split(",") if m.strip()]
    m = headline(shared)
    return [m] if m else []


def _tags(
    run: EvalRun, suite: str, shared: Sequence[Record], by: str | None
) -> list[str]:
    if by == "none":
        return []
    if by:
        return [t.strip() for t in by.split(",") if t.strip()]
    return run.group_tags(suite) or _auto_tags(shared)


def _table(rows: list[list[str]]) -> Iterator[str]:
    widths = [
        max(len(r[i]) for r in [list(COLUMNS), *rows]) for i in range(len(COLUMNS))
    ]
    right = {3, 4, 5, 6}  # numbers
    for r in [list(COLUMNS), *rows]:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths))
        ]
        yield "  ".join(cells).rstrip()
