"""The agent loop: many rooms' turns advance together under one harness each.

One viewer message is one turn: input hooks → system prompt → repeated model
calls (tool calls, built-in ``load_skill``) → pre-reply and reply hooks with
bounded retries → strip reasoning → the reply. Every loop iteration gathers each
unfinished conversation and calls ``policy.generate`` once for all of them, so
generation is batched across rooms.

Decisions (documented here, relied on by tests and trainers):

- **Feedback.** A failed pre-reply/reply hook, or an unreadable model output,
  appends the assistant message as produced and then a ``user`` message carrying
  the hooks' feedback (:func:`feedback_message`, marked ``"hook_feedback": True``
  so SFT can collapse retry traces), added only when the model is asked again.
  User, not system: Qwen templates reject a system turn after the first. A
  failed ``tool_args`` check instead becomes that call's tool result
  (``ToolExchange.fault == "rejected"``); the call does not run.
- **Retries.** Each model output with any failure (rejected tool call, bad
  format, failed reply hook) uses one retry; when failures exceed
  ``harness.retry_limit`` the turn ends ``"failed"`` with the last reply (if any)
  recorded. ``HookEvent.attempt`` is the number of retries used before the output
  it judges.
- **Parse errors.** Schema problems the parser finds (unknown tool, wrong type...)
  are left to the ``tool_args`` hooks. Any other parse error (a broken
  ``<tool_call>``, unclosed ``<think>``...) means the output is not run at all,
  not even its well-formed calls: the assistant message keeps the raw text as
  content, a ``tool_call_format`` event is recorded at the ``tool_args``
  checkpoint and the errors are fed back as above.
- **Turn limit.** ``harness.turn_limit`` bounds model calls per viewer message
  (retries included); running out ends the turn ``"turn_limit"``.
- **Input hooks.** A failed input check ends the turn ``"failed"`` before any
  model call (``meta["stopped_at"] == "input"``): retrying cannot fix the input.
  A passed check with feedback is a note (e.g. a likely prompt injection): it is
  added after the viewer message as a user message marked ``"hook_note": True``.
- **Tool results seen by hooks** (``HookContext.tool_results``): successful
  backend results only; skill bodies, rejections and fault texts are not facts.
- **Timings** (seconds, ``time.perf_counter``): ``model/K`` is the wall time of
  the batched call that produced model call K, ``model``/``tools``/``hooks`` are
  sums, ``total`` runs from the start of :func:`run_turns` to the turn's end
  (what a room waits, batching included).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hat_jax.harness.backend import ToolBackend, ToolContext, ToolOutcome
from hat_jax.harness.hooks import run_hooks
from hat_jax.harness.policy import Policy, PolicyOutput
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.harness.trajectory import (
    HookContext,
    HookEvent,
    ToolExchange,
    Trajectory,
)
from hat_jax.text.toolcall import ParsedReply, ToolCall, parse_reply

# Parser findings the tool_args hooks judge; every other kind is a format error.
SCHEMA_ERRORS = frozenset(
    {"unknown_tool", "unknown_parameter", "missing_parameter", "schema_type"}
)
FORMAT_HOOK = "tool_call_format"  # the event name for unreadable outputs
EMPTY_HOOK = "empty_reply"  # the event name for a reply with no text
_THINK = re.compile(r"<think>.*?</think>|</?think>", re.S)


@dataclasses.dataclass(frozen=True)
class TurnRequest:
    """One viewer message to answer.

    Attributes:
      user_message: the viewer's message (danmaku, question...).
      room_context: what the prompt's room-context section shows (and the
        backend may read).
      meta: carried into ``Trajectory.meta`` and the backend's context.
      harness: overrides ``run_turns``'s harness for this request, so one batch
        can mix original and augmented harnesses.
    """

    user_message: str
    room_context: Any = None
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    harness: Harness | None = None


def strip_reasoning(text: str) -> str:
    """Removes ``<think>`` blocks (and stray think tags) from a reply."""
    return _THINK.sub("", text).strip()


def feedback_message(failures: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The user message that tells the model why its last message was rejected."""
    lines = "\n".join(f"- {hook}: {text}" for hook, text in failures)
    content = (
        "The harness rejected your last message; it was not sent.\n"
        f"{lines}\nFix this and continue."
    )
    return {"role": "user", "content": content, "hook_feedback": True}


