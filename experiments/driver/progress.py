"""One line per step: which run and step, elapsed time and an ETA.

The ETA sums the expected seconds (``est_s``) of the steps still to compute,
each counted once however many runs share it (a training step that resumes
from a checkpoint counts its steps left only: `resume_point`), scaled by how
the steps done so far compared with their estimates (after a 60 s prior at
par).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from experiments.driver import pipeline

PRIOR_S = 60.0


def clock(seconds: float) -> str:
    s = int(round(max(seconds, 0.0)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def resume_point(folder: Path) -> tuple[int, int] | None:
    """(the newest checkpoint's step, the steps configured) of an unfinished
    training step's folder (``ckpt/<step>`` beside ``config.json``'s
    ``train.steps``), or None when it has neither."""
    try:
        steps = json.loads((folder / "config.json").read_text())["train"]["steps"]
        saved = [int(p.name) for p in (folder / "ckpt").iterdir() if p.name.isdigit()]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not saved or not isinstance(steps, int) or steps <= 0:
        return None
    return min(max(saved), steps), steps


def left_share(step: pipeline.Step) -> float:
    """The share of ``step``'s work still to do: 1 unless it resumes."""
    point = None if step.done else resume_point(step.path)
    return 1.0 if point is None else 1.0 - point[0] / point[1]


class Progress:
    """Prints progress lines for the steps of many runs."""

    def __init__(self, steps: Iterable[pipeline.Step], *, n_runs: int, stream=None):
        self.stream = stream or sys.stdout
        self.pending = {s.path: s.est_s * left_share(s) for s in steps if not s.done}
        self.n_runs, self.run_index, self.runs_seen = n_runs, 0, []
        self.t0 = time.perf_counter()
        self.spent = self.expected = 0.0

    def eta(self) -> float:
        # A prior of PRIOR_S seconds on time: one fast data step moves it little.
        ratio = (self.spent + PRIOR_S) / (self.expected + PRIOR_S)
        return sum(self.pending.values()) * min(max(ratio, 0.1), 10.0)

    def say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def start(self, run: str, step: pipeline.Step, i: int, n: int) -> None:
        if run not in self.runs_seen:
            self.runs_seen.append(run)
        what = "cached" if step.done else f"{step.kind}"
        self.say(
            f"[run {len(self.runs_seen)}/{self.n_runs} {run}] step {i + 1}/{n} "
            f"{step.name} ({what}) | elapsed {clock(time.perf_counter() - self.t0)}"
            f" | ETA {clock(self.eta())}"
        )

    def finish(self, step: pipeline.Step, outcome: pipeline.Outcome) -> None:
        est = self.pending.pop(step.path, None)
        if outcome.cached:
            return
        if est is not None:
            self.spent += outcome.seconds
            self.expected += est
        self.say(
            f"    {step.name} done in {outcome.seconds:.1f} s "
            f"(expected {step.est_s:.0f} s) -> {step.path}"
        )
