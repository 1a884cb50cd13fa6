"""The op registry, and carrying a gold trajectory over to an edited harness.

An op is a pure function ``(harness, trajectory, rng, **params) -> (harness',
trajectory', mapping)`` registered under a name and one of the five HSA
dimensions (:data:`DIMENSIONS`). ``trajectory`` may be None (augmenting a bare
harness, as the CLI does); hook ops are then conservative only about what they
can check. Params are keyword-only with defaults; their defaults' types are what
spec strings are parsed into (``None`` defaults take int, float, bool or str).

Ops live in ``ops_skills``, ``ops_tools``, ``ops_prompt`` and ``ops_hooks``;
importing :mod:`augment` registers them all.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hat_jax.harness.backend import FAULTS, fault_outcome
from hat_jax.harness.hooks import run_hooks
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.harness.trajectory import HookContext, ToolExchange, Trajectory
from hat_jax.registry import Registry
from hat_jax.text.toolcall import ToolCall

DIMENSIONS = ("skill_ids", "skill_content", "tool_schema", "prompt", "hooks")
OpResult = tuple[Harness, Trajectory | None, Mapping]


@dataclasses.dataclass(frozen=True)
class Op:
    """A registered op and what its spec-string params may be."""

    name: str
    dimension: str
    fn: Callable[..., OpResult]
    defaults: dict[str, Any]  # param -> default (its type is the parsed type)
    choices: dict[str, tuple[Any, ...]]  # param -> allowed values
    ranges: dict[str, tuple[float, float]]  # param -> inclusive (lo, hi)
    doc: str

    def __call__(self, harness, trajectory, rng, **params) -> OpResult:
        return self.fn(harness, trajectory, rng, **params)


_OPS: Registry[Op] = Registry("op")


def register_op(
    name: str,
    dimension: str,
    *,
    choices: dict[str, Sequence[Any]] | None = None,
    ranges: dict[str, tuple[float, float]] | None = None,
) -> Callable[[Callable[..., OpResult]], Callable[..., OpResult]]:
    """Decorator: registers ``fn`` as op ``name`` in ``dimension``."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}; have {DIMENSIONS}")

    def register(fn: Callable[..., OpResult]) -> Callable[..., OpResult]:
        sig = inspect.signature(fn)
        defaults = {
            p.name: p.default
            for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }
        doc = (fn.__doc__ or "").strip().splitlines()
        _OPS.add(
            name,
            Op(
                name,
                dimension,
                fn,
                defaults,
                {k: tuple(v) for k, v in (choices or {}).items()},
                dict(ranges or {}),
                doc[0] if doc else "",
            ),
        )
        return fn

    return register


def get_op(name: str) -> Op:
    """The op registered as ``name``."""
    return _OPS.lookup(name)


def all_ops() -> dict[str, Op]:
    """Every registered op by name (sorted by dimension, then name)."""
    order = sorted(_OPS.values(), key=lambda o: (DIMENSIONS.index(o.dimension), o.name))
    return {o.name: o for o in order}


def pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def subset(rng: np.random.Generator, items: Sequence[Any], frac: float) -> list:
    """Each item with probability ``frac``; at least one when any exist."""
    chosen = [x for x in items if rng.random() < frac]
    if items and not chosen:
        chosen = [pick(rng, items)]
    return chosen


# -- carrying a trajectory over -----------------------------------------------
def carry(
    traj: Trajectory | None,
    old: Harness,
    new: Harness,
    mapping: Mapping,
    *,
    rewrite: Callable[[str], str] | None = None,
    reply: str | None = None,
) -> Trajectory | None:
    """The gold trajectory as it reads under ``new``.

    Tool calls go through ``mapping.forward_call``; ``load_skill`` results become
    the new skill bodies; tool results stay as they are; ``rewrite`` (renames)
    is applied to assistant reasoning and pre-call content; ``reply`` replaces
    the final reply when a hook op regenerated it; the system prompt is
    re-rendered for ``new``.
    """
    if traj is None:
        return None
    t = copy.deepcopy(traj)
    t.harness_id = new.id
    for ex in t.tool_calls:
        call = ToolCall(ex.name, ex.arguments)
        fwd = mapping.forward_call(call)
        ex.result = carried_result(ex, fwd, traj.user_message, old, new, mapping)
        ex.name, ex.arguments = fwd.name, fwd.arguments
    exchanges = iter(t.tool_calls)
    aligned = sum(m.get("role") == "tool" for m in t.messages) == len(t.tool_calls)
    pending: list[ToolCall] = []
    final = _final_reply_index(t)
    for i, msg in enumerate(t.messages):
        role = msg.get("role")
        if role == "system" and i == 0:
            msg["content"] = _system_prompt(traj, old, new, msg.get("content"))
        elif role == "assistant":
            calls = [_as_call(c) for c in msg.get("tool_calls") or ()]
            pending = list(calls)
            if calls:
                msg["tool_calls"] = [_call_dict(mapping.forward_call(c)) for c in calls]
            if rewrite and msg.get("reasoning"):
                msg["reasoning"] = rewrite(msg["reasoning"])
            if i == final and reply is not None:
                msg["content"] = reply
            elif rewrite and isinstance(msg.get("content"), str) and i != final:
                msg["content"] = rewrite(msg["content"])
        elif role == "tool" and aligned:
            ex = next(exchanges)
            msg["content"] = ex.result
            if "name" in msg:
                msg["name"] = ex.name
        elif role == "tool" and pending:
            call = pending.pop(0)
            msg["content"] = _skill_result(call, msg.get("content"), old, new, mapping)
            if "name" in msg:
                msg["name"] = mapping.forward_call(call).name
        elif role == "user" and msg.get("hook_feedback") and rewrite:
            msg["content"] = rewrite(msg["content"])
    if reply is not None:
        t.reply = reply
    if "loaded_skills" in t.meta:
        t.meta["loaded_skills"] = [mapping.skill(s) for s in t.meta["loaded_skills"]]
    return t


