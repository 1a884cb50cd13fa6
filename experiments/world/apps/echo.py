"""Echo rows: write back fresh identifiers from the user's message, exactly.

A drill row trains ~25 name tokens; a batch of almost nothing but copies forms
copying within a few hundred steps (docs/results/world_base.md). An echo row
is mostly name copies: the user lists 12-32 fresh identifiers
(:mod:`experiments.world.apps.idents`, every kind and house style) in one
layout and asks for them back in another, either all of them in order (each
trained token a copy of the token after the previous one's earlier
occurrence) or only those of one kind (read the label, then copy). Every name
the reply writes stands in the user's message, so no row asks for a name its
context lacks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.world.apps.idents import NOUNS, QUALIFIERS, VERBS, fresh

KINDS = ("tool", "param", "skill", "tag")
LABELS = {
    "en": {"tool": "tool", "param": "parameter", "skill": "skill", "tag": "tag"},
    "zh": {"tool": "工具", "param": "参数", "skill": "技能", "tag": "标签"},
}
ASK_ALL = {
    "en": (
        "Copy these names exactly, in the same order{how}:",
        "Write the list below back without changing a character{how}.",
        "Repeat the identifiers{how}, in order:",
    ),
    "zh": (
        "请按原顺序原样抄写下面的名字{how}：",
        "把下面的列表一字不差地写回来{how}。",
    ),
}
ASK_KIND = {
    "en": (
        "Which of these are {label}s? Write their names exactly, in order{how}.",
        "List only the {label} names below, unchanged{how}:",
    ),
    "zh": ("下面哪些是{label}？按顺序原样写出它们的名字{how}。",),
}
# output layout -> (hint in the instruction, en / zh)
HOW = {
    "lines": (", one per line", "，每行一个"),
    "comma": (", separated by commas", "，用逗号分隔"),
    "ticks": (", each in backticks", "，每个加反引号"),
    "json": (", as a JSON array", "，写成 JSON 数组"),
}
IN_LAYOUTS = ("bullets", "numbered", "lines", "comma", "ticks", "json")
ZH_SHARE = 0.5
SHARE_KIND = 0.3  # rows that keep one kind only
# Rows that list plain words (one or two tokens each) instead of identifiers:
# each word is its own key, so copying the list needs one-token matching only.
SHARE_WORDS = 0.4
WORDS = tuple(sorted(set(VERBS + NOUNS + QUALIFIERS)))


def layout(names: list[str], how: str, labels: list[str] | None = None) -> str:
    """``names`` written in layout ``how`` (``labels``: a kind after each)."""
    items = [f"{n} ({k})" for n, k in zip(names, labels)] if labels else names
    if how == "bullets":
        return "\n".join(f"- {x}" for x in items)
    if how == "numbered":
        return "\n".join(f"{i}. {x}" for i, x in enumerate(items, 1))
    if how == "lines":
        return "\n".join(items)
    if how == "comma":
        return ", ".join(items)
    if how == "ticks":
        return ", ".join(f"`{x}`" for x in items)
    if how == "json":
        return "[" + ", ".join(f'"{x}"' for x in items) + "]"
    raise ValueError(f"unknown layout {how!r}")


def _pick(rng: np.random.Generator, xs):
    return xs[int(rng.integers(len(xs)))]


def make_echo(rng: np.random.Generator) -> dict[str, Any]:
    """One echo exchange: ``{"messages", "user_message", "reply"}``."""
    lang = "zh" if rng.random() < ZH_SHARE else "en"
    taken: set[str] = set()
    n = int(rng.integers(12, 33))
    words = rng.random() < SHARE_WORDS
    if words:
        kinds = ["word"] * n
        names = [WORDS[i] for i in rng.choice(len(WORDS), n, replace=False)]
    else:
        kinds = [_pick(rng, KINDS) for _ in range(n)]
        names = [fresh(rng, k, taken) for k in kinds]
    out_how = _pick(rng, tuple(HOW))
    hint = HOW[out_how][lang == "zh"]
    keep = None
    if not words and rng.random() < SHARE_KIND:
        keep = _pick(rng, sorted(set(kinds)))
        label = LABELS[lang][keep]
        ask = _pick(rng, ASK_KIND[lang]).format(label=label, how=hint)
        shown = layout(
            names, _pick(rng, IN_LAYOUTS[:3]), [LABELS[lang][k] for k in kinds]
        )
        wanted = [x for x, k in zip(names, kinds) if k == keep]
    else:
        ask = _pick(rng, ASK_ALL[lang]).format(how=hint)
        # words keep their layout: a word after a space is another token
        shown = layout(names, out_how if words else _pick(rng, IN_LAYOUTS))
        wanted = names
    user = f"{ask}\n{shown}"
    reply = layout(wanted, out_how)
    messages = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": reply},
    ]
    meta = {"echo": {"n": n, "kept": keep, "layout": out_how, "words": words}}
    return {"messages": messages, "user_message": user, "reply": reply, "meta": meta}
