"""Generic tool use with random tool schemas.

Each example lists 2-4 tools with randomly chosen names, parameter names,
descriptions and order (from :mod:`experiments.world.tools_bank`), sometimes
with fully random names (``tool_k3x``), in the system prompt exactly as
``render_chat`` writes a ``tools`` block. Most requests need one of the tools:
the assistant calls it in the qwen_xml format with the listed names, a tool
message returns a result, and the final reply uses it. The rest need no tool
(small talk, simple questions) and are answered directly, so what is learned
is reading the tool list in context, not a fixed tool set.
"""

from __future__ import annotations

import json
import string
from typing import Any

import numpy as np

from experiments.world import banks
from experiments.world.tools_bank import CONCEPTS, Concept
from hat_jax.harness.trajectory import ToolExchange
from hat_jax.text.chat import IM_END, IM_START, render_chat

NO_TOOL_SHARE = 0.25
RANDOM_NAME_SHARE = 0.2
SYSTEM_HEADS = (
    "",
    "You are a helpful assistant.",
    "You are a helpful assistant. Use a tool only when the request needs one.",
    "You are a friendly assistant with access to some functions.",
)


def _random_name(rng: np.random.Generator) -> str:
    tail = "".join(
        banks.pick(rng, string.ascii_lowercase + "0123456789") for _ in range(3)
    )
    return f"tool_{tail}"


def make_schema(
    concept: Concept, rng: np.random.Generator
) -> tuple[dict[str, Any], list[str]]:
    """A random JSON-schema tool for ``concept`` and its param names by index."""
    name = (
        _random_name(rng)
        if rng.random() < RANDOM_NAME_SHARE
        else banks.pick(rng, concept.names)
    )
    keys = [banks.pick(rng, p.names) for p in concept.params]
    props = {}
    for i in rng.permutation(len(keys)):
        p = concept.params[int(i)]
        props[keys[int(i)]] = {"type": p.type, "description": p.description}
    required = [k for k, p in zip(keys, concept.params) if p.required]
    tool = {
        "name": name,
        "description": banks.pick(rng, concept.descriptions),
        "parameters": {"type": "object", "properties": props, "required": required},
    }
    return tool, keys


def system_prompt(head: str, tools: list[dict[str, Any]]) -> str:
    """The system message content: ``head`` and the rendered tools block."""
    msgs = [{"role": "system", "content": head}] if head else []
    text = render_chat(msgs, tools=tools, add_generation_prompt=False)
    return text.removeprefix(f"{IM_START}system\n").removesuffix(f"{IM_END}\n")


def _direct(rng: np.random.Generator) -> tuple[str, str]:
    """A request no tool is needed for, and its answer."""
    if rng.random() < 0.6:
        return banks.pick(rng, banks.CHAT_EN)
    a, b = int(rng.integers(2, 20)), int(rng.integers(2, 20))
    return f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}."


def make_tooluse(rng: np.random.Generator) -> dict[str, Any]:
    """One example: ``{"messages", "user_message", "reply", "tools", "exchanges"}``.

    ``exchanges`` holds a ToolExchange per call (none for a direct answer).
    """
    picks = rng.permutation(len(CONCEPTS))[: int(rng.integers(2, 5))]
    concepts = [CONCEPTS[int(i)] for i in picks]
    schemas = [make_schema(c, rng) for c in concepts]
    tools = [schemas[int(i)][0] for i in rng.permutation(len(schemas))]
    if len({t["name"] for t in tools}) < len(tools):  # a clash of random names
        return make_tooluse(rng)
    head = banks.pick(rng, SYSTEM_HEADS)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(head, tools)}
    ]
    if rng.random() < NO_TOOL_SHARE:
        ask, reply = _direct(rng)
        messages += [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": reply},
        ]
        return {
            "messages": messages,
            "user_message": ask,
            "reply": reply,
            "tools": tools,
            "exchanges": [],
        }
    concept, (tool, keys) = concepts[0], schemas[0]
    values = concept.draw(rng)
    fill = {f"v{i}": v for i, v in enumerate(values)}
    ask = banks.pick(rng, concept.asks).format(**fill)
    args = dict(zip(keys, values))
    result = concept.result(rng, values)
    reply = concept.reply.format(**fill, **result)
    call = {"name": tool["name"], "arguments": args}
    think = None
    if rng.random() < 0.5:
        think = f"The user asks: {ask} The tool {tool['name']} can answer this."
    result_text = json.dumps(result, ensure_ascii=False)
    messages += [
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": result_text},
        {"role": "assistant", "content": reply},
    ]
    if think:
        messages[-3]["reasoning"] = think
    exchange = ToolExchange(tool["name"], args, result_text)
    return {
        "messages": messages,
        "user_message": ask,
        "reply": reply,
        "tools": tools,
        "exchanges": [exchange],
    }
