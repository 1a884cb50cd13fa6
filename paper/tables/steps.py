"""The sweep's steps: what each computed and how long it took.

One row per step folder the sweep's runs use (``Run.step_folders``: the done
runs', then those of runs started but not done), each once, in pipeline order
(the order the runs list them, first use first): the step, the first run using
it and how many do, its kind, the wall seconds its ``done.json`` records over
all its attempts (``seconds_all``; older drivers timed only the last attempt,
which a note names; "–": not finished) and, for train steps, the steps
trained (the last logged step, else ``done.json``'s), ``train/loss``,
``train/accuracy`` and ``train/decision_accuracy`` (each the mean of its last
``TAIL`` logged values), and for RL steps the last ``eval/success``. The last
row is the total: shared steps count once, so it is the sweep's compute time
(`make reproduce`'s record).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hat_jax.jsonl import read_json
from hat_jax.train.metrics import read_metrics
from paper.checks import check_done, check_metric_rows
from paper.render import MISSING, RULE, Table
from paper.results import Run, Sweep, load_run
from paper.tables.registry import register

DONE = "done.json"  # experiments.driver.pipeline.DONE (paper imports no driver)
TAIL = 5  # logged values averaged for a train step's final loss and accuracies
# (column, metrics key, percent?) of a train step, each a mean over the tail
TRAIN = (
    ("loss", "train/loss", False),
    ("accuracy", "train/accuracy", True),
    ("decision acc.", "train/decision_accuracy", True),
)
EVAL_SUCCESS = "eval/success"


@dataclasses.dataclass
class StepFolder:
    """One step folder of a sweep and the runs using it."""

    name: str
    path: Path
    runs: list[str]
    done: dict | None  # its done.json (None: not finished)
    spec: dict  # done.json's, else the first run's config.json's

    @property
    def kind(self) -> str:
        return str(self.spec.get("kind") or (self.done or {}).get("kind") or "?")

    @property
    def stage(self) -> str | None:
        """A train step's stage (sft, opd, rl)."""
        return self.spec.get("stage") if self.kind == "train" else None

    @property
    def seconds(self) -> float | None:
        """Wall seconds over all timed attempts (older drivers: the last one)."""
        if self.done is None:
            return None
        total = self.done.get("seconds_all")
        return float(self.done["seconds"] if total is None else total)

    @property
    def attempts(self) -> int | None:
        """How many timed attempts it took (None: a driver that did not count)."""
        return None if self.done is None else self.done.get("attempts")

    @property
    def untimed(self) -> bool:
        """Whether some of its time is missing from ``seconds``: attempts before
        the driver timed them, or a driver that timed only the last one."""
        if self.done is None:
            return False
        untimed = self.done.get("untimed_before")
        return bool(untimed) or self.done.get("seconds_all") is None

    @property
    def finished(self) -> str | None:
        return None if self.done is None else self.done.get("finished")

    def metrics(self) -> list[dict]:
        path = self.path / "metrics.jsonl"
        return check_metric_rows(read_metrics(path), path) if path.exists() else []


def _read_done(path: Path) -> dict | None:
    return check_done(read_json(path), path) if path.exists() else None


def all_runs(sweep: Sweep) -> list[Run]:
    """The sweep's done runs, then those started but not done."""
    started = [
        load_run(sweep.root, name, done_only=False)[0] for name, _ in sweep.skipped
    ]
    return sweep.runs + [r for r in started if r is not None]


def sweep_steps(sweep: Sweep) -> list[StepFolder]:
    """Every step folder of the sweep's started runs, once, in pipeline order."""
    found: dict[Path, StepFolder] = {}
    for run in all_runs(sweep):
        specs = run.config.get("steps") or {}
        for name, path in run.step_folders().items():
            key = path.resolve()
            if key in found:
                found[key].runs.append(run.name)
                continue
            done = _read_done(path / DONE)
            spec = (done or {}).get("spec") or specs.get(name) or {}
            found[key] = StepFolder(name, path, [run.name], done, spec)
    return list(found.values())


def newest_finish(sweep: Sweep) -> str | None:
    """When the newest ``done.json`` of the sweep was written (ISO time)."""
    times = [s.finished for s in sweep_steps(sweep) if s.finished]
    return max(times) if times else None


def tail_mean(rows: list[dict], key: str, n: int = TAIL) -> float | None:
    """The mean of the last ``n`` values of ``key`` in ``rows`` (None if none)."""
    values = [float(r[key]) for r in rows if r.get(key) is not None][-n:]
    return sum(values) / len(values) if values else None


