"""Run every run a config file's `sweep` declares, skipping finished ones.

Runs share steps through ROOT/_steps (the data, the tokenizer, the base model,
HSA-SFT are computed once). A run that fails is reported and the others go on;
the exit code is nonzero if any failed. Run the same command again after an
interruption: finished steps and runs are kept. With `--workers N` runs go to
N `hat run` processes (logs in ROOT/<run>/log.txt); a step two of them need is
computed by one while the other waits for it; `--pin-cores` gives each of them its
own 1/N of the CPUs (`experiments.driver.cpus`). With `--launcher slurm` each step
is a cluster job, submitted through submitit when its inputs are done
(`experiments.driver.launch`; `--launcher local` runs them on this machine).
`--dry-run` prints the plan (each step cached, or why it would run: not run
before, config, inputs or code changed) and the ETA, and runs and writes
nothing.

Examples:
  hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny
  hat sweep --config=experiments/configs/hat_tiny.py:scale=micro --root /tmp/m \\
      --only base,hsa_sft
  hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny --dry-run
  hat sweep --config=experiments/configs/hat_tiny.py --root /shared/tiny \\
      --launcher slurm --launcher-arg slurm_partition=gpu --launcher-arg timeout_min=600
"""

from __future__ import annotations

import argparse
import queue
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hat_jax.cli.argtypes import count
from hat_jax.cli.config_flags import add_config_args


def add_arguments(p) -> None:
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE
    p.add_argument("--root", required=True, help="output root (created; resumed)")
    p.add_argument(
        "--workers",
        type=count(1, 256),
        help="runs at once (default 1); with --launcher: jobs in flight (default: "
        "every step that is ready)",
    )
    p.add_argument(
        "--launcher",
        choices=("slurm", "local"),
        help="send each step to a scheduler through submitit as a job, submitted "
        "when its inputs are done ('local': submitit's local executor); needs "
        "the cluster extra",
    )
    p.add_argument(
        "--launcher-arg",
        action="append",
        metavar="KEY=VALUE",
        help="a submitit parameter for every job (repeatable), e.g. "
        "slurm_partition=gpu, gpus_per_node=1, timeout_min=600",
    )
    p.add_argument(
        "--pin-cores",
        action="store_true",
        help="with --workers N: each worker process on its own 1/N of this "
        "process's CPUs (on 2 cores, two runs on one core each)",
    )
    p.add_argument(
        "--only",
        type=_names,
        help="comma-separated run names (default: all); ROOT/sweep.json keeps "
        "listing the runs earlier sweeps of this config listed",
    )
    p.add_argument("--no-bars", action="store_true", help="no per-step progress bars")
    p.add_argument(
        "--print-config",
        metavar="RUN",
        help="print that run's resolved stage configs; run and write nothing",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (each step: cached or why it would run; the ETA); "
        "run and write nothing",
    )
    p.add_argument(
        "--jax-cache",
        help="XLA compilation cache folder (default ROOT/_jax_cache; '' for none)",
    )


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected names like base,hsa_sft: {text!r}")
    return names


def _subprocess_run(args, run, root: Path, cores: queue.Queue | None) -> bool:
    """One run in a `hat run` process; with ``cores``, on a CPU slice taken from
    the queue for the process's life."""
    from experiments.driver.pipeline import cache_folder

    cmd = [sys.executable, "-m", "experiments.driver.run_cmd"]
    cmd += ["--config", args.config, "--run", run.name, "--root", str(root)]
    cmd += [f"--config.{o}" for o in getattr(args, "config_overrides", [])]
    cmd += ["--no-bars", "--jax-cache", cache_folder(args, root)]
    mine = cores.get() if cores is not None else None
    if mine is not None:
        cmd += ["--cpus", ",".join(map(str, mine))]
    (root / run.name).mkdir(parents=True, exist_ok=True)
    try:
        with open(root / run.name / "log.txt", "a", encoding="utf-8") as log:
            return subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT) == 0
    finally:
        if mine is not None:
            cores.put(mine)


def _core_queue(args) -> queue.Queue | None:
    """The CPU slices of ``--pin-cores`` (one per worker), or None."""
    if not getattr(args, "pin_cores", False):
        return None
    from experiments.driver import cpus

    q: queue.Queue = queue.Queue()
    for s in cpus.slices(cpus.allowed(), args.workers or 1):
        q.put(s)
    return q


def run(args) -> int:
    from experiments.driver import runs as R
    from experiments.driver.dryrun import print_plan
    from experiments.driver.pipeline import cache_folder, enable_compile_cache
    from experiments.driver.progress import Progress
    from experiments.driver.summary import print_summary

    root = Path(args.root)
    dry = getattr(args, "dry_run", False) or bool(getattr(args, "print_config", None))
    if not dry:
        enable_compile_cache(cache_folder(args, root))
    all_runs, has_sweep = R.load_runs(
        args.config, root, getattr(args, "config_overrides", [])
    )
    if not has_sweep:
        print(f"hat sweep: {args.config} has no sweep(); running its one run")
    defined = all_runs
    if args.only:
        wanted = args.only
        unknown = sorted(set(wanted) - {r.name for r in all_runs})
        if unknown:
            raise ValueError(f"--only names unknown runs {unknown}")
        all_runs = [r for r in all_runs if r.name in wanted]
    if getattr(args, "pin_cores", False) and (
        getattr(args, "launcher", None) or (args.workers or 1) <= 1
    ):
        raise ValueError("--pin-cores needs --workers N (N > 1) without --launcher")
    if getattr(args, "print_config", None):
        from experiments.driver.run_cmd import select
        from experiments.driver.show_config import print_config

        print_config(select(all_runs, args.print_config, args.config))
        return 0
    cores = _core_queue(args)  # refuses more workers than CPUs before any work
    if dry:
        done = {r.name for r in all_runs if R.is_finished(r, root)}
        print_plan(all_runs, root, prog="hat sweep", finished=done)
        return 0
    R.write_sweep(root, args.config, all_runs, defined)
    todo = []
    for r in all_runs:
        if R.is_finished(r, root):
            print(f"[{r.name}] finished earlier; skipped")
        else:
            todo.append(r)
    steps = list({s.path: s for r in todo for s in r.steps}.values())
    progress = Progress(steps, n_runs=len(todo))
    failed: list[str] = []
    t0 = time.perf_counter()
    if getattr(args, "launcher", None):
        from experiments.driver.launch import run_sweep

        failed = run_sweep(args, todo, root)
    elif (args.workers or 1) <= 1:
        for r in todo:
            try:
                R.execute_run(r, root, progress=progress, bars=not args.no_bars)
            except Exception as e:  # reported; the sweep goes on
                print(f"hat sweep: run {r.name} failed: {e}", file=sys.stderr)
                failed.append(r.name)
    else:
        with ThreadPoolExecutor(args.workers) as pool:
            futures = {
                r.name: pool.submit(_subprocess_run, args, r, root, cores) for r in todo
            }
            for name, fut in futures.items():
                ok = fut.result()
                print(f"[{name}] {'done' if ok else 'FAILED'} ({root / name}/log.txt)")
                if not ok:
                    failed.append(name)
    print_summary(root, all_runs)
    print(f"sweep: {len(todo)} runs in {time.perf_counter() - t0:.0f} s -> {root}")
    if failed:
        print(f"hat sweep: failed runs: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``hat sweep`` on its own (``python -m experiments.driver.sweep_cmd``):
    bad input is one line on stderr and status 1, as under ``hat``."""
    from hat_jax.cli.main import run_module

    return run_module("hat sweep", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
