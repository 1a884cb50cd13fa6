"""Harness-edit error reduction per run, the paper's HAT and naive SFT beside."""

from __future__ import annotations

from paper import reported
from paper.render import MISSING, Table, ci, paper_cell, pm
from paper.results import Stat, Sweep
from paper.tables.registry import register, skipped_note

SUITE = "edit"
# pipeline -> the paper's number (naive SFT read as fixed-harness SFT)
PAPER = {
    ("hsa", True, True): reported.EDIT_REDUCTION["HAT"],
    ("fixed", False, False): reported.EDIT_REDUCTION["naive SFT"],
}


@register("edit")
def edit_table(sweep: Sweep) -> Table:
    rows = []
    for run in sweep.runs:
        before = Stat.from_summary(run.extra(SUITE, "error", "before"))
        after = Stat.from_summary(run.extra(SUITE, "error", "after"))
        red = Stat.from_summary(run.extra(SUITE, "error", "reduction"))
        n = str(red.n) if red and red.n else MISSING
        paper = (
            paper_cell(PAPER.get(run.meta.pipeline)) if not run.meta.leave_out else "–"
        )
        rows.append([run.meta.row, pm(before), pm(after), ci(red), n, paper])
    return Table(
        name="edit",
        title="Harness-edit error reduction",
        caption=(
            f"Ours at {sweep.scale_note()}: error rate (1 − accuracy) of the same "
            "questions under the harness before and after an edit, in % (± half the "
            "95 % interval), and the relative error reduction (before − after) / "
            "before with its paired 95 % bootstrap interval. Paper: HAT 51.7 %, "
            "naive SFT 18.1 % (PAPER.md)."
        ),
        header=[
            "run",
            "error before",
            "error after",
            "reduction [95 % CI]",
            "n questions",
            "paper",
        ],
        rows=rows,
        notes=[
            "Naive SFT in the paper is read as fixed-harness SFT.",
            *skipped_note(sweep),
        ],
    )
