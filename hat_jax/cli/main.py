"""The `hat` command: subcommands chosen by name from a registry."""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
from importlib.metadata import entry_points
from types import ModuleType

from hat_jax.cli import (
    assets_cmd,
    chat_cmd,
    convert_cmd,
    env_cmd,
    eval_cmd,
    harness_cmd,
    plan_cmd,
    train_cmd,
)
from hat_jax.cli.plugins import Broken, load_entry_points

# name -> module with `add_arguments(parser)` and `run(args) -> int`
COMMANDS: dict[str, ModuleType] = {
    "assets": assets_cmd,
    "chat": chat_cmd,
    "convert": convert_cmd,
    "env": env_cmd,
    "eval": eval_cmd,
    "harness": harness_cmd,
    "plan": plan_cmd,
    "train": train_cmd,
}
COMMAND_GROUP = "hat.commands"  # plugin commands (setup.py: augment, sim, run, ...)


def run_module(prog: str, mod: ModuleType, argv=None) -> int:
    """A command module (`add_arguments`, `run`) on its own, `python -m MODULE`:
    the parser `hat` builds for it, named `prog`."""
    p = argparse.ArgumentParser(
        prog=prog,
        description=mod.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mod.add_arguments(p)
    return _run(prog, mod, p.parse_args(argv))


def _run(prog: str, mod: ModuleType, args: argparse.Namespace) -> int:
    """``mod.run(args)``; bad input (OSError, ValueError, RuntimeError: a
    missing file, a malformed row, a failed step) is one line on stderr,
    ``PROG: error: ...``, and status 1, not a traceback."""
    try:
        return mod.run(args) or 0
    except BrokenPipeError:
        raise  # main's: `hat ... | head`
    except (OSError, ValueError, RuntimeError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1


class BrokenCommand:
    """Stands in for a plugin command whose module failed to import: it is
    listed, and running it (with any arguments) reports the import error."""

    def __init__(self, broken: Broken):
        self.broken = broken
        self.__doc__ = f"(could not be loaded: {broken.reason})"

    def add_arguments(self, p: argparse.ArgumentParser) -> None:
        """None: `main` runs a broken command before parsing its arguments."""

    def run(self, args: argparse.Namespace | None = None) -> int:
        print(
            f"hat {self.broken.name}: error: the command could not be loaded: "
            f"{self.broken.reason}",
            file=sys.stderr,
        )
        return 1


def _plugins() -> dict[str, ModuleType | BrokenCommand]:
    """Commands that packages above hat_jax declare (entry-point group
    hat.commands). One whose package is not installed here is left out; one
    that fails to import is kept as a `BrokenCommand` that says why."""
    loaded, broken = load_entry_points(entry_points(group=COMMAND_GROUP))
    return {**loaded, **{n: BrokenCommand(b) for n, b in broken.items()}}


class _Version(argparse.Action):
    """``--version``, computed only when asked for (git is not run otherwise)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(env_cmd.version_text())
        parser.exit()


def _default_subcommand(argv: list[str], commands: dict[str, ModuleType]) -> list[str]:
    """``hat eval --suite ...`` means ``hat eval run --suite ...``: a command with
    subcommands may name (``DEFAULT_SUBCOMMAND``) the one that options given
    without a subcommand go to."""
    if len(argv) >= 2 and argv[1].startswith("-") and argv[1] not in ("-h", "--help"):
        default = getattr(commands.get(argv[0]), "DEFAULT_SUBCOMMAND", None)
        if default:
            return [argv[0], default, *argv[1:]]
    return argv


def _split_passthrough(
    argv: list[str], commands: dict[str, ModuleType]
) -> tuple[list[str], list[str] | None]:
    """``hat CMD ARGS -- REST`` for a command with ``PASSTHROUGH = True``: (CMD ARGS,
    REST), REST handed on untouched as ``args.passthrough`` (e.g. ``hat serve DIR --
    --max-num-seqs 8`` passes vLLM's flags); other commands: (argv, None)."""
    if not argv or not getattr(commands.get(argv[0]), "PASSTHROUGH", False):
        return argv, None
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1 :]


def main(argv: list[str] | None = None) -> int:
    """``hat ARGS``; output to a pipe whose reader has left (``hat ... | head``)
    ends the command quietly with a shell's SIGPIPE status, 128 + 13."""
    try:
        try:
            return _main(argv)
        finally:  # buffered output reaches the pipe here, inside the handler
            sys.stdout.flush()
    except BrokenPipeError as e:
        if not _stdout_gone():  # another pipe (a worker's): a real error
            print(f"hat: error: {e}", file=sys.stderr)
            return 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # closed, replaced, no poll
        return False


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--version"]:  # without importing every plugin command first
        print(env_cmd.version_text())
        return 0
    parser = argparse.ArgumentParser(prog="hat", description=__doc__)
    parser.add_argument(
        "--version", action=_Version, help="print the version of hat_jax and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {**COMMANDS, **_plugins()}
    for name, mod in commands.items():
        doc = (mod.__doc__ or name).strip()
        p = sub.add_parser(
            name,
            help=doc.splitlines()[0],
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(p)
    if argv and isinstance(commands.get(argv[0]), BrokenCommand):  # any arguments
        return commands[argv[0]].run()
    if not argv or argv[0] in ("-h", "--help"):  # say why a listed command is broken
        for mod in commands.values():
            if isinstance(mod, BrokenCommand):
                b = mod.broken
                print(
                    f"hat: note: {b.name} could not be loaded: {b.reason}",
                    file=sys.stderr,
                )
    argv, passthrough = _split_passthrough(argv, commands)
    args = parser.parse_args(_default_subcommand(argv, commands))
    if passthrough is not None:
        args.passthrough = passthrough
    return _run(f"hat {args.command}", commands[args.command], args)


if __name__ == "__main__":
    sys.exit(main())
