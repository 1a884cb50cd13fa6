"""Runs of a pipeline config and their folders (the layout `paper/` reads).

A pipeline config's ``get_config(arg)`` returns one run::

    name        the run's folder name under ROOT
    meta        {row, group, sft, opd, rl, leave_out, scale} (table labels)
    steps       {step name: {kind, ...params}} (`pipeline.plan`)
    stages      {"base"|"sft"|"opd"|"rl": train step name}
    eval_step   the step whose folder is the run's evaluation

and ``sweep(add, arg=None)`` beside it calls ``add(name, **kv)`` once per run,
``kv`` being `get_config` arguments added to ``arg``. Each run gets::

    ROOT/<run>/config.json  the config (meta included), each step's folder
                            and "provenance" (`hat_jax.provenance.collect`)
    ROOT/<run>/run.json     {status, seconds, stages: {label: {path, seconds}},
                            provenance}
    ROOT/<run>/eval         -> ../_steps/eval-<hash> (summary.json, records)
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_collections

from experiments.driver import pipeline
from experiments.driver.progress import Progress
from hat_jax import provenance
from hat_jax.jsonl import read_json


@dataclass
class Run:
    name: str
    config: ml_collections.ConfigDict
    steps: list[pipeline.Step] = field(default_factory=list)

    @property
    def by_name(self) -> dict[str, pipeline.Step]:
        return {s.name: s for s in self.steps}


def _arg_text(arg: str | None, kv: dict[str, Any]) -> str:
    parts = [arg] if arg else []
    parts += [f"{k}={v}" for k, v in kv.items()]
    return ",".join(parts)


def load_runs(
    spec: str, root: str | Path, overrides=(), *, use_sweep: bool = True
) -> tuple[list[Run], bool]:
    """The runs of ``FILE[:ARG]``: its sweep's, or its one `get_config` run.

    Args:
      spec: the config file and its argument.
      root: the output root the steps are planned under.
      overrides: ``KEY=VALUE`` strings applied to every run's config.
      use_sweep: False: the one run of `get_config(ARG)` even with a sweep.

    Returns:
      (runs planned under ``root``, whether the file declares a sweep).
    """
    from hat_jax.cli.config_flags import _import_file, apply_overrides

    path, _, arg = spec.partition(":")
    module = _import_file(path)
    declared: list[tuple[str, str]] = []
    sweep = getattr(module, "sweep", None)
    if callable(sweep) and use_sweep:
        sweep(lambda name, **kv: declared.append((name, _arg_text(arg, kv))), arg)
    else:
        declared.append(("", arg))
    runs, seen = [], set()
    for name, text in declared:
        cfg = apply_overrides(module.get_config(text or None), overrides)
        name = name or cfg.get("name") or Path(path).stem
        if name in seen:
            raise ValueError(f"{path}: run {name!r} is declared twice")
        seen.add(name)
        runs.append(Run(name, cfg, pipeline.plan(cfg.steps.to_dict(), root)))
    return runs, callable(sweep)


def _rel(path: Path, root: Path) -> str:
    return os.path.relpath(path, root)


def _write_config(run: Run, root: Path, origin: dict[str, Any]) -> None:
    record = run.config.to_dict()
    record["name"] = run.name
    record["step_folders"] = {s.name: _rel(s.path, root) for s in run.steps}
    record["provenance"] = origin  # the file itself is the resolved config
    pipeline.write_json(root / run.name / "config.json", record)


def _stage_record(run: Run, outcomes: dict[str, pipeline.Outcome], root: Path):
    stages = {}
    for label, step_name in run.config.get("stages", {}).items():
        step = run.by_name[step_name]
        entry: dict[str, Any] = {"path": _rel(step.path, root)}
        if step_name in outcomes:
            entry["seconds"] = outcomes[step_name].seconds
        stages[label] = entry
    return stages


def _link_eval(run: Run, root: Path) -> None:
    _link(run.by_name[run.config.eval_step].path, root / run.name / "eval")
    if "replay" in run.by_name:  # the latency replay (hat_pipeline)
        _link(run.by_name["replay"].path, root / run.name / "replay")


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() or link.exists():
        if link.is_symlink() and os.readlink(link) == _rel(target, link.parent):
            return
        link.unlink()
    link.symlink_to(_rel(target, link.parent), target_is_directory=True)


def is_finished(run: Run, root: Path) -> bool:
    """run.json says done and every step of the run still has its done.json."""
    path = Path(root) / run.name / "run.json"
    if not path.exists():
        return False
    record = json.loads(path.read_text())
    return record.get("status") == "done" and all(s.done for s in run.steps)


def execute_run(
    run: Run,
    root: str | Path,
    *,
    progress: Progress | None = None,
    before: Callable[[pipeline.Step], None] | None = None,
    bars: bool = True,
) -> dict[str, Any]:
    """Runs (or resumes) every step of ``run``; writes its folder; returns run.json.

    A failing step marks the run ``failed`` (with the error) and re-raises.
    """
    root = Path(root)
    (root / run.name).mkdir(parents=True, exist_ok=True)
    origin = provenance.collect()
    _write_config(run, root, origin)
    t0 = time.perf_counter()
    outcomes: dict[str, pipeline.Outcome] = {}
    record: dict[str, Any] = {"status": "running", "seconds": 0.0, "stages": {}}
    record["provenance"] = origin
    by_name = run.by_name

    def save() -> None:
        record["seconds"] = sum(o.seconds for o in outcomes.values())
        record["wall_seconds"] = time.perf_counter() - t0
        record["stages"] = _stage_record(run, outcomes, root)
        record["steps"] = {
            n: {"seconds": o.seconds, "cached": o.cached} for n, o in outcomes.items()
        }
        pipeline.write_json(root / run.name / "run.json", record)

    save()
    try:
        for i, step in enumerate(run.steps):
            if progress is not None:
                progress.start(run.name, step, i, len(run.steps))
            outcome = pipeline.execute(step, by_name, progress=bars, before=before)
            outcomes[step.name] = outcome
            if progress is not None:
                progress.finish(step, outcome)
            save()
        _link_eval(run, root)
        record["status"] = "done"
    except BaseException as e:
        record["status"] = "failed"
        record["error"] = f"{type(e).__name__}: {e}"
        record["traceback"] = traceback.format_exc(limit=8)
        raise
    finally:
        save()
    return record


def _listed_before(path: Path, config: str, arg: str) -> set[str]:
    """The runs an earlier ``sweep.json`` of the same config and arg listed (none
    if it is missing, unreadable or of another config)."""
    try:
        old = read_json(path)  # a regular file only: a fifo is refused, not read
    except (OSError, ValueError):  # DataError is a ValueError
        return set()
    if not isinstance(old, dict) or (old.get("config"), old.get("arg")) != (
        config,
        arg,
    ):
        return set()
    runs = old.get("runs")
    return {r for r in runs if isinstance(r, str)} if isinstance(runs, list) else set()


def write_sweep(
    root: Path, spec: str, runs: list[Run], defined: list[Run] | None = None
) -> None:
    """ROOT/sweep.json: the config, its arg, the scale and the runs in order.

    With ``defined`` (every run the config defines; `hat sweep --only` passes
    it), the runs an earlier sweep of the same config and arg listed stay listed
    beside ``runs``, in the config's order: a sweep over a few runs adds them to
    the root's list instead of hiding the others from `hat paper`.
    """
    path, _, arg = spec.partition(":")
    target = Path(root) / "sweep.json"
    if defined is not None:
        keep = {r.name for r in runs} | _listed_before(target, path, arg)
        runs = [r for r in defined if r.name in keep]
    scales = {r.config.get("meta", {}).get("scale") for r in runs}
    pipeline.write_json(
        target,
        {
            "config": path,
            "arg": arg,
            "scale": scales.pop() if len(scales) == 1 else sorted(map(str, scales)),
            "runs": [r.name for r in runs],
        },
    )
