"""Run one pipeline: its data, tokenizer, training stages and evaluation.

The config file's `get_config(ARG)` gives the run; with `--run NAME` the run
of that name from the file's `sweep` instead. Steps already computed under ROOT
(by this or any other run: their folders are keyed by what they compute) are
reused; an interrupted run resumes where it stopped. `--dry-run` prints the
plan (`experiments.driver.dryrun`), `--print-config` the resolved stage configs
(`experiments.driver.show_config`); both run and write nothing.

Examples:
  hat run --config=experiments/configs/hat_tiny.py --run hsa_sft --root runs/hat_tiny
  hat run --config=experiments/configs/hat_tiny.py:scale=micro,run=hat \\
      --root /tmp/micro
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from experiments.driver.cpus import parse as parse_cpus
from hat_jax.cli.config_flags import add_config_args


def add_arguments(p) -> None:
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE
    p.add_argument("--run", help="the run of this name from the file's sweep")
    p.add_argument("--root", required=True, help="output root (created; resumed)")
    p.add_argument("--no-bars", action="store_true", help="no per-step progress bars")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (each step: cached or why it would run; the ETA); "
        "run and write nothing",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the run's resolved stage configs (every step's spec); "
        "run and write nothing",
    )
    p.add_argument(
        "--jax-cache",
        help="XLA compilation cache folder (default ROOT/_jax_cache; '' for none)",
    )
    p.add_argument(
        "--cpus",
        type=parse_cpus,
        help="run on these CPUs only, e.g. 0 or 0-1,3 (set before JAX starts; "
        "XLA sizes its threads to them)",
    )


def select(runs, name: str | None, spec: str):
    """The run named ``name`` (the only one when ``name`` is None)."""
    if name is None:
        return runs[0]
    found = [r for r in runs if r.name == name]
    if not found:
        names = ", ".join(r.name for r in runs)
        raise ValueError(f"{spec} declares no run {name!r}; have: {names}")
    return found[0]


def run(args) -> int:
    from experiments.driver import runs as R
    from experiments.driver.dryrun import print_plan
    from experiments.driver.pipeline import cache_folder, enable_compile_cache
    from experiments.driver.progress import Progress
    from experiments.driver.summary import print_summary

    root = Path(args.root)
    dry = getattr(args, "dry_run", False) or getattr(args, "print_config", False)
    if getattr(args, "cpus", None):
        from experiments.driver.cpus import pin

        pin(args.cpus)  # before the first JAX computation starts XLA's threads
        print(f"hat run: on CPUs {','.join(map(str, args.cpus))}", flush=True)
    if not dry:
        enable_compile_cache(cache_folder(args, root))
    overrides = getattr(args, "config_overrides", [])
    if args.run is None:
        found, _ = R.load_runs(args.config, root, overrides, use_sweep=False)
    else:
        found, _ = R.load_runs(args.config, root, overrides)
    chosen = select(found, args.run, args.config)
    if getattr(args, "print_config", False):
        from experiments.driver.show_config import print_config

        print_config(chosen)
        return 0
    if dry:
        print_plan([chosen], root, prog="hat run")
        return 0
    progress = Progress(chosen.steps, n_runs=1)
    try:
        R.execute_run(chosen, root, progress=progress, bars=not args.no_bars)
    except Exception as e:  # reported; run.json holds the traceback
        print(f"hat run: run {chosen.name} failed: {e}", file=sys.stderr)
        print_summary(root, [chosen])
        return 1
    print_summary(root, [chosen])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``hat run`` on its own (``python -m experiments.driver.run_cmd``):
    bad input is one line on stderr and status 1, as under ``hat``."""
    from hat_jax.cli.main import run_module

    return run_module("hat run", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
