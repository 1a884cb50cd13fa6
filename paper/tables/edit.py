"""Harness-edit error reduction per run, the paper's HAT and naive SFT beside.

From each run's edit records: a question's error before and after the edit is
1 − success when every record holds ``success``, else 1 − accuracy (the
"error =" column says which); complete questions only. Error rates have Wilson
intervals; the relative reduction (before − after) / before its paired
bootstrap interval over questions (``hat_jax.eval.stats.error_reduction``;
none with fewer than ``MIN_WRONG`` questions wrong before or
``MIN_DIFFERING`` whose error the edit changed). A
run without records shows its summary's ``extra.error`` (bootstrap intervals),
read as 1 − success when that summary has the success metric.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from hat_jax.eval.stats import (
    MIN_DIFFERING,
    MIN_WRONG,
    case_mean_ci,
    error_reduction,
)
from hat_jax.jsonl import DataError
from hat_jax.printable import shown
from paper import reported
from paper.checks import label
from paper.render import MISSING, Table, ci, count, level, paper_cell
from paper.results import Run, Stat, Sweep
from paper.tables.registry import register, skipped_note

SUITE = "edit"
SIDES = ("before", "after")


# pipeline -> the paper's number (naive SFT read as fixed-harness SFT)
PAPER = {
    ("hsa", True, True): reported.EDIT_REDUCTION["HAT"],
    ("fixed", False, False): reported.EDIT_REDUCTION["naive SFT"],
}


def question_errors(
    records: Sequence[dict], where: str = "edit records"
) -> tuple[str, dict[str, tuple[float, float]]]:
    """(measure, question -> (error before, error after)) over the complete
    questions, in question order; the measure is "success" when every record
    holds it.

    Raises:
      DataError: a scored record without a ``question`` tag or whose ``edit``
        tag is not one of ``SIDES``.
    """
    measure = "success"
    if not records or not all(measure in r["scores"] for r in records):
        measure = "accuracy"
    pairs: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for r in records:
        if measure in r["scores"]:
            q, side = r["tags"].get("question"), r["tags"].get("edit")
            if q is None or side not in SIDES:
                raise DataError(
                    f"{where}: record '{label(r['id'])}': expected tags 'question' and "
                    f"'edit' (one of {', '.join(SIDES)}), got {label(q)} and "
                    f"{label(side)}"
                )
            pairs[str(q)][side] = 1.0 - r["scores"][measure]
    full = [q for q in sorted(pairs) if len(pairs[q]) == len(SIDES)]
    return measure, {q: (pairs[q]["before"], pairs[q]["after"]) for q in full}


def errors(
    records: Sequence[dict], where: str = "edit records"
) -> tuple[str, list[float], list[float]]:
    """(measure, errors before, errors after) per complete question, in
    question order (``question_errors``)."""
    measure, by_q = question_errors(records, where)
    return measure, [b for b, _ in by_q.values()], [a for _, a in by_q.values()]


def edit_stats(run: Run) -> tuple[str, Stat | None, Stat | None, Stat | None]:
    """(error label, before, after, reduction) of a run."""
    recs = run.records(SUITE)
    if recs is None:
        has = "success" in ((run.suite(SUITE) or {}).get("metrics") or {})
        label = f"1 − {'success' if has else 'accuracy'} (summary)"
        get = [run.extra_stat(SUITE, "error", k) for k in (*SIDES, "reduction")]
        before, red = get[0], get[2]
        if red is not None and before is not None and before.mean is not None:
            # no per-question errors in a summary: mean x n, a lower bound on
            # the questions wrong, is what it can tell
            if before.mean * before.n < MIN_WRONG:
                get[2] = Stat(red.mean, n=red.n)
        return (label, *get) if run.suite(SUITE) else (MISSING, None, None, None)
    where = shown(run.path / "eval" / SUITE / "records.jsonl")
    measure, before, after = errors(recs, where)
    if not before:
        return f"1 − {measure}", None, None, None
    red = error_reduction(before, after)["reduction"]  # too_few_to_resample
    red = Stat.from_summary(red) if red["value"] is not None else None
    b, a = (Stat.from_summary(case_mean_ci(x)) for x in (before, after))
    return f"1 − {measure}", b, a, red


@register("edit")
def edit_table(sweep: Sweep) -> Table:
    rows, few = [], []
    for run in sweep.runs:
        label, before, after, red = edit_stats(run)
        if red is not None and red.lo is None:  # too few wrong or changed
            few.append(run.meta.row)
        n = before.n if before is not None else None
        paper = (
            MISSING if run.meta.leave_out else paper_cell(PAPER.get(run.meta.pipeline))
        )
        cells = [level(before, n), level(after, n), ci(red, mark=True)]
        rows.append([run.meta.row, label, count(n), *cells, paper])
    return Table(
        name="edit",
        title="Harness-edit error reduction",
        caption=(
            f"Ours at {sweep.scale_note()}: error rate of the same questions under "
            "the harness before and after an edit, in % (error = 1 − success, or 1 "
            "− accuracy for records without success, as the column says), and the "
            "relative error reduction (before − after) / before in %. 95 % "
            "intervals: Wilson score for the error rates, paired percentile "
            "bootstrap over questions (1,000 resamples, seed 0) for the reduction; "
            "* marks a reduction whose interval excludes 0. Over every question, "
            "the dev and test splits pooled (the suite's summary also gives each "
            "split). Paper: HAT 51.7 %, naive SFT 18.1 % (PAPER.md: one figure "
            "for its 500 dev + 1,000 test cases; its error measure is not named)."
        ),
        header=[
            "run",
            "error =",
            "n questions",
            "error before",
            "error after",
            "reduction",
            "paper",
        ],
        rows=rows,
        notes=[
            "Naive SFT in the paper is read as fixed-harness SFT.",
            *(
                [
                    f"Fewer than {MIN_WRONG} questions wrong before the edit, or "
                    f"fewer than {MIN_DIFFERING} whose error it changed, so the "
                    "reduction has no interval (its bootstrap would lose the "
                    "resamples with nothing wrong before, or read [0, 0] where "
                    "nothing changed): " + ", ".join(few) + "."
                ]
                if few
                else []
            ),
            *skipped_note(sweep),
        ],
    )
