"""A sweep's steps as cluster jobs, through submitit (``hat sweep --launcher``).

    hat sweep --config=experiments/configs/hat_tiny.py --root /shared/runs/tiny \\
        --launcher slurm --launcher-arg slurm_partition=gpu \\
        --launcher-arg gpus_per_node=1 --launcher-arg timeout_min=600

Every step of the selected runs (a step several runs share, once) becomes one
job that runs `experiments.driver.step_cmd` on it; a job is submitted when
every step it refers to is done, so the scheduler never starts a step before
its inputs. ``--workers N`` caps the jobs in flight. A failed job fails its
step and every step after it; the other branches go on, and each run's
``run.json`` says done or failed as with local sweeps. Ctrl-C cancels the jobs
in flight; the same command later resumes (finished steps are kept, train
steps restart from their checkpoints). Jobs of two sweeps on one root share
steps through the same per-step locks as local runs.

A step planned with ``"nodes": N`` (not hashed: where a step runs does not
change what it computes) is one job of N tasks, one process per host
(``nodes=N, tasks_per_node=1`` on SLURM); the local executor, which has one
machine, runs N processes there. ``--launcher local`` (submitit's local
executor) runs the same path without a scheduler; the tests use it. Job logs:
``ROOT/_submitit/``. Requires ``pip install -e .[cluster]``.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from experiments.driver import pipeline
from experiments.driver import runs as R

LAUNCHERS = ("slurm", "local")
# submitit's own default limit is 5 minutes: far too short for a train step
DEFAULTS: dict[str, Any] = {"timeout_min": 24 * 60}
JOBS_DIR = "_submitit"


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as submitit parameters (literals as in config
    overrides: ``60``, ``1.5``, ``true``; anything else stays text)."""
    from hat_jax.cli.config_flags import parse_value

    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--launcher-arg expects KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(text, type(None), key.strip())
    return out


def job_shape(step: pipeline.Step, launcher: str) -> dict[str, int]:
    """The tasks a step's job gets: one process per host it is planned on."""
    nodes = int(step.spec.get("nodes") or 1)
    if nodes < 1:
        raise ValueError(f"step {step.name}: nodes must be >= 1, got {nodes}")
    if launcher == "local":  # one machine: the hosts are processes on it
        return {"tasks_per_node": nodes}
    return {"nodes": nodes, "tasks_per_node": 1}


def make_executor(launcher: str, folder: Path, params: dict[str, Any]):
    """submitit's executor for ``launcher`` with ``params`` (checked by submitit)."""
    if launcher not in LAUNCHERS:
        raise ValueError(f"unknown launcher {launcher!r}; have {LAUNCHERS}")
    try:
        import submitit
    except ImportError as e:
        raise ValueError(
            f"--launcher {launcher} needs submitit: pip install -e .[cluster] ({e})"
        ) from None
    executor = submitit.AutoExecutor(folder=folder, cluster=launcher)
    executor.update_parameters(**(DEFAULTS | params))
    return executor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step_graph(runs: Sequence[R.Run]):
    """(steps by folder, the folders each step's inputs are in), shared once."""
    steps: dict[Path, pipeline.Step] = {}
    deps: dict[Path, set[Path]] = {}
    for r in runs:
        for s in r.steps:
            steps[s.path] = s
            deps[s.path] = {r.by_name[d].path for d in s.deps}
    return steps, deps


def _why(job) -> str:
    try:
        error = job.exception()
    except Exception as e:  # noqa: BLE001 - the scheduler lost it: say so
        error = e
    text = str(error or job.state).split("You can check full logs")[0]
    lines = [ln for ln in text.splitlines() if ln.strip(" -")]  # not the rulers
    return lines[-1] if lines else job.state


