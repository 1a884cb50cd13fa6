"""The closing summary of `hat run` / `hat sweep`: each run and its outputs."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.driver.progress import clock

# Headline metrics shown per run (when its evaluation has them).
HEADLINE = {
    "T1 acc": "eval/t1/accuracy",
    "T2 acc": "eval/t2/accuracy",
    "T3 acc": "eval/t3/accuracy",
    "IFEval prompt": "eval/ifeval/prompt_level_strict",
}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def print_summary(root: str | Path, runs, stream=None) -> None:
    """Prints status, compute time, headline metrics and output files per run."""
    root = Path(root)
    print(f"\n== summary: {root} ==", file=stream)
    for r in runs:
        rec = _read(root / r.name / "run.json")
        status = rec.get("status", "not run")
        line = f"{r.name:<24} {status:<8} {clock(rec.get('seconds', 0.0))}"
        metrics = _read(root / r.name / "eval" / "summary.json").get("metrics", {})
        shown = [
            f"{k} {100 * metrics[v]:.1f}" for k, v in HEADLINE.items() if v in metrics
        ]
        print(line + ("  " + " | ".join(shown) if shown else ""), file=stream)
        if status == "failed":
            print(f"    error: {rec.get('error')}", file=stream)
        for label, stage in rec.get("stages", {}).items():
            print(f"    {label:<5} {root / stage['path']}", file=stream)
        for name in ("config.json", "run.json", "eval/summary.json"):
            if (root / r.name / name).exists():
                print(f"    {root / r.name / name}", file=stream)
