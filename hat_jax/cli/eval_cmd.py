"""Evaluate models and score their responses (`hat eval SUBCOMMAND`).

Examples:
  hat eval ifeval-score --responses runs/ifeval/responses.jsonl --out runs/ifeval
  hat eval show runs/eval --suite t2 --failed --family all_identifiers
  hat eval show runs/hat_tiny/hsa_sft --case t2-00003
  hat eval compare runs/hat_tiny/sft runs/hat_tiny/hsa_sft --suite t2

`ifeval-score` reads a JSONL of {"prompt", "response"} rows (prompts among the
541 IFEval prompts, or rows with their own "instruction_id_list" and "kwargs")
and writes records.jsonl, summary.json and summary.md to --out.

`show` and `compare` read what `hat eval run --out RUN` wrote (RUN may also be
a sweep run folder, whose eval/ is its eval step; hat_jax/eval/browse.py):
`show` lists one line per case or prints whole records, `compare` prints B - A
with 95 % paired intervals over the cases both runs hold (Tango's score
interval for 0/1 scores, else a paired bootstrap).
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from hat_jax.cli import plugins
from hat_jax.cli.argtypes import count
from hat_jax.eval.show import MAX_CHARS
from hat_jax.printable import shown

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


def _show_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="eval output, its suite folder, or a run")
    p.add_argument("--suite", help="comma-separated suites (default: all)")
    p.add_argument("--failed", action="store_true", help="cases whose success < 1")
    p.add_argument("--family", help="cases with this HSA family (tag family)")
    p.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="cases with this tag value (repeatable; e.g. lang=zh)",
    )
    p.add_argument("--case", metavar="ID", help="print this case's whole record")
    p.add_argument("--full", action="store_true", help="whole records, not lines")
    p.add_argument("--limit", type=count(1), help="at most N cases per suite")
    p.add_argument(
        "--max-chars",
        type=count(0),
        default=MAX_CHARS,
        help=f"cut each text to N characters in whole records (0: no cut; "
        f"default {MAX_CHARS})",
    )


def _tags(args: argparse.Namespace) -> dict[str, str]:
    tags = {"family": args.family} if args.family is not None else {}
    for item in args.tag:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"--tag expects KEY=VALUE, got {shown(item)}")
        tags[key] = value
    return tags


def _print_lines(lines) -> int:
    """Prints as it goes; a closed pipe (`| head`) ends the command quietly
    (`hat_jax.cli.main`)."""
    for line in lines:
        print(line)
    return 0


def _show(args: argparse.Namespace) -> int:
    from hat_jax.eval.browse import open_run
    from hat_jax.eval.show import show_lines

    lines = show_lines(
        open_run(args.run),
        suites=args.suite,
        only_failed=args.failed,
        tags=_tags(args),
        case=args.case,
        full=args.full,
        limit=args.limit,
        max_chars=args.max_chars,
        width=shutil.get_terminal_size((100, 24)).columns,
    )
    return _print_lines(lines)


def _compare_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="the reference eval (A)")
    p.add_argument("run_b", metavar="RUN_B", help="the eval compared with it (B)")
    p.add_argument("--suite", help="comma-separated suites (default: those both hold)")
    p.add_argument("--metric", help="comma-separated scores, or all (default: success)")
    p.add_argument(
        "--by",
        help="comma-separated tags to break down by, or none (default: the "
        "summary's breakdowns)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse runs whose case sets or case inputs differ",
    )


def _compare(args: argparse.Namespace) -> int:
    from hat_jax.eval.browse import open_run
    from hat_jax.eval.compare import compare_lines

    a, b = open_run(args.run_a), open_run(args.run_b)
    lines = compare_lines(
        a, b, suites=args.suite, metrics=args.metric, by=args.by, strict=args.strict
    )
    return _print_lines(lines)


# name -> (one-line help, add_arguments(parser), run(args) -> exit code)
SUBCOMMANDS: dict[str, tuple[str, AddArguments, Run]] = {
    "ifeval-score": (
        "score IFEval responses (strict/loose, prompt/instruction level)",
        _ifeval_score_args,
        _ifeval_score,
    ),
    "show": ("browse an eval's per-case records", _show_args, _show),
    "compare": (
        "paired differences of two evals, with 95-percent intervals",
        _compare_args,
        _compare,
    ),
}


def subcommands() -> dict[str, tuple[str, AddArguments, Run]]:
    """The built-in subcommands merged with those from `hat.eval_commands`."""
    found = {}
    loaded, broken = plugins.load_entry_points(entry_points(group=EVAL_GROUP))
    for name, mod in loaded.items():
        doc = (mod.__doc__ or name).strip().splitlines()[0]
        found[name] = (doc, mod.add_arguments, mod.run)
    for name, bad in broken.items():  # listed, and says why when run
        found[name] = (f"(could not be loaded: {bad.reason})", _no_args, _fails(bad))
    return {**found, **SUBCOMMANDS}


def _no_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _fails(bad: plugins.Broken) -> Run:
    def run(args: argparse.Namespace) -> int:
        raise RuntimeError(f"the command could not be loaded: {bad.reason}")

    return run


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="eval_command", required=True)
    for name, (help_, add, run_) in subcommands().items():
        sp = sub.add_parser(name, help=help_, description=help_)
        add(sp)
        sp.set_defaults(eval_run=run_)


def run(args: argparse.Namespace) -> int:
    return args.eval_run(args) or 0