def launch(
    runs: Sequence[R.Run],
    command: Callable[[pipeline.Step, dict[str, int]], list[str]],
    executor,
    launcher: str,
    *,
    max_jobs: int | None = None,
    poll_s: float = 2.0,
    say: Callable[[str], None] = print,
) -> set[Path]:
    """Submits every unfinished step when its inputs are done; waits for all.

    Args:
      runs: the runs whose steps to compute.
      command: (step, job shape) -> the argv the job runs.
      executor: a submitit executor (`make_executor`).
      launcher: "slurm" or "local" (the job shape, `job_shape`).
      max_jobs: at most this many jobs in flight (None: no cap).

    Returns:
      The folders of the steps that failed or could not run after a failure.
    """
    from submitit.helpers import CommandFunction

    steps, deps = step_graph(runs)
    todo = {p for p, s in steps.items() if not s.done}
    order = list(steps)  # plan order: a step's inputs come before it
    n, running, failed = len(todo), {}, set()
    t0 = time.perf_counter()

    def line(text: str) -> None:
        done = n - len(todo) - len(running)
        say(f"[{done}/{n} | {time.perf_counter() - t0:.0f} s] {text}")

    try:
        while todo or running:
            moved = False
            for p in [p for p in order if p in todo]:
                s = steps[p]
                if deps[p] & failed:
                    todo.discard(p)
                    failed.add(p)
                    line(f"{s.name}: not run (an input failed)")
                    moved = True
                elif all(steps[d].done for d in deps[p]):
                    if max_jobs is not None and len(running) >= max_jobs:
                        break
                    shape = job_shape(s, launcher)
                    executor.update_parameters(name=s.path.name, **shape)
                    fn = CommandFunction(command(s, shape), verbose=False)
                    running[p] = executor.submit(fn)
                    todo.discard(p)
                    tasks = shape.get("nodes", 1) * shape["tasks_per_node"]
                    line(
                        f"{s.name} ({s.kind}, {tasks} task(s)): job {running[p].job_id}"
                    )
                    moved = True
            for p, job in list(running.items()):
                if job.done():
                    del running[p]
                    moved = True
                    if steps[p].done:
                        line(f"{steps[p].name}: done -> {p}")
                    else:
                        failed.add(p)
                        log = job.paths.stderr
                        line(f"{steps[p].name}: FAILED: {_why(job)} (log {log})")
            if not moved:
                if not running:  # inputs neither done nor coming: a lost step
                    for p in todo:
                        line(f"{steps[p].name}: not run (its inputs are not done)")
                    return failed | todo
                time.sleep(poll_s)
    except KeyboardInterrupt:
        for job in running.values():
            job.cancel(check=False)
        say(f"interrupted: cancelled {len(running)} job(s); run again to resume")
        raise
    return failed


def record_runs(runs: Sequence[R.Run], root: Path, failed: set[Path]) -> list[str]:
    """Writes each run's folder (config.json, run.json, eval link); the failed runs.

    Every step is done or failed by now: a done run's steps are all cached; a
    run with a failed step is recorded failed, naming the step.
    """

    def stop(step: pipeline.Step) -> None:  # a step that is not done by now
        why = "failed" if step.path in failed else "did not run"
        raise RuntimeError(f"step {step.name} {why} on the cluster")

    bad = []
    for r in runs:
        try:
            R.execute_run(r, root, before=stop, bars=False)
        except RuntimeError as e:
            print(f"hat sweep: run {r.name} failed: {e}", file=sys.stderr)
            bad.append(r.name)
    return bad


def step_command(args, root: Path) -> Callable[[pipeline.Step, dict], list[str]]:
    """The argv of a step's job, from the sweep's own arguments."""
    base = [sys.executable, "-m", "experiments.driver.step_cmd"]
    base += ["--config", args.config, "--root", str(root.resolve())]
    base += [f"--config.{o}" for o in getattr(args, "config_overrides", [])]
    base += ["--jax-cache", pipeline.cache_folder(args, root.resolve())]

    def command(step: pipeline.Step, shape: dict[str, int]) -> list[str]:
        argv = [*base, "--step", step.path.name]
        if args.launcher == "local" and shape["tasks_per_node"] > 1:
            argv += ["--coordinator", f"127.0.0.1:{free_port()}"]
        return argv

    return command


def run_sweep(
    args, runs: Sequence[R.Run], root: Path, *, poll_s: float = 2.0
) -> list[str]:
    """``hat sweep --launcher``: the steps as jobs, then the runs' records;
    returns the names of the runs that failed."""
    params = parse_params(getattr(args, "launcher_arg", None) or [])
    executor = make_executor(args.launcher, root / JOBS_DIR, params)
    command = step_command(args, root)
    failed = launch(
        runs, command, executor, args.launcher, max_jobs=args.workers, poll_s=poll_s
    )
    return record_runs(runs, root, failed)
