"""The tiny world's own assets: base-stage data, OPD prompts, a BPE tokenizer.

`base` writes general-ability trajectories (constrained instructions, generic
tool use with random schemas, chit-chat) in the JSONL form of `hat sim
generate`; `prompts` writes general chat prompts for `hat train opd`;
`tokenizer` trains a byte-level BPE on the rendered text of any such files;
`release` copies the release folder of a `world_base` run (`make world-base`).
All output is a function of the arguments.

Examples:
  hat world base --n 2000 --seed 0 --out data/base.jsonl
  hat world prompts --n 1000 --seed 0 --out data/prompts.jsonl
  hat world tokenizer data/train.jsonl data/base.jsonl data/prompts.jsonl \\
      --vocab-size 2048 --out data/tokenizer
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from experiments.world.tokenizer import IDENTS, MAX_VOCAB, MIN_VOCAB
from hat_jax.cli.argtypes import count, seed
from hat_jax.printable import shown

MAX_LINES = 10**7  # --n: a base or prompts file of more lines is a typo


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="world_command", required=True)
    for name, help_ in (
        ("base", "write base-stage trajectories as JSONL"),
        ("prompts", "write general chat prompts as JSONL"),
    ):
        g = sub.add_parser(name, help=help_)
        g.add_argument(
            "--n", type=count(1, MAX_LINES), required=True, help="number of lines"
        )
        g.add_argument("--seed", type=seed, default=0, help="seed (default 0)")
        g.add_argument("--out", required=True, help="output JSONL file")
        if name == "base":
            g.add_argument(
                "--mix",
                default="general",
                choices=(
                    "general",
                    "lookup",
                    "drill",
                    "apps",
                    "apps_drill",
                    "apps_echo",
                ),
                help="general (default), lookup (with look-ups), drill (short ones), "
                "apps (the generalist base world: generated apps), "
                "apps_drill (its short apps), apps_echo (half of them echo rows)",
            )
    t = sub.add_parser("tokenizer", help="train a byte-level BPE on JSONL files")
    t.add_argument("files", nargs="+", help="JSONL trajectories or prompts")
    t.add_argument(
        "--vocab-size",
        type=count(MIN_VOCAB, MAX_VOCAB),
        default=2048,
        help=f"{MIN_VOCAB}..{MAX_VOCAB}, default 2048",
    )
    t.add_argument(
        "--digits",
        default="single",
        choices=("single", "groups"),
        help="single: a token a digit (default); groups: runs of up to 3 digits, "
        "each one token (1,100 more entries)",
    )
    t.add_argument(
        "--idents",
        default="qwen",
        choices=IDENTS,
        help="qwen: a letter run takes the character before it (default); bare: "
        "only a space or joiner, none before an identifier (one cut per name)",
    )
    t.add_argument("--out", required=True, help="output folder")
    r = sub.add_parser(
        "release", help="copy a world_base run's release folder (verified) to --out"
    )
    r.add_argument(
        "root", help="the `hat run` root of experiments/configs/world_base.py"
    )
    r.add_argument("--run", default="world_base", help="the run's name under ROOT")
    r.add_argument("--out", required=True, help="the release folder to (re)place")


def _counts(c: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in c.items())


def _write(args, make: Callable[..., dict[str, int]], what: str, **kw) -> int:
    t0 = time.perf_counter()
    counts = make(args.out, n=args.n, seed=args.seed, **kw)
    print(
        f"wrote {args.n} {what} to {args.out} ({_counts(counts)}; "
        f"{time.perf_counter() - t0:.1f} s)"
    )
    return 0


def _base(args) -> int:
    from experiments.world.base_data import write_base_data

    return _write(args, write_base_data, "base trajectories", mix=args.mix)


def _prompts(args) -> int:
    from experiments.world.prompts import write_prompts

    return _write(args, write_prompts, "prompts")


def _tokenizer(args) -> int:
    from experiments.world.tokenizer import train_tokenizer

    for f in args.files:
        p = Path(f)
        if not p.exists():
            raise ValueError(f"{shown(f)}: no such file (expected a JSONL file)")
        if not p.is_file():  # a fifo blocks the reader, a device never ends
            raise ValueError(
                f"{shown(f)}: not a regular file (a fifo, device or folder; "
                "expected a JSONL file)"
            )
    t0 = time.perf_counter()
    tok = train_tokenizer(
        args.files,
        vocab_size=args.vocab_size,
        out=args.out,
        digits=args.digits,
        idents=args.idents,
    )
    print(
        f"trained a {tok.vocab_size}-token BPE on {len(args.files)} file(s) into "
        f"{args.out} ({time.perf_counter() - t0:.1f} s)"
    )
    return 0


def _release(args) -> int:
    from experiments.world.release import copy_release

    info = copy_release(Path(args.root), args.run, Path(args.out))
    held = sum(c["passed"] for c in info["premise"])
    print(
        f"released {args.out} ({held} of {len(info['premise'])} premise checks "
        f"hold; {info['wall']})"
    )
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "base": _base,
    "prompts": _prompts,
    "tokenizer": _tokenizer,
    "release": _release,
}


def run(args) -> int:
    return COMMANDS[args.world_command](args)


def main(argv: Sequence[str] | None = None) -> int:
    """``hat world`` on its own (tests; ``python -m experiments.world.world_cmd``)."""
    parser = argparse.ArgumentParser(prog="hat world", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (OSError, ValueError) as e:  # as `hat` reports them
        print(f"hat world: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
