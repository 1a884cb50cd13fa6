"""Where tool calls go: a backend protocol, and a static backend for tests.

The agent loop never runs a tool itself. It hands `(name, arguments)` to a
:class:`ToolBackend` and shows the model whatever text comes back. Faults are part
of the outcome, not exceptions: a timeout, malformed output or a permission denial
reaches the model as a tool result (the paper's simulator injects exactly these),
and the loop records it in ``ToolExchange.fault``. The live-room simulator provides
the real backend; :class:`StaticBackend` serves canned results.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

FAULTS = ("timeout", "malformed", "permission_denied")


@dataclasses.dataclass(frozen=True)
class ToolOutcome:
    """What one call returned.

    Attributes:
      result_text: the text the model sees inside ``<tool_response>``.
      ok: False when the call did not produce a usable result.
      fault: why not: "timeout" | "malformed" | "permission_denied" |
        "unknown_tool" | "error" | ... (None when ok).
    """

    result_text: str
    ok: bool = True
    fault: str | None = None


@dataclasses.dataclass(frozen=True)
class ToolContext:
    """What a backend may look at besides the call.

    Attributes:
      room_context: the request's room context (what the system prompt shows).
      meta: the request's meta (room id, case id, simulator state keys...).
      rng: this conversation's generator, for stochastic backends.
      index: the position of this call among the conversation's backend calls
        (``load_skill``, which the loop answers itself, is not counted).
    """

    room_context: Any = None
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    rng: np.random.Generator | None = None
    index: int = 0


class ToolBackend(Protocol):
    """Runs a harness tool; never raises for a bad call (returns a fault)."""

    def call(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext
    ) -> ToolOutcome: ...


def as_result_text(value: Any) -> str:
    """Tool results as text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def fault_outcome(fault: str, name: str) -> ToolOutcome:
    """The text a model sees for an injected fault, in one place."""
    texts = {
        "timeout": f"error: {name} timed out; the tool did not answer",
        "malformed": '{"status": "ok", "data": {"prod',  # truncated JSON
        "permission_denied": f"error: permission denied for {name} in this room",
    }
    if fault not in texts:
        raise ValueError(f"unknown fault {fault!r}; have {sorted(texts)}")
    # Malformed output still "returns", but its content is unusable.
    return ToolOutcome(texts[fault], ok=False, fault=fault)


Result = Any  # a str/JSON value, a ToolOutcome, or a function of the arguments


class StaticBackend:
    """Canned results per tool name, with optional injected faults.

    Args:
      results: tool name -> a string or JSON value (returned for any arguments),
        a :class:`ToolOutcome`, or a function ``(arguments) -> either``.
      faults: tool name -> a fault from :data:`FAULTS`, or a list of faults
        (or None for a normal answer) used in order, one per call, the last
        repeated; e.g. ``["timeout", None]`` fails once, then answers.

    Every call is appended to ``self.calls`` as ``(name, arguments)``.
    """

    def __init__(
        self,
        results: Mapping[str, Result],
        faults: Mapping[str, str | list[str | None] | None] | None = None,
    ):
        self.results = dict(results)
        self.faults = dict(faults or {})
        for plan in self.faults.values():
            for fault in plan if isinstance(plan, list) else [plan]:
                if fault is not None and fault not in FAULTS:
                    raise ValueError(f"unknown fault {fault!r}; have {FAULTS}")
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._counts: dict[str, int] = {}

    def _fault(self, name: str) -> str | None:
        plan = self.faults.get(name)
        n = self._counts.get(name, 0)
        self._counts[name] = n + 1
        if isinstance(plan, list):
            return plan[min(n, len(plan) - 1)] if plan else None
        return plan

    def call(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext
    ) -> ToolOutcome:
        self.calls.append((name, dict(arguments)))
        if name not in self.results:
            text = f"error: unknown tool {name!r}"
            return ToolOutcome(text, ok=False, fault="unknown_tool")
        fault = self._fault(name)
        if fault is not None:
            return fault_outcome(fault, name)
        value = self.results[name]
        if callable(value):
            try:
                value = value(dict(arguments))
            except Exception as e:  # a canned function rejecting arguments
                return ToolOutcome(f"error: {e}", ok=False, fault="error")
        if isinstance(value, ToolOutcome):
            return value
        return ToolOutcome(as_result_text(value))
