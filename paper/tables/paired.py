"""Paired differences in success between runs on the same cases, paper beside.

Each row compares two runs over the case ids both answered: each run's success
there and the difference in points, with 95 % intervals (``paper.compare``);
" *" marks a difference whose interval excludes 0, i.e. one the data decide.
HSA-SFT against fixed-harness SFT on T2 is also given per held-out HSA family
(T2's ``family`` tag). The IFEval comparisons are in the IFEval table.
"""

from __future__ import annotations

from paper import reported
from paper.compare import METHOD, run_paired, tag_values
from paper.render import RULE, Table, count, diff, level, paper_cell
from paper.results import Run, Stat, Sweep
from paper.tables.main import BASE, HAT, LEAD, PIPELINES
from paper.tables.registry import register, skipped_note

FIXED, HSA, HSA_OPD = (
    ("fixed", False, False),
    ("hsa", False, False),
    ("hsa", True, False),
)
PR = {"kind": "prompt_robustness"}
_MAIN = reported.MAIN
# HAT − base in the paper's main table (its score is not named)
HAT_VS_BASE = {
    s: _MAIN["HAT 35B"][s] - _MAIN["base (Qwen3.6-35B-A3B)"][s] for s in ("t1", "t2")
}
# (comparison, run a, run b, [(suite label, suite, subset, paper points)])
COMPARISONS = (
    ("HSA-SFT − fixed-harness SFT", HSA, FIXED, [("T2", "t2", None, None)]),
    (
        "HSA-RL: HAT − (HSA-SFT + OPD)",
        HAT,
        HSA_OPD,
        [("T1", "t1", None, None), ("T2", "t2", None, None), ("T3", "t3", None, None)],
    ),
    (
        "HAT − base",
        HAT,
        BASE,
        [("T1", "t1", None, HAT_VS_BASE["t1"]), ("T2", "t2", None, HAT_VS_BASE["t2"])],
    ),
    (
        "fixed-harness SFT − base",
        FIXED,
        BASE,
        [("T3 PR", "t3", PR, reported.FIXED_SFT_DROP["t3_pr"])],
    ),
)
FAMILY = "family"


def _row(label: str, title: str, cases: str, stats, paper: float | None) -> list[str]:
    sa, sb, d = stats
    n = d.n if isinstance(d, Stat) and d.lo is not None else None
    return [
        label,
        title,
        cases,
        count(n),
        level(sa, n),
        level(sb, n),
        diff(d),
        paper_cell(paper, signed=True),
    ]


def _name(sweep: Sweep, key) -> tuple[Run | None, str]:
    run = sweep.pipeline(*key)
    label = dict(PIPELINES)[key]
    return run, (run.meta.row if run else f"{label} (not done)")


@register("paired")
def paired_table(sweep: Sweep) -> Table:
    rows: list[list[str] | None] = []
    for i, (label, ka, kb, cells) in enumerate(COMPARISONS):
        if i:
            rows.append(RULE)
        (a, name_a), (b, name_b) = _name(sweep, ka), _name(sweep, kb)
        if a is None or b is None:
            label += f" ({name_a if a is None else name_b})"
        for title, suite, subset, paper in cells:
            stats = run_paired(a, b, suite, LEAD, subset)
            cases = "PR subset" if subset == PR else "all"
            rows.append(_row(label, title, cases, stats, paper))
            if suite == "t2" and ka == HSA:
                for fam in tag_values(a, suite, FAMILY):
                    stats = run_paired(a, b, suite, LEAD, {FAMILY: fam})
                    rows.append(_row(label, title, f"{FAMILY} {fam}", stats, None))
    return Table(
        name="paired",
        title="Paired differences in success",
        caption=(
            f"Ours at {sweep.scale_note()}: success in % of the first and the "
            "second run of a comparison over the cases both answered (n), and "
            f"their difference in points. {METHOD} Paper: its reported points "
            "(PAPER.md)."
        ),
        header=[
            "comparison",
            "suite",
            "cases",
            "n",
            "first run",
            "second run",
            "difference",
            "paper",
        ],
        rows=rows,
        notes=[
            "Paper: HAT − base is derived from its main table (T1 94.8 − 80.3, T2 "
            "94.6 − 75.4), whose score is not named; the T3 Prompt Robustness drop "
            "(−4.6) names no score either. It reports no T2 result per HSA family.",
            "The PR subset asks each question under 4 prompts: its row takes the "
            "cases as independent (too narrow an interval); the claims table's "
            "claim 9 gives the same difference resampled by question.",
            "A row without an interval compares summary means (a run without "
            "records) or lacks a run; n is then not shown.",
            *skipped_note(sweep),
        ],
    )