def _last(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return float(values[-1]) if values else None


def _num(x: float | None, percent: bool = False) -> str:
    if x is None:
        return MISSING
    return f"{100 * x:.1f}" if percent else f"{x:.3f}"


def _steps_trained(step: StepFolder, rows: list[dict]) -> str:
    logged = [int(r["step"]) for r in rows if "step" in r]
    if logged:
        return str(max(logged))
    steps = ((step.done or {}).get("info") or {}).get("steps")
    return MISSING if steps is None else str(steps)


def step_cells(step: StepFolder) -> list[str]:
    """[steps, loss, accuracy, decision acc., eval success] of a step."""
    if step.kind != "train":
        return [MISSING] * (2 + len(TRAIN))
    rows = step.metrics()
    cells = [_steps_trained(step, rows)]
    cells += [_num(tail_mean(rows, key), pct) for _, key, pct in TRAIN]
    rl = step.stage == "rl" or any(k.startswith("rl/") for r in rows for k in r)
    cells.append(_num(_last(rows, EVAL_SUCCESS), True) if rl else MISSING)
    return cells


def duration(seconds: float) -> str:
    """E.g. "1 h 02 min 05 s", "3 min 20 s", "12.5 s"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return (f"{h} h {m:02d} min" if h else f"{m} min") + f" {s:02d} s"


def _attempt_notes(steps: list[StepFolder]) -> list[str]:
    """Which steps were resumed, and which times are incomplete."""
    done = [s for s in steps if s.done is not None]
    resumed = [
        f"{s.name} ({s.runs[0]}, {s.attempts})" for s in done if (s.attempts or 1) > 1
    ]
    partial = [f"{s.name} ({s.runs[0]})" for s in done if s.untimed]
    notes = []
    if resumed:
        notes.append(
            "Resumed after a stop (attempts): " + ", ".join(resumed) + "; their "
            "seconds add up every attempt's wall time (stopped time included; "
            "a killed attempt's last half minute is lost)."
        )
    if partial:
        notes.append(
            "Times that may miss earlier attempts (a driver that timed only the "
            "last attempt wrote them, or an untimed attempt left work behind), so "
            "the total is a lower bound: " + ", ".join(partial) + "."
        )
    return notes


def _not_done(sweep: Sweep) -> list[str]:
    if not sweep.skipped:
        return []
    names = ", ".join(f"{n} ({why})" for n, why in sweep.skipped)
    return [f"Runs not done: {names}; their finished steps are counted."]


@register("steps")
def steps_table(sweep: Sweep) -> Table:
    steps = sweep_steps(sweep)
    rows: list[list[str] | None] = []
    for s in steps:
        kind = f"{s.kind} ({s.stage})" if s.stage else s.kind
        seconds = MISSING if s.seconds is None else f"{s.seconds:.1f}"
        rows.append([s.name, s.runs[0], str(len(s.runs)), kind, seconds])
        rows[-1] += step_cells(s)
    total = sum(s.seconds or 0.0 for s in steps)
    runs = len({r for s in steps for r in s.runs})
    rows += [RULE, ["total", MISSING, str(runs), MISSING, f"{total:.1f}"]]
    rows[-1] += [MISSING] * (2 + len(TRAIN))
    unfinished = [f"{s.name} ({s.runs[0]})" for s in steps if s.done is None]
    notes = [f"Total: {duration(total)} of compute over {len(steps)} steps."]
    if unfinished:
        notes.append(f"No done.json (not finished): {', '.join(unfinished)}.")
    notes += _attempt_notes(steps)
    return Table(
        name="steps",
        title="Steps and their time",
        caption=(
            f"Every step of the sweep's runs (done or not) at {sweep.scale_note()}, "
            "once each (shared steps count once), in pipeline order: the first run "
            "using it "
            "and how many do, its kind, the wall seconds it took over all its "
            "attempts (its done.json) "
            "and, for train steps, the steps trained, the train loss, token and "
            f"decision accuracy in % (each the mean of its last {TAIL} logged "
            "values) and, for RL, the last held-out success in %."
        ),
        header=["step", "run", "runs", "kind", "seconds", "steps"]
        + [c for c, _, _ in TRAIN]
        + ["eval success"],
        rows=rows,
        notes=[*notes, *_not_done(sweep)],
        align="llrlrrrrrr",
    )
