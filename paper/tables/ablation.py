"""The HSA-dimension ablation: full HSA-SFT vs each dimension left out.

Per suite (T2, then T1): the reference run and each left-out run with its
cases (n), success, accuracy and effectiveness, and the paired change in
success and accuracy from the reference (``paper.compare``).
"""

from __future__ import annotations

from paper.compare import METHOD, run_diff
from paper.render import MISSING, RULE, Table, diff
from paper.results import Run, Stat, Sweep
from paper.tables.main import LEAD, MEASURES, sim_cells
from paper.tables.registry import register, skipped_note

# The five HSA dimensions, in the paper's order.
DIMENSIONS = ("skill_ids", "skill_content", "tools", "prompt", "hooks")
DIMENSION_NAMES = {
    "skill_ids": "skill identifiers",
    "skill_content": "skill content",
    "tools": "tool schemas",
    "prompt": "system-prompt structure",
    "hooks": "hook behaviour",
}
SUITES = (("t2", "T2"), ("t1", "T1"))
DELTAS = (LEAD, "accuracy")  # the changes shown


def groups(sweep: Sweep) -> list[tuple[Run | None, dict[str, Run]]]:
    """(reference run, {dimension: run}) per pipeline that has ablation runs."""
    by_pipeline: dict[tuple, dict[str, Run]] = {}
    for r in sweep.runs:
        if r.meta.leave_out:
            by_pipeline.setdefault(r.meta.pipeline, {})[r.meta.leave_out] = r
    return [(sweep.pipeline(*key), runs) for key, runs in by_pipeline.items()]


def effects(
    ref: Run | None, run: Run | None, metric: str = LEAD
) -> dict[str, Stat | None]:
    """suite -> (left-out run − reference) on ``metric``, paired."""
    return {
        s: run_diff(run, ref, s, metric) if ref and run else None for s, _ in SUITES
    }


@register("ablation")
def ablation_table(sweep: Sweep) -> Table:
    rows: list[list[str] | None] = []
    for ref, runs in groups(sweep):
        ref_label = ref.meta.row if ref else "reference (not done)"
        dims = [*DIMENSIONS, *sorted(set(runs) - set(DIMENSIONS))]
        for suite, title in SUITES:
            if rows:
                rows.append(RULE)
            cells = sim_cells(ref, suite, None)
            rows.append([title, f"none ({ref_label})", *cells, MISSING, MISSING])
            for dim in dims:
                run = runs.get(dim)
                label = DIMENSION_NAMES.get(dim, dim) + ("" if run else " (not done)")
                d = [
                    run_diff(run, ref, suite, m) if ref and run else None
                    for m in DELTAS
                ]
                rows.append([title, label, *sim_cells(run, suite, None), *map(diff, d)])
    if not rows:
        rows.append(["–", "no ablation runs", *[MISSING] * (2 + len(MEASURES))])
    return Table(
        name="ablation",
        title="HSA-dimension ablation",
        caption=(
            f"Ours at {sweep.scale_note()}: per suite, HSA-SFT with every HSA "
            "dimension (none left out) and with one left out: cases (n), success, "
            "accuracy and effectiveness in %, and the change in success and in "
            "accuracy from the reference in points, over the cases both answered. "
            f"{METHOD}"
        ),
        header=[
            "suite",
            "left out",
            "n",
            *MEASURES,
            "Δ success",
            "Δ accuracy",
        ],
        rows=rows,
        notes=[
            "The paper (PAPER.md) reports no per-dimension ablation; its stage "
            "ablation (HSA-SFT +9.4, HSA-RL +1.0 IFEval prompt-level points) is in "
            "the IFEval table.",
            *skipped_note(sweep),
        ],
    )
