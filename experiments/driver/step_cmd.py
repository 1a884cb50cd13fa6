"""Compute one step of a sweep: the command a cluster job runs.

``hat sweep --launcher slurm|local`` (`experiments.driver.launch`) submits one
job per step that is ready (every step it refers to is done) with this command::

    python -m experiments.driver.step_cmd --config FILE[:ARG] --root ROOT \\
        --step NAME-HASH [--config.KEY=VALUE ...]

It plans the sweep again and computes the step whose folder is
``ROOT/_steps/NAME-HASH`` through `pipeline.execute` (the shared-step lock,
``done.json`` written last). If the plan no longer has that folder (the config
or the code changed since the job was submitted) it computes nothing and
says so. A step planned on ``nodes: N`` hosts runs as N tasks, one process per
host, joined into one JAX runtime (`hat_jax.parallel.initialize`; SLURM's own
variables, or the local executor's, give the ranks); every task computes the
step and task 0 alone holds the lock and writes ``done.json``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from hat_jax.cli.config_flags import add_config_args

# (rank, number of tasks) variables: SLURM's, then submitit's local executor's.
_TASK_ENV = (
    ("SLURM_PROCID", "SLURM_NTASKS"),
    ("SUBMITIT_LOCAL_GLOBALID", "SUBMITIT_LOCAL_NTASKS"),
)


def task(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """This process's (rank, number of tasks) in its job; (0, 1) outside one."""
    env = os.environ if environ is None else environ
    for rank, n in _TASK_ENV:
        if env.get(rank) is not None and env.get(n) is not None:
            return int(env[rank]), int(env[n])
    return 0, 1


def join(rank: int, n_tasks: int, coordinator: str | None) -> None:
    """Joins the job's tasks into one JAX runtime (nothing for one task).

    Under SLURM `jax.distributed.initialize` reads the job's own variables; the
    local executor's tasks meet at ``coordinator`` (chosen by the launcher).
    """
    if n_tasks <= 1:
        return
    from hat_jax.parallel.distributed import initialize

    if coordinator is None:
        initialize()
    else:
        initialize(coordinator, n_tasks, rank)


def add_arguments(p) -> None:
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE
    p.add_argument("--root", required=True, help="the sweep's output root")
    p.add_argument("--step", required=True, help="the step's folder name NAME-HASH")
    p.add_argument(
        "--coordinator",
        help="HOST:PORT where a multi-task job's processes meet (default: "
        "the scheduler's variables, e.g. SLURM's)",
    )
    p.add_argument(
        "--jax-cache",
        help="XLA compilation cache folder (default ROOT/_jax_cache; '' for none)",
    )


def find(runs, folder: str):
    """(the step whose folder is ``folder``, the steps of its run by name)."""
    for r in runs:
        for s in r.steps:
            if s.path.name == folder:
                return s, r.by_name
    return None, None


def run(args) -> int:
    from experiments.driver import pipeline, registry
    from experiments.driver import runs as R

    rank, n_tasks = task()
    join(rank, n_tasks, args.coordinator)  # before JAX starts its backends
    root = Path(args.root)
    overrides = getattr(args, "config_overrides", [])
    runs, _ = R.load_runs(args.config, root, overrides)
    step, by_name = find(runs, args.step)
    if step is None:
        print(
            f"hat step: {args.config} plans no step {args.step!r} under {root} "
            "(its config or code changed since it was submitted); nothing computed",
            file=sys.stderr,
        )
        return 2
    missing = [d for d in step.deps if not by_name[d].done]
    if missing:
        print(f"hat step: {step.name}: inputs not done: {missing}", file=sys.stderr)
        return 2
    pipeline.enable_compile_cache(pipeline.cache_folder(args, root))
    if rank == 0:
        out = pipeline.execute(step, by_name, progress=False)
        print(f"{step.name}: {'cached' if out.cached else 'done'} -> {step.path}")
    else:  # the other hosts compute with task 0, which records the step
        step.path.mkdir(parents=True, exist_ok=True)
        params = pipeline.resolved(step, by_name)
        registry.get(step.kind).run(params, step.path, progress=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``hat step`` on its own (``python -m experiments.driver.step_cmd``):
    bad input is one line on stderr and status 1, as under ``hat``."""
    from hat_jax.cli.main import run_module

    return run_module("hat step", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
