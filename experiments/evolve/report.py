"""An evolution's report: a per-round table beside the paper's, and a figure.

``OUT/evolution.json`` holds, for round 0 (the start harness) and each
accepted round, success, accuracy and effectiveness with 95 % intervals on
dev, regression and test, and every candidate with its edits and verdict;
``OUT/evolution.md`` is the table and ``OUT/evolution.png`` the figure. The
paper's row is its harness-evolution result (PAPER.md: accuracy /
effectiveness 82.40 / 87.16 -> 92.55 / 92.75 by round 2, rounds 3-4 regressed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hat_jax.eval.records import read_records
from hat_jax.eval.stats import case_mean_ci
from hat_jax.jsonl import read_json, write_text_atomic

METRICS = ("success", "accuracy", "effectiveness")
SPLITS = ("dev", "regression", "test")
PAPER = (
    "paper (Qwen3.6-35B-A3B HAT): accuracy / effectiveness 82.40 / 87.16 -> "
    "92.55 / 92.75 by round 2; rounds 3-4 regressed"
)


def scores(folder: Path) -> dict[str, dict]:
    """Metric means and intervals of each split's records under ``folder``."""
    out = {}
    for split in SPLITS:
        path = folder / split / "records.jsonl"
        if not path.exists():
            continue
        recs = read_records(path)
        out[split] = {m: case_mean_ci([r["scores"][m] for r in recs]) for m in METRICS}
    return out


def collect(out: Path) -> dict[str, Any]:
    """The rounds of the evolution under ``out`` as one JSON object."""
    rows = [{"round": 0, "harness": "round_00", "scores": scores(out / "round_00")}]
    decisions = []
    for path in sorted(out.glob("round_*/decision.json")):
        d = read_json(path)
        decisions.append(d)
        if d.get("accepted"):
            rows.append(
                {"round": d["round"], "harness": d["accepted"]}
                | {"scores": scores(out / d["accepted"])}
            )
    return {"rows": rows, "decisions": decisions, "paper": PAPER}


def _cell(s: dict | None) -> str:
    if not s or s.get("mean") is None:
        return "-"
    ci = s.get("ci")
    span = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
    return f"{100 * s['mean']:.1f}{span}"


def markdown(ev: dict[str, Any]) -> str:
    head = ["round", "harness"]
    head += [f"{s} {m}" for s in SPLITS for m in METRICS]
    lines = ["# Harness evolution", "", "| " + " | ".join(head) + " |"]
    lines.append("|" + "---|" * len(head))
    for r in ev["rows"]:
        cells = [str(r["round"]), r["harness"]]
        cells += [_cell(r["scores"].get(s, {}).get(m)) for s in SPLITS for m in METRICS]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Beside: {ev['paper']}.", "", "## Rounds", ""]
    for d in ev["decisions"]:
        lines.append(f"- round {d['round']}: {d['summary']}")
        lines.append(f"  - confirmed classes: {d.get('confirmed') or 'none'}")
        for c in d.get("candidates", []):
            edits = ", ".join(e["op"] for e in c.get("edits", [])) or "-"
            lines.append(f"  - {c['name']} [{edits}]: {c['verdict']}")
    return "\n".join(lines) + "\n"


def figure(ev: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [r["round"] for r in ev["rows"]]
    for split in SPLITS:
        ss = [r["scores"].get(split, {}).get("success") for r in ev["rows"]]
        if not all(s and s.get("mean") is not None for s in ss):
            continue
        ys = [100 * s["mean"] for s in ss]
        cis = [[100 * v for v in (s["ci"] or [s["mean"]] * 2)] for s in ss]
        err = [
            [max(0.0, y - lo) for y, (lo, _) in zip(ys, cis)],
            [max(0.0, hi - y) for y, (_, hi) in zip(ys, cis)],
        ]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=split)
    ax.set_xlabel("accepted round")
    ax.set_ylabel("success (%)")
    ax.set_xticks(xs)
    ax.set_title("Harness evolution (95 % intervals)")
    ax.legend()
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)
    plt.close(fig)


def write_report(out: str | Path) -> dict[str, Any]:
    """Writes evolution.json, evolution.md and evolution.png under ``out``."""
    out = Path(out)
    ev = collect(out)
    write_text_atomic(
        out / "evolution.json", json.dumps(ev, indent=1, ensure_ascii=False)
    )
    write_text_atomic(out / "evolution.md", markdown(ev))
    figure(ev, out / "evolution.png")
    return ev


def rows_table(rows: Sequence[dict]) -> str:
    """One line per row: round, test success (for logs)."""
    cells = [_cell(r["scores"].get("test", {}).get("success")) for r in rows]
    return "; ".join(
        f"round {r['round']}: test success {c}" for r, c in zip(rows, cells)
    )
