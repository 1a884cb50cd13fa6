"""Validate a harness folder or print its system prompt.

DIR is a harness folder or a builtin name (taolive_v1, taolive_v2); a folder of
a builtin's name in the working directory wins, with a notice on stderr. Names
and paths from the folder are printed with terminal control characters escaped.

Examples:
  hat harness validate taolive_v1
  hat harness validate my_harness/      # exit 1, one path:line: error per line
  hat harness render taolive_v2 --room-context '{"on_screen": "link 3"}'
  hat harness render taolive_v1 --format xml
  hat harness render taolive_v1 --format compact   # one line per tool
"""

from __future__ import annotations

import sys
from dataclasses import replace

from hat_jax.harness.builtin import BUILTIN
from hat_jax.harness.loader import HarnessError, load_harness
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.spec import PROMPT_FORMATS, Harness
from hat_jax.jsonl import DataError, parse_line
from hat_jax.printable import shown


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", required=True)
    v = sub.add_parser("validate", help="check a harness; print every error")
    v.add_argument("dir", help=f"a harness folder or one of {', '.join(BUILTIN)}")
    r = sub.add_parser("render", help="print the system prompt")
    r.add_argument("dir", help=f"a harness folder or one of {', '.join(BUILTIN)}")
    r.add_argument(
        "--room-context",
        default=None,
        help="room state as JSON: an object (key: value lines) or a string",
    )
    r.add_argument(
        "--format", choices=PROMPT_FORMATS, default=None, help="override the layout"
    )


def _summary(h: Harness) -> str:
    kinds = [s.kind for s in h.skills]
    skills = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
    return shown(
        f"OK {h.id}: {len(h.skills)} skills ({skills}), {len(h.tools)} tools, "
        f"hooks [{', '.join(x.name for x in h.hooks)}], prompt {h.layout.format}, "
        f"turn_limit {h.turn_limit}, retry_limit {h.retry_limit}, "
        f"tool calls {h.tool_call_format}"
    )


def run(args) -> int:
    try:
        harness = load_harness(args.dir)  # resolves builtin names
    except HarnessError as e:
        for line in e.errors:  # already printable
            print(line, file=sys.stderr)
        print(f"{e.total} error(s) in {shown(args.dir)}", file=sys.stderr)
        return 1
    if args.action == "validate":
        print(_summary(harness))
        return 0
    room = None
    if args.room_context is not None:
        try:
            room = parse_line(args.room_context, "--room-context")
        except DataError as e:
            print(e, file=sys.stderr)
            return 1
        if not isinstance(room, dict | str):
            print("--room-context: expected a JSON object or string", file=sys.stderr)
            return 1
    if args.format:
        harness = harness.replace(layout=replace(harness.layout, format=args.format))
    # The prompt as the model gets it, but no raw ESC or bidi codes on a terminal.
    print(shown(render_system_prompt(harness, room), keep="\n\t"))
    return 0
