"""Train one HAT stage from a config file (`hat train STAGE`).

Examples:
  hat train sft --config=experiments/configs/sft_tiny.py:steps=200 \\
      --workdir runs/sft_tiny --config.data.train=data/sft.jsonl
  hat train sft --config=experiments/configs/sft_tiny.py --workdir runs/sft_tiny \\
      --config.init_from=smollm2-135m-instruct --config.optim.lr=1e-4
  hat train opd --config=experiments/configs/opd_tiny.py:steps=50 --workdir runs/opd \\
      --config.data.train=data/prompts.jsonl --config.init_from=runs/sft_tiny \\
      --config.init_teacher_from=smollm2-135m-instruct
  hat train rl --config=experiments/configs/rl_tiny.py:steps=20 --workdir runs/rl \\
      --config.init_from=runs/sft_tiny

The workdir receives config.json, metrics.jsonl, tb/ (TensorBoard) and ckpt/; run
the same command again to resume from its latest checkpoint (data order included).
A rerun with another model, data or optimiser setting is refused, naming the keys:
`--fresh` deletes the earlier run and starts over, `--allow-config-change` resumes
anyway and records the change in metrics.jsonl (hat_jax/train/workdir.py).
`--print-config` prints the resolved config (the file, its argument string and
every --config.KEY override) and exits: nothing is run or written.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

from hat_jax.cli.config_flags import add_config_args
from hat_jax.cli.plugins import load_object, reason

# stage -> "module:function" of its runner `run(cfg, workdir, progress=...)`, which
# returns (state, graphdef, last metrics); imported lazily so `hat --help` stays
# fast. Packages above hat_jax may add stages through the entry-point group
# `hat.stages`; RL's environment is an agent task (`hat.tasks`, e.g. the
# simulator: hat_jax.train.agent_task).
BUILTIN_STAGES = {
    "sft": "hat_jax.train.sft:run_sft",
    "opd": "hat_jax.train.opd:run_opd",
    "rl": "hat_jax.train.rl_run:run_rl",
}
STAGE_GROUP = "hat.stages"


def stages() -> dict[str, str]:
    """The built-in stages merged with those declared in `hat.stages` entry points.

    A plugin may not replace a built-in stage (the built-in wins).
    """
    found = {ep.name: ep.value for ep in entry_points(group=STAGE_GROUP)}
    return {**found, **BUILTIN_STAGES}


def load_runner(spec: str):
    """The runner function named by `"module:function"`.

    Stages load lazily (only the one run), so a plugin stage that fails to
    import is reported by `run` with its error type and message.
    """
    _, sep, fn = spec.partition(":")
    if not sep or not fn:
        raise ValueError(f"a stage runner must be 'module:function', got {spec!r}")
    return load_object(spec)


def add_arguments(p) -> None:
    p.add_argument("stage", choices=sorted(stages()), help="which stage to run")
    p.add_argument("--workdir", help="run folder (created; resumed); required to train")
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as JSON and exit (no workdir needed)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--fresh",
        action="store_true",
        help="delete the workdir's checkpoints, metrics and config.json; start over",
    )
    p.add_argument(
        "--allow-config-change",
        action="store_true",
        help="resume a checkpoint of another config (the change is recorded in "
        "metrics.jsonl)",
    )
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE


def run(args) -> int:
    from hat_jax.cli.config_flags import ConfigError, load_config
    from hat_jax.train.metrics import NonFiniteError
    from hat_jax.train.workdir import RunConfigError

    try:
        cfg = load_config(args.config, getattr(args, "config_overrides", []))
    except ConfigError as e:
        print(f"hat train: error: {e}", file=sys.stderr)
        return 2
    table = stages()
    if args.stage not in table:
        print(f"hat train: error: unknown stage {args.stage!r}", file=sys.stderr)
        return 2
    if getattr(args, "print_config", False):
        import json

        print(json.dumps(cfg.to_dict(), indent=1, sort_keys=True, default=str))
        return 0
    if not getattr(args, "workdir", None):
        print("hat train: error: --workdir is required to train", file=sys.stderr)
        return 2
    from hat_jax.parallel.placement import mesh_sizes

    if mesh_sizes(cfg) is not None:  # on a mesh: join the other hosts, if any, first
        from hat_jax.parallel.distributed import initialize

        initialize()
    try:
        runner = load_runner(table[args.stage])
    except Exception as e:  # noqa: BLE001 - not installed here, or broken: say which
        why = reason(e)
        print(
            f"hat train: error: stage {args.stage!r} could not be loaded: {why}",
            file=sys.stderr,
        )
        return 2
    # only flags given reach the runner: a plugin stage may not take them
    flags = ("fresh", "allow_config_change")
    kw = {k: True for k in flags if getattr(args, k, False)}
    try:
        _, _, last = runner(cfg, args.workdir, progress=not args.no_progress, **kw)
    except RunConfigError as e:
        print(f"hat train: error: {e}", file=sys.stderr)
        return 2
    except NonFiniteError as e:
        print(f"hat train: error: {e}", file=sys.stderr)
        return 1
    loss = last.get("train/loss", float("nan"))
    print(f"trained {cfg.train.steps} steps; last loss {loss:.4f} -> {args.workdir}")
    return 0
