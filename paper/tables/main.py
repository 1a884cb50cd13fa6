"""Main results: the six pipelines on T1, T2, T3 and IFEval, paper beside."""

from __future__ import annotations

from collections.abc import Callable

from paper import reported
from paper.render import RULE, Table, n_range, paper_cell, pm
from paper.results import Run, Stat, Sweep
from paper.tables.registry import register, skipped_note

# (sft, opd, rl) -> row label used when the run has no meta.row
PIPELINES = (
    ((None, False, False), "base"),
    (("fixed", False, False), "fixed-harness SFT"),
    (("hsa", False, False), "HSA-SFT"),
    (("fixed", True, False), "fixed-harness SFT + OPD"),
    (("hsa", True, False), "HSA-SFT + OPD"),
    (("hsa", True, True), "HAT (HSA-SFT + OPD + HSA-RL)"),
)
Getter = Callable[[Run], Stat | None]


def _metric(suite: str, metric: str) -> Getter:
    return lambda r: r.stat(suite, metric)


# header, value of a run, key into reported.MAIN
COLUMNS: tuple[tuple[str, Getter, str | None], ...] = (
    ("T1 acc.", _metric("t1", "accuracy"), "t1"),
    ("T1 eff.", _metric("t1", "effectiveness"), None),
    ("T2 acc.", _metric("t2", "accuracy"), "t2"),
    ("T3 acc.", _metric("t3", "accuracy"), None),
    (
        "T3 PR acc.",
        lambda r: r.by("t3", "kind", "prompt_robustness", "accuracy"),
        "t3_pr",
    ),
    ("IFEval P-strict", _metric("ifeval", "prompt_level_strict"), "ifeval_prompt"),
    ("IFEval I-strict", _metric("ifeval", "instruction_level_strict"), "ifeval_instr"),
    ("IFEval P-loose", _metric("ifeval", "prompt_level_loose"), None),
    ("IFEval I-loose", _metric("ifeval", "instruction_level_loose"), None),
)


def pipeline_rows(sweep: Sweep) -> list[tuple[str, Run | None]]:
    """(label, run or None) for each of the six pipelines, in the paper's order."""
    out = []
    for key, label in PIPELINES:
        run = sweep.pipeline(*key)
        out.append((run.meta.row if run else f"{label} (not done)", run))
    return out


@register("main")
def main_table(sweep: Sweep) -> Table:
    rows: list[list[str] | None] = []
    stats: list[list[Stat | None]] = []
    for label, run in pipeline_rows(sweep):
        row = [get(run) if run else None for _, get, _ in COLUMNS]
        stats.append(row)
        rows.append([label, *map(pm, row)])
    rows.append(["n (cases)", *(n_range(col) for col in zip(*stats))])
    rows.append(RULE)
    for name, values in reported.MAIN.items():
        cells = [paper_cell(values.get(key)) if key else "–" for *_, key in COLUMNS]
        rows.append([f"paper: {name}", *cells])
    drop = reported.FIXED_SFT_DROP
    cells = [paper_cell(drop.get(key), signed=True) for *_, key in COLUMNS]
    rows.append(["paper: fixed-harness SFT − base (points)", *cells])
    return Table(
        name="main",
        title="Main results",
        caption=(
            f"Ours at {sweep.scale_note()}; mean ± half-width of the 95 % "
            "bootstrap interval over cases, in %. PR: T3's Prompt Robustness "
            "subset. The last rows are the paper's reported numbers (PAPER.md)."
        ),
        header=["run", *(h for h, _, _ in COLUMNS)],
        rows=rows,
        notes=[
            "Paper: its T1/T2 metric is not named (shown under accuracy), nor "
            "whether IFEval is strict or loose (shown under strict); its base "
            "IFEval is derived (HAT is +2.0 / +1.0 over it).",
            *skipped_note(sweep),
        ],
    )
