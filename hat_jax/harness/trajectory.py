"""What an agent turn leaves behind: a Trajectory, and the records inside it.

A Trajectory is plain data (JSON-serialisable through `to_dict`/`from_dict`), so the
simulator's oracle, the agent loop, HSA and the trainers all speak it. `messages` is
the chat as the model saw and produced it (system prompt first), in the message
format `hat_jax.text.render_chat` takes.

`Trajectory.from_dict` checks a decoded row's whole shape (the fields below, each
message's role, texts and tool calls) and raises `hat_jax.jsonl.DataError`
naming the row and the field, so a bad data file fails when read rather than deep
inside rendering or training.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from hat_jax.harness.spec import Harness
from hat_jax.jsonl import DataError, field, json_type, parse_line
from hat_jax.printable import shown
from hat_jax.text.toolcall import ToolCall
from hat_jax.text.toolcall import _valid_name as _writable_name

CHECKPOINTS = ("input", "tool_args", "pre_reply", "reply")
STATUSES = ("ok", "failed", "turn_limit")
ROLES = ("system", "user", "assistant", "tool")  # what render_chat knows
_TEXT = (str, type(None))


@dataclasses.dataclass
class ToolExchange:
    """One tool call and what came back."""

    name: str
    arguments: dict[str, Any]
    result: str  # the text the model sees in <tool_response>
    ok: bool = True
    fault: str | None = None  # "timeout" | "malformed" | "permission_denied" | ...


@dataclasses.dataclass
class HookEvent:
    hook: str
    checkpoint: str  # one of CHECKPOINTS
    passed: bool
    feedback: str = ""
    attempt: int = 0  # 0 = first try, k = k-th retry


@dataclasses.dataclass(frozen=True)
class HookContext:
    """What a hook may look at when it runs."""

    harness: Harness
    checkpoint: str
    user_message: str
    loaded_skills: tuple[str, ...] = ()
    tool_results: tuple[str, ...] = ()  # texts returned by tools so far
    tool_call: ToolCall | None = None  # at "tool_args"
    reply: str | None = None  # at "pre_reply" / "reply"


@dataclasses.dataclass(frozen=True)
class HookResult:
    passed: bool
    feedback: str = ""  # told to the model on a retry


@dataclasses.dataclass
class Trajectory:
    """One viewer message handled by an agent under one harness."""

    harness_id: str
    user_message: str
    messages: list[dict[str, Any]]
    tool_calls: list[ToolExchange] = dataclasses.field(default_factory=list)
    hook_events: list[HookEvent] = dataclasses.field(default_factory=list)
    reply: str | None = None  # the dispatched reply, reasoning stripped
    status: str = "ok"  # one of STATUSES
    timings: dict[str, float] = dataclasses.field(default_factory=dict)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    # `path:line` the trajectory was read from, for later errors; not serialised.
    where: str | None = dataclasses.field(
        default=None, compare=False, repr=False, kw_only=True
    )

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["where"]
        d["messages"] = [_plain_message(m) for m in self.messages]
        return d

    @classmethod
    def from_dict(cls, d: Any, where: str | None = None) -> Trajectory:
        """A trajectory from a decoded JSON row.

        Raises:
          DataError: ``where: what was wrong`` (``where`` is ``path:line``;
            ``trajectory`` when not given).
        """
        source, where = where, where or "trajectory"
        if not isinstance(d, Mapping):
            raise DataError(f"{where}: expected a JSON object, got {json_type(d)}")
        missing = [k for k in ("harness_id", "user_message", "messages") if k not in d]
        unknown = sorted(set(d) - _ROW_FIELDS)
        if missing or unknown:
            what = [f"missing field '{k}'" for k in missing]
            what += [f"unknown field '{k}'" for k in unknown]
            raise DataError(f"{where}: not a trajectory ({', '.join(what)})")
        check_messages(d["messages"], where)
        harness_id = field(d, "harness_id", where, str)
        if not harness_id.strip():
            raise DataError(
                f"{where}: field 'harness_id' must be a harness id (such as "
                f"'taolive@1.0'), got {_shown(harness_id)}"
            )
        timings = field(d, "timings", where, dict, default={})
        for k in timings:
            field(timings, k, where, float, label=f"timings.{k}")
        return cls(
            harness_id=harness_id,
            user_message=field(d, "user_message", where, str),
            messages=d["messages"],
            tool_calls=[
                _exchange(t, where, f"tool_calls[{i}]")
                for i, t in enumerate(field(d, "tool_calls", where, list, default=[]))
            ],
            hook_events=[
                _hook_event(h, where, f"hook_events[{i}]")
                for i, h in enumerate(field(d, "hook_events", where, list, default=[]))
            ],
            reply=field(d, "reply", where, _TEXT, default=None),
            status=field(d, "status", where, str, default="ok", choices=STATUSES),
            timings=timings,
            meta=field(d, "meta", where, dict, default={}),
            where=source,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str, where: str | None = None) -> Trajectory:
        return cls.from_dict(parse_line(line, where or "trajectory"), where)


_ROW_FIELDS = frozenset(f.name for f in dataclasses.fields(Trajectory)) - {"where"}


def _object(value: Any, where: str, label: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataError(
            f"{where}: field '{label}' must be an object, got {json_type(value)}"
        )
    return value


def _strict_keys(obj: Mapping[str, Any], cls: type, where: str, label: str) -> None:
    unknown = sorted(set(obj) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise DataError(f"{where}: field '{label}' has unknown keys {unknown}")


def _exchange(t: Any, where: str, label: str) -> ToolExchange:
    t = _object(t, where, label)
    _strict_keys(t, ToolExchange, where, label)
    return ToolExchange(
        name=_tool_name(t, where, f"{label}.name"),
        arguments=field(t, "arguments", where, dict, label=f"{label}.arguments"),
        result=field(t, "result", where, str, label=f"{label}.result"),
        ok=field(t, "ok", where, bool, default=True, label=f"{label}.ok"),
        fault=field(t, "fault", where, _TEXT, default=None, label=f"{label}.fault"),
    )


def _hook_event(h: Any, where: str, label: str) -> HookEvent:
    h = _object(h, where, label)
    _strict_keys(h, HookEvent, where, label)
    return HookEvent(
        hook=field(h, "hook", where, str, label=f"{label}.hook"),
        checkpoint=field(
            h,
            "checkpoint",
            where,
            str,
            choices=CHECKPOINTS,
            label=f"{label}.checkpoint",
        ),
        passed=field(h, "passed", where, bool, label=f"{label}.passed"),
        feedback=field(
            h, "feedback", where, str, default="", label=f"{label}.feedback"
        ),
        attempt=field(h, "attempt", where, int, default=0, label=f"{label}.attempt"),
    )


def check_messages(messages: Any, where: str, label: str = "messages") -> None:
    """Checks a chat as :func:`hat_jax.text.render_chat` takes it.

    ``messages`` is a non-empty list; each message is an object with a known
    ``role``; ``content``, ``reasoning``, ``reasoning_content`` and ``name`` are
    strings (or null); ``tool_calls`` is a list of ``{"name", "arguments"}`` (or
    OpenAI-style ``{"function": {...}}``) with arguments an object or a string
    holding one, and the function and argument names ones a tool-call format can
    write (non-empty, printable, no ``<``, ``>`` or surrounding spaces). Other
    keys are left alone. A system message may only come first, and a tool
    result only after an assistant message with tool calls (or another result).

    Raises:
      DataError: ``where: field 'messages[i]...' ...``.
    """
    if not isinstance(messages, list) or not messages:
        got = "an empty list" if messages == [] else json_type(messages)
        raise DataError(
            f"{where}: field '{label}' must be a non-empty list of messages, got {got}"
        )
    for i, m in enumerate(messages):
        at = f"{label}[{i}]"
        m = _object(m, where, at)
        field(m, "role", where, str, choices=ROLES, label=f"{at}.role")
        for key in ("content", "reasoning", "reasoning_content", "name"):
            field(m, key, where, _TEXT, default=None, label=f"{at}.{key}")
        field(
            m, "hook_feedback", where, bool, default=False, label=f"{at}.hook_feedback"
        )
        calls = field(
            m,
            "tool_calls",
            where,
            (list, type(None)),
            default=None,
            label=f"{at}.tool_calls",
        )
        for j, c in enumerate(calls or ()):
            if not isinstance(c, ToolCall):  # ToolCall objects are fine in memory
                _check_tool_call(c, where, f"{at}.tool_calls[{j}]")
        _check_order(messages, i, where, at)


def _check_order(messages: list, i: int, where: str, at: str) -> None:
    """A system message opens the chat; a tool result answers a tool call."""
    role = messages[i]["role"]
    if role == "system" and i:
        raise DataError(f"{where}: field '{at}' is a system message after the first")
    if role == "tool":
        before = messages[i - 1] if i else {}
        if not (before.get("role") == "tool" or before.get("tool_calls")):
            raise DataError(
                f"{where}: field '{at}' is a tool result that follows no tool call"
            )


def _check_tool_call(c: Any, where: str, label: str) -> None:
    fn = _object(c, where, label)
    if "function" in fn:
        label += ".function"
        fn = _object(fn["function"], where, label)
    _tool_name(fn, where, f"{label}.name")
    args = field(
        fn, "arguments", where, (dict, str), default={}, label=f"{label}.arguments"
    )
    if isinstance(args, str):
        args = parse_line(args, f"{where}: field '{label}.arguments'")
        if not isinstance(args, dict):
            raise DataError(
                f"{where}: field '{label}.arguments' must be an object or a string "
                f"holding one, got a string holding {json_type(args)}"
            )
    for key in args:
        if not isinstance(key, str) or not _writable_name(key):
            raise DataError(
                f"{where}: field '{label}.arguments' has the key {_shown(key)}, "
                "which is not a parameter name (non-empty, printable, no < > or "
                "surrounding spaces)"
            )


def _tool_name(obj: Mapping[str, Any], where: str, label: str) -> str:
    """``obj["name"]``, a name a tool-call format can write."""
    name = field(obj, "name", where, str, label=label)
    if not _writable_name(name):
        raise DataError(
            f"{where}: field '{label}' must be a tool name (non-empty, printable, "
            f"no < > or surrounding spaces), got {_shown(name)}"
        )
    return name


def _shown(value: Any) -> str:
    """``value`` quoted, cut to 40 characters, control characters escaped."""
    text = repr(value)
    return shown(text if len(text) <= 40 else text[:37] + "...")


def _plain_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A message with ToolCall objects turned into {"name", "arguments"} dicts."""
    out = dict(m)
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments} if isinstance(c, ToolCall) else c
            for c in out["tool_calls"]
        ]
    return out
