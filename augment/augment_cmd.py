"""Augment a harness (HSA): apply an op spec or a variant family, write the result.

Writes the augmented harness folder (loadable with `hat harness validate`) and
`mapping.json` (tool, parameter, enum and skill maps from the source harness).

Examples:
  hat augment taolive_v1 --ops "rename_tools|reorder_sections|format(xml)" \\
      --seed 3 --out runs/hsa/v1_xml
  hat augment taolive_v2 --family everything --seed 7 --out runs/hsa/v2_all
  hat augment --list-ops
  hat augment --list-families
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from augment.families import (
    HELDOUT_FAMILIES,
    TRAIN_FAMILIES,
    family_arg,
    sample_family_spec,
)
from augment.ops import all_ops
from augment.spec import apply_spec, spec_arg
from augment.validate import harness_problems
from hat_jax.cli.argtypes import nonblank, seed
from hat_jax.harness.builtin import builtin_path
from hat_jax.harness.dump import dump_harness
from hat_jax.harness.loader import load_harness
from hat_jax.printable import shown


def add_arguments(p) -> None:
    p.add_argument(
        "src", nargs="?", type=nonblank, help="harness folder or builtin name"
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--ops", type=spec_arg, help='op spec, e.g. "rename_tools|format(xml)"'
    )
    how.add_argument(
        "--family", type=family_arg, help="sample a spec from this variant family"
    )
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    p.add_argument(
        "--out", type=nonblank, help="output folder for the augmented harness"
    )
    p.add_argument("--overwrite", action="store_true", help="replace --out")
    p.add_argument("--list-ops", action="store_true", help="list ops and exit")
    p.add_argument("--list-families", action="store_true", help="list families")


def _list_ops() -> None:
    for op in all_ops().values():
        params = ", ".join(f"{k}={v!r}" for k, v in op.defaults.items())
        print(
            f"{op.dimension:14} {op.name:26} {op.doc}"
            + (f" [{params}]" if params else "")
        )


def _list_families() -> None:
    for split, fams in (("train", TRAIN_FAMILIES), ("heldout", HELDOUT_FAMILIES)):
        for name, slots in fams.items():
            ops = " | ".join("/".join(c for c, _ in s.choices) for s in slots)
            print(f"{split:8} {name:20} {ops}")


def run(args) -> int:
    if args.list_ops or args.list_families:
        _list_ops() if args.list_ops else _list_families()
        return 0
    if not args.src or not args.out or not (args.ops or args.family):
        print(
            "hat augment: error: give SRC, --out and one of --ops / --family "
            "(or --list-ops)",
            file=sys.stderr,
        )
        return 2
    spec = args.ops
    if args.family:
        spec = sample_family_spec(args.family, np.random.default_rng(args.seed))
    harness = load_harness(args.src)
    aug, _, mapping = apply_spec(harness, None, spec, args.seed)
    problems = harness_problems(aug)
    if problems:
        raise ValueError("augmented harness is invalid: " + "; ".join(problems))
    out = Path(args.out)
    src = Path(args.src) if Path(args.src).is_dir() else builtin_path(args.src)
    a, b = src.resolve(), out.resolve()
    if a == b or a in b.parents or b in a.parents:
        print(
            f"hat augment: error: --out {shown(out)} overlaps the source harness "
            f"{shown(src)} (write the augmented harness to a folder of its own)",
            file=sys.stderr,
        )
        return 1
    try:  # mapping.json goes in with the harness: all or nothing, no links followed
        extra = {"mapping.json": mapping.to_json() + "\n"}
        dump_harness(aug, out, overwrite=args.overwrite, extra=extra)
    except (OSError, ValueError) as e:  # exists, a link in the way, disk full
        print(f"hat augment: error: {shown(e)}", file=sys.stderr)
        return 1
    print(shown(f"{harness.id} -> {aug.id}: {spec}"))
    print(shown(f"wrote {out} and {out / 'mapping.json'}"))
    return 0
