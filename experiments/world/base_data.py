"""Base-stage data: general abilities before any domain data.

:func:`write_base_data` writes ``n`` trajectories (the JSONL the SFT loader
reads for `hat sim generate` output) of three kinds, drawn per example:

- ``instruct`` (40 %): a topical request with 1-3 IFEval-style constraints
  and a response that passes every checker of ``hat_jax.eval.ifeval``
  (``meta["ifeval"]`` keeps the instruction ids and kwargs);
- ``tool_use`` (35 %): random tool schemas in the system prompt, a qwen_xml
  call, a tool result and a reply that uses it, or a direct answer when no
  tool is needed (``meta["tools"]`` keeps the schemas);
- ``chitchat`` (25 %): short friendly exchanges, English and Chinese.

Example ``i`` depends only on ``(seed, i)``, so a larger ``n`` extends a
smaller one. Only assistant turns are trained on (the loss mask of
``hat_jax.harness.tokens``). Measured: n=2000 takes about 4 s on 2 shared CPU
cores (every instruct example is checked by the IFEval registry as it is made).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from experiments.world.chitchat import make_chitchat
from experiments.world.instruct import make_instruct
from experiments.world.tooluse import make_tooluse
from hat_jax.harness.tokens import write_jsonl
from hat_jax.harness.trajectory import Trajectory

BASE_STREAM = 101  # keeps base draws apart from other uses of the seed
HARNESS_ID = "world_base"
INSTRUCT_SYSTEMS = (None, None, "You are a helpful assistant.")


def _instruct(rng: np.random.Generator) -> dict[str, Any]:
    ex = make_instruct(rng)
    system = INSTRUCT_SYSTEMS[int(rng.integers(len(INSTRUCT_SYSTEMS)))]
    messages = [{"role": "system", "content": system}] if system else []
    messages += [
        {"role": "user", "content": ex["prompt"]},
        {"role": "assistant", "content": ex["response"]},
    ]
    meta = {k: ex[k] for k in ("instruction_id_list", "kwargs")}
    return {
        "messages": messages,
        "user_message": ex["prompt"],
        "reply": ex["response"],
        "meta": {"ifeval": meta},
    }


def _tool_use(rng: np.random.Generator) -> dict[str, Any]:
    ex = make_tooluse(rng)
    return {**ex, "meta": {"tools": ex.pop("tools")}}


# kind -> (share, maker); shares sum to 1.
KINDS: dict[str, tuple[float, Callable[[np.random.Generator], dict[str, Any]]]] = {
    "instruct": (0.40, _instruct),
    "tool_use": (0.35, _tool_use),
    "chitchat": (0.25, make_chitchat),
}


def base_example(seed: int, index: int) -> Trajectory:
    """Example ``index`` of the base data for ``seed``."""
    rng = np.random.default_rng([seed, BASE_STREAM, index])
    names = list(KINDS)
    shares = np.array([KINDS[k][0] for k in names])
    kind = names[int(np.searchsorted(np.cumsum(shares), rng.random(), side="right"))]
    ex = KINDS[kind][1](rng)
    meta = {"world": "base", "kind": kind, "seed": seed, "index": index}
    return Trajectory(
        harness_id=HARNESS_ID,
        user_message=ex["user_message"],
        messages=ex["messages"],
        tool_calls=ex.get("exchanges", []),
        reply=ex["reply"],
        meta={**meta, **ex.get("meta", {})},
    )


def base_examples(n: int, seed: int) -> Iterator[Trajectory]:
    for i in range(n):
        yield base_example(seed, i)


def write_base_data(out: str | Path, *, n: int, seed: int) -> dict[str, int]:
    """Writes ``n`` base trajectories as JSONL; returns the count of each kind."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()

    def counted() -> Iterator[Trajectory]:
        for traj in base_examples(n, seed):
            counts[traj.meta["kind"]] += 1
            yield traj

    write_jsonl(counted(), out)
    return {k: counts[k] for k in KINDS}
