"""The `hat` command: subcommands chosen by name from a registry."""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points
from types import ModuleType

from hat_jax.cli import (
    assets_cmd,
    chat,
    convert,
    eval_cmd,
    harness_cmd,
    plan_cmd,
    train_cmd,
)

# name -> module with `add_arguments(parser)` and `run(args) -> int`
COMMANDS: dict[str, ModuleType] = {
    "assets": assets_cmd,
    "chat": chat,
    "convert": convert,
    "eval": eval_cmd,
    "harness": harness_cmd,
    "plan": plan_cmd,
    "train": train_cmd,
}


def _plugins() -> dict[str, ModuleType]:
    """Commands that packages above hat_jax declare (entry-point group hat.commands)."""
    found = {}
    for ep in entry_points(group="hat.commands"):
        try:
            found[ep.name] = importlib.import_module(ep.value)
        except ImportError:  # a package that is not installed here
            continue
    return found


def _default_subcommand(argv: list[str], commands: dict[str, ModuleType]) -> list[str]:
    """``hat eval --suite ...`` means ``hat eval run --suite ...``: a command with
    subcommands may name (``DEFAULT_SUBCOMMAND``) the one that options given
    without a subcommand go to."""
    if len(argv) >= 2 and argv[1].startswith("-") and argv[1] not in ("-h", "--help"):
        default = getattr(commands.get(argv[0]), "DEFAULT_SUBCOMMAND", None)
        if default:
            return [argv[0], default, *argv[1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {**COMMANDS, **_plugins()}
    for name, mod in commands.items():
        p = sub.add_parser(
            name,
            help=mod.__doc__.splitlines()[0],
            description=mod.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_default_subcommand(argv, commands))
    try:
        return commands[args.command].run(args) or 0
    except (OSError, ValueError, RuntimeError) as e:
        print(f"hat {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
