"""Harness evolution per round (``hat evolve``), the paper's beside.

Reads ``ROOT/<run>/evolve/evolution.json`` (written by ``hat evolve --out
ROOT/<run>/evolve``): one row per accepted round (round 0 is the start
harness) with success, accuracy and effectiveness on the held-out test split
and success on dev, each with its 95 % interval, and what the round decided.
Runs without an evolution have no rows; without any the table says how to
make one.
"""

from __future__ import annotations

from hat_jax.jsonl import DataError, read_json
from hat_jax.printable import shown
from paper import reported
from paper.render import MISSING, RULE, Table, level, paper_cell
from paper.results import Stat, Sweep
from paper.tables.registry import register, skipped_note

HEADER = ["run", "round", "dev success", "test success", "test accuracy"]
HEADER += ["test effectiveness", "decision"]
FOLDER = "evolve"


def _stat(row: dict, split: str, metric: str, where: str) -> Stat | None:
    scores = row.get("scores")
    if not isinstance(scores, dict):
        raise DataError(f"{where}: field 'rows[].scores' must be an object")
    block = scores.get(split) or {}
    if not isinstance(block, dict):
        raise DataError(f"{where}: field 'rows[].scores.{split}' must be an object")
    return Stat.from_summary(block.get(metric), where, f"scores.{split}.{metric}")


def evolution_rows(run_name: str, ev: dict, where: str) -> list[list[str]]:
    rows, decisions = ev.get("rows"), ev.get("decisions")
    if not isinstance(rows, list) or not isinstance(decisions, list):
        raise DataError(f"{where}: expected fields 'rows' and 'decisions' (lists)")
    said = {
        d.get("round"): str(d.get("summary", ""))[:80]
        for d in decisions
        if isinstance(d, dict)
    }
    out = []
    for r in rows:
        if not isinstance(r, dict) or not isinstance(r.get("round"), int):
            raise DataError(f"{where}: each of 'rows' needs an integer 'round'")
        k = r["round"]
        out.append(
            [run_name, str(k), level(_stat(r, "dev", "success", where))]
            + [level(_stat(r, "test", m, where)) for m in ("success", "accuracy")]
            + [level(_stat(r, "test", "effectiveness", where))]
            + ["start harness" if k == 0 else said.get(k, MISSING)]
        )
    stopped = [d for d in decisions if isinstance(d, dict) and not d.get("accepted")]
    if stopped:
        last = stopped[-1]
        out.append([run_name, str(last.get("round")), *[MISSING] * 4])
        out[-1].append(str(last.get("summary", ""))[:80])
    return out


@register("evolution")
def build(sweep: Sweep) -> Table:
    rows: list[list[str] | None] = []
    for run in sweep.runs:
        path = run.path / FOLDER / "evolution.json"
        if path.exists():
            rows += evolution_rows(run.name, read_json(path), shown(path))
    notes = []
    if not rows:
        rows.append(["–"] * len(HEADER))
        notes.append(
            f"No run has an evolution: hat evolve --model ROOT/RUN/... --out "
            f"ROOT/RUN/{FOLDER} adds one."
        )
    rows.append(RULE)
    for name, (acc, eff) in reported.EVOLUTION.items():
        rows.append(
            ["paper", name, MISSING, MISSING, paper_cell(acc), paper_cell(eff)]
            + ["rounds 3-4 regressed" if name != "start" else "start harness"]
        )
    return Table(
        name="evolution",
        title="Harness evolution",
        caption=(
            "Per accepted round of hat evolve: success on dev (decided on) and "
            "success, accuracy, effectiveness on the held-out test split, with "
            f"95 % intervals. Paper: {reported.SOURCE}."
        ),
        header=HEADER,
        rows=rows,
        notes=notes + skipped_note(sweep),
    )
