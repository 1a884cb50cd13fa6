"""Evaluate models and score their responses (`hat eval SUBCOMMAND`).

Examples:
  hat eval ifeval-score --responses runs/ifeval/responses.jsonl --out runs/ifeval

`ifeval-score` reads a JSONL of {"prompt", "response"} rows (prompts among the
541 IFEval prompts, or rows with their own "instruction_id_list" and "kwargs")
and writes records.jsonl, summary.json and summary.md to --out.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

AddArguments = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

# Packages above hat_jax add subcommands (e.g. suite runs) through entry points in
# this group; each names a module with a docstring, `add_arguments(parser)` and
# `run(args) -> int`, as `hat.commands` plugins do. A built-in name wins.
EVAL_GROUP = "hat.eval_commands"
# `hat eval --suite ...` is `hat eval run --suite ...` (hat_jax.cli.main), the suite
# runner that experiments registers in EVAL_GROUP.
DEFAULT_SUBCOMMAND = "run"


def _ifeval_score_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--responses", required=True, help="JSONL of {prompt, response}")
    p.add_argument("--out", required=True, help="folder for records and summary")


def _ifeval_score(args: argparse.Namespace) -> int:
    from hat_jax.eval import ifeval
    from hat_jax.jsonl import write_jsonl_atomic, write_text_atomic

    rows = ifeval.read_responses(args.responses)
    records, summary = ifeval.score_responses(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # Each file appears whole or not at all (a kill mid-write leaves no stub).
    write_jsonl_atomic(out / "records.jsonl", records)
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_text_atomic(out / "summary.md", ifeval.summary_markdown(summary))
    print(" ".join(f"{m}={summary[m]:.4f}" for m in ifeval.METRICS))
    if summary.get("missing_prompts"):
        print(f"note: {summary['missing_prompts']} IFEval prompts have no response")
    print(f"wrote {out}/records.jsonl, summary.json, summary.md")
    return 0


# name -> (one-line help, add_arguments(parser), run(args) -> exit code)
SUBCOMMANDS: dict[str, tuple[str, AddArguments, Run]] = {
    "ifeval-score": (
        "score IFEval responses (strict/loose, prompt/instruction level)",
        _ifeval_score_args,
        _ifeval_score,
    ),
}


def subcommands() -> dict[str, tuple[str, AddArguments, Run]]:
    """The built-in subcommands merged with those from `hat.eval_commands`."""
    found = {}
    for ep in entry_points(group=EVAL_GROUP):
        try:
            mod = ep.load()  # "package.module" (or "package.module:object")
        except ImportError:  # a package that is not installed here
            continue
        doc = (mod.__doc__ or ep.name).strip().splitlines()[0]
        found[ep.name] = (doc, mod.add_arguments, mod.run)
    return {**found, **SUBCOMMANDS}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="eval_command", required=True)
    for name, (help_, add, run_) in subcommands().items():
        sp = sub.add_parser(name, help=help_, description=help_)
        add(sp)
        sp.set_defaults(eval_run=run_)


def run(args: argparse.Namespace) -> int:
    return args.eval_run(args) or 0
