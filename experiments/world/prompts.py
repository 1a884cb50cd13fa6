"""General instruction prompts for on-policy distillation (OPD).

:func:`write_prompts` writes ``n`` lines ``{"messages": [{"role": "user",
"content": ...}]}``, the form ``hat train opd`` reads. Kinds, drawn per prompt:
constrained instructions (50 %, the same constraint planners as the base
data), tool-free questions (25 %) and chit-chat (25 %, two small-talk lines in
one message, English or Chinese). The draws use their own seed stream, apart
from the base data's, and the question and chit-chat forms differ from the
base data's, so no prompt repeats a base-data user message. Measured: n=2000
takes about 3 s (2 shared CPU cores).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from experiments.world import banks
from experiments.world.instruct import make_instruct
from hat_jax.jsonl import write_jsonl_atomic

PROMPT_STREAM = 202  # apart from base_data.BASE_STREAM


def _instruct(rng: np.random.Generator) -> str:
    return make_instruct(rng)["prompt"]


def _question(rng: np.random.Generator) -> str:
    topic, _ = banks.pick(rng, banks.TOPICS)
    return banks.pick(rng, banks.QUESTIONS).format(
        a=int(rng.integers(2, 100)),
        b=int(rng.integers(2, 100)),
        w=int(rng.integers(2, 12)),
        t=topic,
    )


def _chitchat(rng: np.random.Generator) -> str:
    bank = banks.CHAT_ZH if rng.random() < 0.35 else banks.CHAT_EN
    first, second = banks.sample(rng, bank, 2)
    return f"{first[0]} {second[0]}"


KINDS: dict[str, tuple[float, Callable[[np.random.Generator], str]]] = {
    "instruct": (0.50, _instruct),
    "question": (0.25, _question),
    "chitchat": (0.25, _chitchat),
}


def prompt_at(seed: int, index: int) -> tuple[str, str]:
    """``(kind, text)`` of prompt ``index`` for ``seed``."""
    rng = np.random.default_rng([seed, PROMPT_STREAM, index])
    names = list(KINDS)
    shares = np.cumsum([KINDS[k][0] for k in names])
    kind = names[int(np.searchsorted(shares, rng.random(), side="right"))]
    return kind, KINDS[kind][1](rng)


def write_prompts(out: str | Path, *, n: int, seed: int) -> dict[str, int]:
    """Writes ``n`` chat prompts as JSONL; returns the count of each kind."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    rows = []
    for i in range(n):
        kind, text = prompt_at(seed, i)
        counts[kind] += 1
        rows.append({"messages": [{"role": "user", "content": text}]})
    write_jsonl_atomic(out, rows)
    return {k: counts[k] for k in KINDS}