def carried_result(
    ex: ToolExchange,
    new_call: ToolCall,
    user_message: str,
    old: Harness,
    new: Harness,
    mapping: Mapping,
) -> str:
    """What the exchange ``ex`` (under ``old``) returns for ``new_call`` under
    ``new``: backend results unchanged; a loaded skill's new body; a fault's
    text naming the new tool; a rejection's feedback from the new schema."""
    call = ToolCall(ex.name, ex.arguments)
    if ex.fault == "rejected":
        ctx = HookContext(new, "tool_args", user_message, tool_call=new_call)
        runs = run_hooks(new, "tool_args", ctx)
        failed = [(spec.name, res.feedback) for spec, res in runs if not res.passed]
        if failed:
            # The agent loop's wording for a rejected call (hat_jax.harness.loop).
            text = "; ".join(f"{hook}: {fb}" for hook, fb in failed)
            return f"error: call rejected. {text}"
        return ex.result
    if ex.fault in FAULTS and ex.result == fault_outcome(ex.fault, ex.name).result_text:
        return fault_outcome(ex.fault, new_call.name).result_text
    if ex.ok:
        return _skill_result(call, ex.result, old, new, mapping)
    return ex.result


def _as_call(c: Any) -> ToolCall:
    return c if isinstance(c, ToolCall) else ToolCall(c["name"], dict(c["arguments"]))


def _call_dict(c: ToolCall) -> dict[str, Any]:
    return {"name": c.name, "arguments": c.arguments}


def _final_reply_index(t: Trajectory) -> int | None:
    """The message that carries the dispatched reply (last call-free answer)."""
    for i in range(len(t.messages) - 1, -1, -1):
        m = t.messages[i]
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            return i if t.reply is not None else None
    return None


def _skill_result(call: ToolCall, text: Any, old: Harness, new: Harness, m: Mapping):
    """A load_skill result re-read from the new harness; others unchanged."""
    if call.name != LOAD_SKILL or not isinstance(call.arguments.get("name"), str):
        return text
    skill = old.skill(call.arguments["name"])
    if skill is None or text != skill.body:
        return text
    new_skill = new.skill(m.skill(skill.name))
    return new_skill.body if new_skill is not None else text


def _system_prompt(traj: Trajectory, old: Harness, new: Harness, content: Any):
    """Re-renders the system prompt when its room context is known."""
    if "room_context" in traj.meta:
        return render_system_prompt(new, traj.meta["room_context"])
    if content == render_system_prompt(old, None):
        return render_system_prompt(new, None)
    return content


def gold_calls(traj: Trajectory | None) -> list[ToolCall]:
    """Every tool call the assistant made, in order (load_skill included)."""
    if traj is None:
        return []
    return [
        _as_call(c)
        for m in traj.messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or ()
    ]


def loaded_skills(traj: Trajectory | None) -> list[str]:
    """Skill names the trajectory loaded, in order, without repeats."""
    out: list[str] = []
    for c in gold_calls(traj):
        name = c.arguments.get("name")
        if c.name == LOAD_SKILL and isinstance(name, str) and name not in out:
            out.append(name)
    return out


def finish(
    name: str,
    params: dict[str, Any],
    old: Harness,
    traj: Trajectory | None,
    new: Harness,
    mapping: Mapping,
    **carry_kw: Any,
) -> OpResult:
    """Records the op in the mapping and carries the trajectory over."""
    args = ",".join(f"{k}={v}" for k, v in params.items() if v is not None)
    mapping.ops.append(f"{name}({args})" if args else name)
    return new, carry(traj, old, new, mapping, **carry_kw), mapping
