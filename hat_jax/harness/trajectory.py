"""What an agent turn leaves behind: a Trajectory, and the records inside it.

A Trajectory is plain data (JSON-serialisable through `to_dict`/`from_dict`), so the
simulator's oracle, the agent loop, HSA and the trainers all speak it. `messages` is
the chat as the model saw and produced it (system prompt first), in the message
format `hat_jax.text.render_chat` takes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from hat_jax.harness.spec import Harness
from hat_jax.text.toolcall import ToolCall

CHECKPOINTS = ("input", "tool_args", "pre_reply", "reply")
STATUSES = ("ok", "failed", "turn_limit")


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

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["messages"] = [_plain_message(m) for m in self.messages]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trajectory:
        d = dict(d)
        d["tool_calls"] = [ToolExchange(**t) for t in d.get("tool_calls", ())]
        d["hook_events"] = [HookEvent(**h) for h in d.get("hook_events", ())]
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        return cls.from_dict(json.loads(line))


def _plain_message(m: Mapping[str, Any]) -> dict[str, Any]:
    """A message with ToolCall objects turned into {"name", "arguments"} dicts."""
    out = dict(m)
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments} if isinstance(c, ToolCall) else c
            for c in out["tool_calls"]
        ]
    return out
