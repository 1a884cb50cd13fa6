"""Look-up tool use: copy an id from the request, quote a field of the result.

Two abilities a tool-using model needs and the other base kinds rarely ask for:
copying a number the user wrote into a call's argument, and quoting, from a JSON
result holding several numbers, the one field the user asked about. Each example
lists 2-4 random tool schemas (``experiments.world.tooluse``) with one record
look-up among them (random names: an item, an order or a room, looked
up by its number), asks about one field of record ``n`` (English or Chinese),
calls the look-up with ``n``, returns the record with 3-5 numeric fields (the
asked one among them, values drawn at random) and replies with that field's
value. Nothing can be answered from memory: ids and values are drawn per example.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from experiments.world import banks
from experiments.world.tools_bank import CONCEPTS
from experiments.world.tooluse import SYSTEM_HEADS, make_schema, system_prompt
from hat_jax.harness.trajectory import ToolExchange

RECORDS = {  # record kind -> (tool names, id parameter names, en noun, zh noun)
    "item": (
        ("get_item", "lookup_item", "item_info"),
        ("item_id", "id"),
        "item",
        "号商品",
    ),
    "order": (
        ("get_order", "order_status", "find_order"),
        ("order_no", "order_id"),
        "order",
        "号订单",
    ),
    "room": (
        ("get_room", "room_info", "lookup_room"),
        ("room_no", "room_id"),
        "room",
        "号房间",
    ),
}
# field -> (en question, en answer, zh question, zh answer); {n} the id, {v} the value
FIELDS = {
    "price": (
        "How much is {noun} {n}?",
        "{Noun} {n} costs {v} yuan.",
        "{n}{zh}多少钱",
        "{n}{zh}现在{v}元",
    ),
    "stock": (
        "How many of {noun} {n} are left?",
        "{v} left for {noun} {n}.",
        "{n}{zh}还剩几个",
        "{n}{zh}还剩{v}个",
    ),
    "weight_g": (
        "How heavy is {noun} {n}?",
        "{Noun} {n} weighs {v} g.",
        "{n}{zh}多重",
        "{n}{zh}重{v}克",
    ),
    "days": (
        "How many days for {noun} {n}?",
        "{Noun} {n} takes {v} days.",
        "{n}{zh}要几天",
        "{n}{zh}要{v}天",
    ),
    "rating": (
        "What is the rating of {noun} {n}?",
        "{Noun} {n} is rated {v}.",
        "{n}{zh}评分多少",
        "{n}{zh}评分{v}",
    ),
    "floor": (
        "Which floor is {noun} {n} on?",
        "{Noun} {n} is on floor {v}.",
        "{n}{zh}在几楼",
        "{n}{zh}在{v}楼",
    ),
}
KIND_FIELDS = {  # the fields a record of each kind has
    "item": ("price", "stock", "weight_g", "days", "rating"),
    "order": ("price", "weight_g", "days"),
    "room": ("price", "floor", "rating"),
}
RANGES = {"price": (9, 999), "stock": (0, 300), "weight_g": (50, 2000)}
RANGES |= {"days": (1, 15), "rating": (1, 5), "floor": (1, 30)}


def _schema(kind: str, rng: np.random.Generator) -> tuple[dict[str, Any], str]:
    names, ids, noun, _ = RECORDS[kind]
    key = banks.pick(rng, ids)
    tool = {
        "name": banks.pick(rng, names),
        "description": f"Look up one {noun} by its number.",
        "parameters": {
            "type": "object",
            "properties": {
                key: {"type": "integer", "description": f"The {noun} number."}
            },
            "required": [key],
        },
    }
    return tool, key


def make_lookup(rng: np.random.Generator, *, drill: bool = False) -> dict[str, Any]:
    """One example: ``{"messages", "user_message", "reply", "tools", "exchanges"}``.

    ``drill``: the short form (about 130 tokens instead of about 430): no system
    message and no other tools, so nearly every trained token is a copy or a
    template; the base stage's first phase (``base_data.MIXES["drill"]``).
    """
    kind = banks.pick(rng, tuple(RECORDS))
    tool, key = _schema(kind, rng)
    n_other = 0 if drill else int(rng.integers(1, 4))
    others = [CONCEPTS[int(i)] for i in rng.permutation(len(CONCEPTS))[:n_other]]
    tools = [tool, *(make_schema(c, rng)[0] for c in others)]
    tools = [tools[int(i)] for i in rng.permutation(len(tools))]
    if len({t["name"] for t in tools}) < len(tools):
        return make_lookup(rng)
    n = int(rng.integers(1, 60))
    have = KIND_FIELDS[kind]
    fields = [str(f) for f in rng.permutation(have)[: rng.integers(3, len(have) + 1)]]
    asked = fields[int(rng.integers(len(fields)))]
    record = {key: n} | {f: int(rng.integers(*RANGES[f]) + 1) for f in fields}
    _, _, noun, zh = RECORDS[kind]
    fill = {
        "n": n,
        "noun": noun,
        "Noun": noun.capitalize(),
        "zh": zh,
        "v": record[asked],
    }
    q_en, a_en, q_zh, a_zh = FIELDS[asked]
    ask, reply = (q_zh, a_zh) if rng.random() < 0.5 else (q_en, a_en)
    ask, reply = ask.format(**fill), reply.format(**fill)
    args = {key: n}
    result_text = json.dumps(record, ensure_ascii=False)
    call = {"name": tool["name"], "arguments": args}
    system = system_prompt(banks.pick(rng, SYSTEM_HEADS), tools)
    messages = [
        *([] if drill else [{"role": "system", "content": system}]),
        {"role": "user", "content": ask},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": result_text},
        {"role": "assistant", "content": reply},
    ]
    if rng.random() < 0.5:
        messages[-3]["reasoning"] = (
            f"The user asks about {noun} {n}: call {tool['name']}."
        )
    return {
        "messages": messages,
        "user_message": ask,
        "reply": reply,
        "tools": tools,
        "exchanges": [ToolExchange(tool["name"], args, result_text)],
    }
