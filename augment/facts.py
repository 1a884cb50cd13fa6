"""What a gold reply asserts, and replaying a gold trajectory's hook checks.

A reply's *facts* are its numbers (normalised as the factual-risk hook reads
them) and every tool-result value it quotes. Hook ops and the validator both
replay the pre-reply and reply checkpoints exactly as the agent loop does: the
skills the trajectory loaded, and only successful non-``load_skill`` tool
results as facts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from hat_jax.harness.hooks import find_numbers, run_hooks
from hat_jax.harness.signoff import TAG, sign
from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.harness.trajectory import HookContext, Trajectory


def result_values(text: str) -> list[str]:
    """Scalar values inside a JSON tool result, as text (strings of 2+ chars)."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return []
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and len(v.strip()) >= 2:
            out.append(v.strip())
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(str(v))

    walk(data)
    return out


def tool_results(traj: Trajectory) -> list[str]:
    """The texts the loop counts as facts: ok results of real tools."""
    return [ex.result for ex in traj.tool_calls if ex.ok and ex.name != LOAD_SKILL]


def reply_facts(reply: str, results: Iterable[str]) -> tuple[Counter, set[str]]:
    """The reply's numbers (a multiset) and the tool-result values it quotes."""
    numbers = Counter(norm for _, norm, _ in find_numbers(reply or ""))
    values = {v for r in results for v in result_values(r) if v in (reply or "")}
    return numbers, values


def missing_facts(old_reply: str, new_reply: str, results: Iterable[str]) -> list[str]:
    """Facts of ``old_reply`` that ``new_reply`` lost."""
    results = list(results)
    old_n, old_v = reply_facts(old_reply, results)
    new_n = Counter(norm for _, norm, _ in find_numbers(new_reply or ""))
    lost = [f"number {n}" for n, c in old_n.items() if new_n[n] < c]
    return lost + [f"value {v!r}" for v in sorted(old_v) if v not in (new_reply or "")]


def loaded(traj: Trajectory) -> list[str]:
    """Skills loaded by successful load_skill calls, in order."""
    out = []
    for ex in traj.tool_calls:
        name = ex.arguments.get("name")
        if ex.name == LOAD_SKILL and ex.ok and isinstance(name, str):
            if name not in out:
                out.append(name)
    return out


def hook_context(
    harness: Harness, traj: Trajectory, checkpoint: str, **kw: Any
) -> HookContext:
    return HookContext(
        harness=harness,
        checkpoint=checkpoint,
        user_message=traj.user_message,
        loaded_skills=tuple(loaded(traj)),
        tool_results=tuple(tool_results(traj)),
        **kw,
    )


def failing_hooks(
    harness: Harness, traj: Trajectory, reply: str | None = None
) -> list[str]:
    """Input, pre-reply and reply hooks of ``harness`` that the gold fails."""
    reply = traj.reply if reply is None else reply
    out = []
    for checkpoint in ("input", "pre_reply", "reply"):
        if checkpoint != "input" and reply is None:
            continue
        ctx = hook_context(harness, traj, checkpoint, reply=reply)
        for spec, res in run_hooks(harness, checkpoint, ctx):
            if not res.passed:
                out.append(f"{spec.name} ({checkpoint}): {res.feedback}")
    return out


_PIECE = re.compile(r".+?(?:[。！？!?～~；;，,]+|\.(?=\s)|\.$|$)", re.S)


def shorten_reply(reply: str, limit: int, results: Iterable[str]) -> str | None:
    """The reply with fact-free clauses dropped from the end until it fits
    ``limit`` characters; None if that cannot be done keeping every fact. A
    sign-off tag at the end stays at the end."""
    results = list(results)
    body = reply.strip()
    tag = body.rsplit(None, 1)[-1] if body else ""
    if TAG.fullmatch(tag) and body.endswith(tag):
        short = shorten_reply(body[: -len(tag)], limit - len(tag) - 1, results)
        return None if short is None else sign(short, tag)
    pieces = [p for p in _PIECE.findall(reply.strip()) if p.strip()]
    keep = list(pieces)
    for i in range(len(pieces) - 1, 0, -1):
        if len("".join(keep).strip()) <= limit:
            break
        numbers, values = reply_facts(pieces[i], results)
        if not numbers and not values:
            keep.pop(i)
    text = "".join(keep).strip().rstrip("，,；;").strip()
    if len(text) > limit or missing_facts(reply, text, results):
        return None
    return text