def note_message(notes: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The user message that passes input-hook notes on to the model."""
    lines = "\n".join(f"- {hook}: {text}" for hook, text in notes)
    return {"role": "user", "content": f"Harness notes:\n{lines}", "hook_note": True}


def _assistant(content: str, reasoning: str | None, calls=()) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        msg["reasoning"] = reasoning
    if calls:
        msg["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in calls]
    return msg


def _raw_content(text: str, parsed: ParsedReply) -> str:
    """The output after its reasoning, verbatim (what the model really wrote)."""
    if parsed.reasoning is None:
        return text.strip()
    close = text.find("</think>")
    return "" if close == -1 else text[close + len("</think>") :].strip()


@dataclasses.dataclass
class _Conversation:
    """The mutable state of one turn while the loop runs."""

    harness: Harness
    request: TurnRequest
    traj: Trajectory
    rng: np.random.Generator
    loaded: list[str] = dataclasses.field(default_factory=list)
    facts: list[str] = dataclasses.field(default_factory=list)
    failures: int = 0
    calls: int = 0
    last_reply: str | None = None
    notes: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    done: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.traj.messages

    def add_time(self, key: str, seconds: float) -> None:
        self.traj.timings[key] = self.traj.timings.get(key, 0.0) + seconds

    def finish(self, status: str, reply: str | None, t0: float) -> None:
        self.traj.status, self.traj.reply, self.done = status, reply, True
        self.traj.timings["total"] = time.perf_counter() - t0
        self.traj.meta.update(
            loaded_skills=list(self.loaded),
            model_calls=self.calls,
            retries=min(self.failures, self.harness.retry_limit),
        )

    def hooks(self, checkpoint: str, **ctx: Any) -> list[tuple[str, str]]:
        """Runs one checkpoint's hooks; records events; returns the failures.

        Notes (passed results with feedback) are kept in ``self.notes``.
        """
        t = time.perf_counter()
        context = HookContext(
            harness=self.harness,
            checkpoint=checkpoint,
            user_message=self.request.user_message,
            loaded_skills=tuple(self.loaded),
            tool_results=tuple(self.facts),
            **ctx,
        )
        failed = []
        for spec, result in run_hooks(self.harness, checkpoint, context):
            self.event(spec.name, checkpoint, result.passed, result.feedback)
            if not result.passed:
                failed.append((spec.name, result.feedback))
            elif result.feedback:
                self.notes.append((spec.name, result.feedback))
        self.add_time("hooks", time.perf_counter() - t)
        return failed

    def event(self, hook: str, checkpoint: str, passed: bool, feedback: str) -> None:
        self.traj.hook_events.append(
            HookEvent(hook, checkpoint, passed, feedback, attempt=self.failures)
        )


def _start(
    harness: Harness, request: TurnRequest, rng: np.random.Generator, t0: float
) -> _Conversation:
    h = request.harness or harness
    t = time.perf_counter()
    system = render_system_prompt(h, request.room_context)
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": request.user_message},
    ]
    traj = Trajectory(h.id, request.user_message, messages, meta=dict(request.meta))
    conv = _Conversation(h, request, traj, rng)
    conv.add_time("prompt", time.perf_counter() - t)
    if conv.hooks("input"):
        conv.traj.meta["stopped_at"] = "input"
        conv.finish("failed", None, t0)
        return conv
    if conv.notes:  # e.g. "this message reads like a prompt injection"
        conv.messages.append(note_message(conv.notes))
    if h.turn_limit <= 0:
        conv.finish("turn_limit", None, t0)
    return conv


def _load_skill(conv: _Conversation, call: ToolCall) -> ToolOutcome:
    name = call.arguments.get("name")
    skill = conv.harness.skill(name) if isinstance(name, str) else None
    if skill is None:
        have = ", ".join(s.name for s in conv.harness.skills) or "(none)"
        text = f"error: no skill named {name!r}; available skills: {have}"
        return ToolOutcome(text, ok=False, fault="unknown_skill")
    if skill.name not in conv.loaded:
        conv.loaded.append(skill.name)
    return ToolOutcome(skill.body)


def _run_tool(conv: _Conversation, call: ToolCall, backend: ToolBackend) -> bool:
    """Checks and runs one call, appends its tool message; False if rejected."""
    failed = conv.hooks("tool_args", tool_call=call)
    t = time.perf_counter()
    if failed:
        text = "; ".join(f"{hook}: {fb}" for hook, fb in failed)
        outcome = ToolOutcome(f"error: call rejected. {text}", False, "rejected")
    elif call.name == LOAD_SKILL:
        outcome = _load_skill(conv, call)
    else:
        context = ToolContext(
            room_context=conv.request.room_context,
            meta=conv.request.meta,
            rng=conv.rng,
            index=sum(t.name != LOAD_SKILL for t in conv.traj.tool_calls),
        )
        try:
            outcome = backend.call(call.name, dict(call.arguments), context=context)
        except Exception as e:  # the protocol says never raise; keep the turn alive
            outcome = ToolOutcome(f"error: {type(e).__name__}: {e}", False, "error")
        if outcome.ok:
            conv.facts.append(outcome.result_text)
    conv.add_time("tools", time.perf_counter() - t)
    conv.traj.tool_calls.append(
        ToolExchange(
            call.name,
            dict(call.arguments),
            outcome.result_text,
            ok=outcome.ok,
            fault=outcome.fault,
        )
    )
    conv.messages.append(
        {"role": "tool", "name": call.name, "content": outcome.result_text}
    )
    return not failed


def _step(
    conv: _Conversation, out: PolicyOutput, backend: ToolBackend, t0: float
) -> None:
    """Handles one model output of one conversation."""
    h = conv.harness
    parsed = parse_reply(out.text, h.tool_call_format, tools=h.tool_specs())
    if out.finish_reason == "length":  # the call's token budget ended it
        conv.traj.meta["calls_at_budget"] = conv.traj.meta.get("calls_at_budget", 0) + 1
    if out.tokens is not None:
        gens = conv.traj.meta.setdefault("generations", [])
        gens.append({"tokens": list(out.tokens), "logprobs": out.logprobs})
    bad = [e for e in parsed.errors if e.kind not in SCHEMA_ERRORS]
    failed: list[tuple[str, str]] = []
    tell = True  # feed `failed` back in a user message (tool rejections are results)
    if bad:
        content = _raw_content(out.text, parsed)
        conv.messages.append(_assistant(content, parsed.reasoning))
        feedback = "; ".join(f"{e.kind}: {e.message}" for e in bad)
        feedback = f"your output could not be read ({feedback})"
        conv.event(FORMAT_HOOK, "tool_args", False, feedback)
        failed.append((FORMAT_HOOK, feedback))
    elif parsed.tool_calls:
        conv.messages.append(
            _assistant(parsed.content, parsed.reasoning, parsed.tool_calls)
        )
        ok = [_run_tool(conv, call, backend) for call in parsed.tool_calls]
        failed = [] if all(ok) else [("tool_args", "a tool call was rejected")]
        tell = False
    else:
        reply = strip_reasoning(parsed.content)
        conv.messages.append(_assistant(parsed.content, parsed.reasoning))
        conv.last_reply = reply
        failed = conv.hooks("pre_reply", reply=reply) + conv.hooks("reply", reply=reply)
        if not reply and not failed:  # even without a reply_format hook
            conv.event(EMPTY_HOOK, "reply", False, "the reply is empty")
            failed.append((EMPTY_HOOK, "the reply is empty"))
        if not failed:
            return conv.finish("ok", reply, t0)
    conv.failures += bool(failed)
    if conv.failures > h.retry_limit:
        conv.finish("failed", conv.last_reply, t0)
    elif conv.calls >= h.turn_limit:
        conv.finish("turn_limit", conv.last_reply, t0)
    elif failed and tell:  # only when the model will be asked again
        conv.messages.append(feedback_message(failed))


def run_turns(
    harness: Harness,
    requests: Sequence[TurnRequest],
    policy: Policy,
    backend: ToolBackend,
    *,
    seed: int | None = 0,
) -> list[Trajectory]:
    """Runs every request to the end of its turn, batching model calls.

    Args:
      harness: the harness (a request's own ``harness`` overrides it).
      requests: the viewer messages, one conversation each.
      policy: writes assistant messages; called once per loop iteration with
        every unfinished conversation.
      backend: runs the harness tools.
      seed: seeds each conversation's backend generator and the policy's
        per-iteration seeds (None: the policy chooses).

    Returns:
      One Trajectory per request, in order. Hook failures, tool faults and limits
      end up in the trajectories (status, events), never as exceptions.
    """
    t0 = time.perf_counter()
    master = np.random.default_rng(seed)
    convs = [
        _start(
            harness, r, np.random.default_rng(None if seed is None else [seed, i]), t0
        )
        for i, r in enumerate(requests)
    ]
    while active := [c for c in convs if not c.done]:
        fmts = [c.harness.tool_call_format for c in active]
        fmt = fmts[0] if len(set(fmts)) == 1 else fmts
        call_seed = None if seed is None else int(master.integers(2**31))
        t = time.perf_counter()
        outputs = policy.generate([c.messages for c in active], fmt=fmt, seed=call_seed)
        dt = time.perf_counter() - t
        if len(outputs) != len(active):
            raise ValueError(
                f"policy returned {len(outputs)} outputs for {len(active)}"
            )
        for conv, out in zip(active, outputs):
            conv.traj.timings[f"model/{conv.calls}"] = dt
            conv.add_time("model", dt)
            conv.calls += 1
            _step(conv, out, backend, t0)
    return [c.traj for c in convs]


def run_turn(
    harness: Harness,
    request: TurnRequest,
    policy: Policy,
    backend: ToolBackend,
    *,
    seed: int | None = 0,
) -> Trajectory:
    """One request: :func:`run_turns` with a batch of one."""
    return run_turns(harness, [request], policy, backend, seed=seed)[0]
