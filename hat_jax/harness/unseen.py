"""Identifiers a training view asks for that its own context does not contain.

A trained assistant message that calls a tool, passes a parameter, loads a
skill or signs off with a tag that appears nowhere before it in the same
conversation teaches the model to produce that identifier from memory: the
opposite of reading the harness. :func:`unseen_identifiers` lists such
identifiers for one conversation (any view of a trajectory: with or without
its system prompt), so data builders and tests can refuse them.

What counts as seen: the identifier occurs as a whole token (not inside a
longer name) in a message before the assistant message that uses it: the
system prompt, a user message, a tool result (a loaded skill's body included)
or an earlier assistant message's text. What is checked in each assistant
message: every tool call's name (``load_skill`` itself is the built-in and
always allowed), every argument key at any depth, a ``load_skill`` call's skill
name, and every sign-off tag (``hat_jax.harness.signoff.TAG``) in its content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hat_jax.harness.signoff import TAG
from hat_jax.harness.spec import LOAD_SKILL
from hat_jax.harness.tokens import rejected


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def _text(message: Mapping[str, Any]) -> str:
    parts = [message.get("content"), message.get("reasoning")]
    out = [p if isinstance(p, str) else json.dumps(p) for p in parts if p]
    for call in message.get("tool_calls") or ():
        out.append(json.dumps(call, ensure_ascii=False))
    return "\n".join(out)


def _occurs(name: str, text: str) -> bool:
    """``name`` as a whole token of ``text`` (no identifier character on either
    side, so ``get_item`` is not seen inside ``get_item_v2``)."""
    pattern = rf"(?<![A-Za-z0-9_#]){re.escape(name)}(?![A-Za-z0-9_])"
    return re.search(pattern, text) is not None


def used_identifiers(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, identifier) pairs an assistant message uses: "tool", "param",
    "skill", "tag"."""
    out: list[tuple[str, str]] = []
    for call in message.get("tool_calls") or ():
        name = str(call.get("name", ""))
        args = call.get("arguments")
        if name == LOAD_SKILL:
            if isinstance(args, Mapping) and isinstance(args.get("name"), str):
                out.append(("skill", args["name"]))
            continue
        out.append(("tool", name))
        out += [("param", k) for k in dict.fromkeys(_keys(args))]
    content = message.get("content")
    if isinstance(content, str):
        out += [("tag", t) for t in dict.fromkeys(TAG.findall(content))]
    return out


def unseen_identifiers(
    messages: Sequence[Mapping[str, Any]], *, train_rejected: bool = True
) -> list[tuple[int, str, str]]:
    """(message index, kind, identifier) for each identifier a trained assistant
    message uses that no earlier message contains. ``train_rejected``: as
    ``trajectory_to_tokens``'s (False: a message the harness rejected is
    context, not a target, and is not checked)."""
    skip = iter([False] * len(messages) if train_rejected else rejected(list(messages)))
    out = []
    context = ""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and not next(skip):
            for kind, name in used_identifiers(m):
                if not _occurs(name, context):
                    out.append((i, kind, name))
        context += "\n" + _text(m)
    return out
