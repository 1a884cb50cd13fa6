"""Generate and inspect simulator datasets: gold trajectories as JSONL or tfds.

`generate` simulates rooms of one split (train, dev and test catalogs never
overlap), answers `--n` viewer messages with the oracle teacher under the
harness, optionally applies Harness-State Augmentation to each trajectory
(`--ops SPEC`, or a spec sampled per trajectory from `--family`; seeded by
(seed, index); invalid augmentations are counted and kept un-augmented), and
writes JSONL that is byte-identical for identical arguments. With `--format
tfds` the same rows go into a tensorflow-datasets ArrayRecord dataset folder
instead (`sim/tfds_builder.py`; split `--split`; each row's `trajectory` feature
is the JSONL line, byte for byte), built under a hidden temporary name and
renamed to `--out` when complete; `hat train sft --config.data.train=tfds:DIR`
reads it through tfds' data source and grain, with the same batches as the
JSONL. `report` prints a JSONL file's intent and language mix, statuses, tool
and skill stats and size.

Examples:
  hat sim generate --harness taolive_v1 --n 10000 --seed 0 --split train \\
      --out data/train.jsonl
  hat sim generate --harness taolive_v2 --n 500 --seed 1 --split dev \\
      --family tool_renames --fault-rate 0.1 --out data/dev_hsa.jsonl
  hat sim generate --harness taolive_v1 --n 200 --seed 2 --split test \\
      --ops "rename_tools|reorder_sections" --out data/test_ops.jsonl
  hat sim generate --harness taolive_v1 --n 10000 --seed 0 --split train \\
      --format tfds --out data/train_tfds     # then data.train=tfds:data/train_tfds
  hat sim generate --harness taolive_v1 --n 64 --seed 5 --split dev \\
      --prompt-format compact --compact-results --out data/dev_compact.jsonl
  hat sim report data/train.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from augment import apply_spec, sample_family_spec, validate_augmented
from augment.families import family_arg
from augment.spec import spec_arg
from hat_jax.cli.argtypes import count, finite, nonblank, seed
from hat_jax.harness import PROMPT_FORMATS, Harness, Trajectory, load_harness
from hat_jax.printable import shown
from sim.datasets import generate, make_cases, report, summarize, write_dataset
from sim.types import SPLITS

HSA_STREAM = 7  # keeps augmentation draws apart from other uses of (seed, index)
PROGRESS_MIN = 1000  # show a progress bar from this many trajectories up
MAX_N = 10_000_000  # trajectories one call writes at most
MAX_MESSAGES_PER_ROOM = 1000  # a room receives a few hundred in a stream
FORMATS = ("jsonl", "tfds")


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="sim_command", required=True)
    g = sub.add_parser(
        "generate", help="write gold trajectories as JSONL (or a tfds dataset)"
    )
    g.add_argument(
        "--harness", required=True, type=nonblank, help="harness folder or builtin name"
    )
    g.add_argument(
        "--n", type=count(1, MAX_N), required=True, help="number of trajectories"
    )
    g.add_argument("--seed", type=seed, default=0, help="dataset seed (default 0)")
    g.add_argument("--split", choices=SPLITS, default="train", help="catalog split")
    how = g.add_mutually_exclusive_group()
    how.add_argument(
        "--ops", type=spec_arg, help='HSA op spec, e.g. "rename_tools|format(xml)"'
    )
    how.add_argument(
        "--family", type=family_arg, help="sample an HSA spec per trajectory from this"
    )
    g.add_argument(
        "--fault-rate",
        type=finite(0, 1),
        default=0.0,
        help="per-call tool-fault rate, split evenly over timeout, malformed "
        "output and permission denied (default 0)",
    )
    g.add_argument(
        "--messages-per-room", type=count(1, MAX_MESSAGES_PER_ROOM), default=8
    )
    g.add_argument(
        "--prompt-format",
        choices=PROMPT_FORMATS,
        help="render the harness's system prompt in this format (default: the "
        "harness's own), e.g. compact for the tiny world",
    )
    g.add_argument(
        "--compact-results",
        action="store_true",
        help="tools return only the fields a reply needs (the tiny world's results)",
    )
    g.add_argument(
        "--reply-plan",
        action="store_true",
        help="the oracle's reasoning before a reply names what it says "
        '("Reply: decline the claim, give selling points.")',
    )
    g.add_argument(
        "--slips",
        type=float,
        default=0.0,
        help="share of cases whose first reply quotes wrong numbers, rejected "
        "by the hooks before the gold reply (sim.oracle_slips; default 0)",
    )
    g.add_argument(
        "--skills-first",
        action="store_true",
        help="the oracle loads its skills (the reply skill; for a price or purchase "
        "message also the strategy skill) in the same message as, and before, its "
        "tool calls, so the results come last before the reply",
    )
    g.add_argument(
        "--plan-first",
        action="store_true",
        help="with --reply-plan: the reasoning of the turn's first message names "
        "the reply plan too, next to the viewer's message",
    )
    g.add_argument(
        "--format",
        choices=FORMATS,
        default="jsonl",
        help="jsonl: one JSON trajectory per line (default); tfds: an ArrayRecord "
        "dataset folder of the same rows, for data.train=tfds:DIR",
    )
    g.add_argument(
        "--out",
        required=True,
        type=nonblank,
        help="output JSONL file, or dataset folder with --format tfds",
    )
    r = sub.add_parser("report", help="mixes, statuses and size of a JSONL file")
    r.add_argument("file", help="a file written by `hat sim generate`")
    r.add_argument("--json", action="store_true", help="print the report as JSON")


def augment_all(
    harness: Harness,
    golds: Sequence[Trajectory],
    *,
    seed: int,
    ops: str | None = None,
    family: str | None = None,
    progress=None,
) -> tuple[list[Trajectory], int]:
    """HSA on each gold trajectory; returns (trajectories, failures).

    Trajectory ``i`` draws its spec (with ``family``) and its augmentation seed
    from ``default_rng([seed, i, HSA_STREAM])``. A valid result carries
    ``meta["hsa"] = {spec, seed, base_harness, harness_id, mapping}`` (the
    mapping is ``harness`` -> augmented; the augmented harness is
    ``apply_spec(harness, None, spec, seed)``). One that fails
    ``validate_augmented`` (or whose spec does not apply) is replaced by its
    gold trajectory with ``meta["hsa"] = {spec, seed, base_harness, problems}``.
    """
    out, failures = [], 0
    for i, gold in enumerate(golds):
        rng = np.random.default_rng([seed, i, HSA_STREAM])
        spec = ops if ops else sample_family_spec(family, rng)
        aug_seed = int(rng.integers(2**31))
        record = {"spec": spec, "seed": aug_seed, "base_harness": harness.id}
        try:
            h2, t2, m = apply_spec(harness, gold, spec, aug_seed)
            problems = validate_augmented(harness, gold, h2, t2, m)
        except ValueError as e:
            problems = [str(e)]
        if problems:
            failures += 1
            gold.meta["hsa"] = {**record, "problems": problems}
            out.append(gold)
        else:
            t2.meta["hsa"] = {**record, "harness_id": h2.id, "mapping": m.to_dict()}
            out.append(t2)
        if progress is not None:
            progress(1)
    return out, failures


def _mix(shares: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.3f}" for k, v in shares.items())


def _generate(args) -> int:
    out = Path(args.out)
    tfds = getattr(args, "format", "jsonl") == "tfds"
    if tfds:  # refused before the simulation, not after it
        from sim.tfds_builder import check_target, write_tfds

        check_target(out)
    elif out.is_dir():
        raise ValueError(f"--out {shown(out)} is a folder (expected a JSONL file)")
    if getattr(args, "plan_first", False) and not getattr(args, "reply_plan", False):
        raise ValueError("--plan-first names the reply plan: add --reply-plan")
    t0 = time.perf_counter()
    harness = load_harness(args.harness)
    if getattr(args, "prompt_format", None):
        harness = harness.in_format(args.prompt_format)
    cases = make_cases(
        args.split,
        args.seed,
        args.n,
        messages_per_room=args.messages_per_room,
        harness_version=Path(args.harness).name,
    )
    hsa = bool(args.ops or args.family)
    total = len(cases) * (2 if hsa else 1)
    with tqdm(
        total=total, desc="hat sim", unit="traj", disable=args.n < PROGRESS_MIN or None
    ) as bar:
        trajs = generate(
            harness,
            cases,
            faults=args.fault_rate,
            seed=args.seed,
            progress=bar.update,
            compact_results=getattr(args, "compact_results", False),
            reply_plan=getattr(args, "reply_plan", False),
            slips=getattr(args, "slips", 0.0),
            skills_first=getattr(args, "skills_first", False),
            plan_first=getattr(args, "plan_first", False),
        )
        failures = 0
        if hsa:
            trajs, failures = augment_all(
                harness,
                trajs,
                seed=args.seed,
                ops=args.ops,
                family=args.family,
                progress=bar.update,
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    if tfds:
        write_tfds(trajs, out, split=args.split)
        size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    else:
        write_dataset(trajs, out)
        size = out.stat().st_size
    s = summarize(trajs)
    tools, mb = s["tool_calls_mean"], size / 1e6
    what = f"tfds split {args.split}, " if tfds else ""
    print(
        f"wrote {s['n']} trajectories to {shown(out)} ({what}{mb:.1f} MB, "
        f"{time.perf_counter() - t0:.1f} s) | intents {_mix(s['intent'])} | "
        f"langs {_mix(s['lang'])} | status {s['status']} | "
        f"faults {sum(s['faults'].values())} | tool calls/turn {tools:.2f}"
        + (f" | hsa ok {s['hsa']}, failed {failures}" if hsa else "")
    )
    return 0


def _report(args) -> int:
    r = report(args.file)
    if args.json:
        print(shown(json.dumps(r, ensure_ascii=False, indent=1), keep="\n"))
        return 0
    print(f"{shown(args.file)}: {r['lines']} lines, {r['bytes'] / 1e6:.2f} MB")
    print(f"intent mix:   {_mix(r['intent'])}")
    print(f"language mix: {_mix(r['lang'])}")
    print(shown(f"status:       {r['status']}"))
    print(shown(f"faults:       {r['faults']}"))
    print(shown(f"tool calls:   {r['tool_calls_mean']:.2f} per turn  {r['tools']}"))
    print(shown(f"skill loads:  {r['skill_loads_mean']:.2f} per turn  {r['skills']}"))
    print(f"augmented:    {r['hsa']}")
    return 0


def run(args) -> int:
    if args.sim_command == "generate":
        return _generate(args)
    return _report(args)


def main(argv: Sequence[str] | None = None) -> int:
    """``hat sim`` on its own (for tests and ``python -m experiments.sim_cmd``)."""
    parser = argparse.ArgumentParser(prog="hat sim", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
