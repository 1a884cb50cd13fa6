"""Chit-chat: short friendly exchanges in English and Chinese.

One or two user/assistant turns drawn from :mod:`experiments.world.banks`,
sometimes with a short system prompt and an emoji, about a third in Chinese.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.world import banks

ZH_SHARE = 0.35
SYSTEMS = (
    None,
    "You are a friendly assistant.",
    "You are a warm, cheerful chat companion. Keep replies short.",
    "你是一个友好的助手，回答简短亲切。",
)


def make_chitchat(rng: np.random.Generator) -> dict[str, Any]:
    """One exchange: ``{"messages", "user_message", "reply"}``."""
    bank = banks.CHAT_ZH if rng.random() < ZH_SHARE else banks.CHAT_EN
    system = banks.pick(rng, SYSTEMS)
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    turns = banks.sample(rng, bank, int(rng.integers(1, 3)))
    for user, reply in turns:
        if rng.random() < 0.2:
            user = f"{user} {banks.pick(rng, banks.EMOJI)}"
        messages += [
            {"role": "user", "content": user},
            {"role": "assistant", "content": reply},
        ]
    return {"messages": messages, "user_message": user, "reply": reply}
