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

Other mixes (``MIXES``, ``write_base_data(mix=...)``): ``lookup`` moves 30 % to
look-ups (a record looked up by the number the user wrote and the asked field
of its result quoted, ``experiments.world.lookup``: copying an argument and
quoting a value, which the SFT pilot's model never learned); ``drill`` is the
short form of look-ups only, a first base phase.

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

from experiments.world.apps.echo import make_echo
from experiments.world.chitchat import make_chitchat
from experiments.world.instruct import make_instruct
from experiments.world.lookup import make_lookup
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


def _tools_to_meta(make: Callable[[np.random.Generator], dict[str, Any]]):
    """A maker whose example keeps its tool schemas in ``meta["tools"]``."""

    def maker(rng: np.random.Generator) -> dict[str, Any]:
        ex = make(rng)
        return {**ex, "meta": {"tools": ex.pop("tools")}}

    return maker


_tool_use = _tools_to_meta(make_tooluse)
_lookup = _tools_to_meta(make_lookup)
_drill = _tools_to_meta(lambda rng: make_lookup(rng, drill=True))


TRAIN_SEEDS = 2**20


def _apps(size: str):
    """A maker of app episodes (``experiments.world.apps``): the gold turn as a
    whole trajectory, drawn from the maker's generator."""

    def maker(rng: np.random.Generator) -> dict[str, Any]:
        from experiments.world.apps.world import gold_turn

        # training episodes' seeds start at TRAIN_SEEDS: the held-out apps
        # suite's seeds (1000 x eval seed + 909) are below it
        seed = int(rng.integers(TRAIN_SEEDS, 2**31))
        index = int(rng.integers(2**31))
        traj = gold_turn(seed, index, size=size)
        traj.meta |= {"app_seed": seed, "app_index": index}
        return {"trajectory": traj}

    return maker


# kind -> (share, maker); shares sum to 1.
Kinds = dict[str, tuple[float, Callable[[np.random.Generator], dict[str, Any]]]]
KINDS: Kinds = {
    "instruct": (0.40, _instruct),
    "tool_use": (0.35, _tool_use),
    "chitchat": (0.25, make_chitchat),
}
LOOKUP_KINDS: Kinds = {
    "instruct": (0.30, _instruct),
    "tool_use": (0.25, _tool_use),
    "lookup": (0.30, _lookup),
    "chitchat": (0.15, make_chitchat),
}


# The generalist base world (issue 56): episodes in generated apps (full and
# mini), constrained instructions and chit-chat; no fixed tool names anywhere.
APPS_KINDS: Kinds = {
    "app": (0.45, _apps("full")),
    "mini": (0.25, _apps("mini")),
    "instruct": (0.25, _instruct),
    "chitchat": (0.05, make_chitchat),
}

# mix -> its kinds: "general" (the base stage), "lookup" (the general kinds with
# look-ups), "drill" (short look-ups only: a first base phase, where a
# from-scratch model learns to copy; docs/results/hat_tiny_pilot.md).
MIXES = {
    "general": KINDS,
    "lookup": LOOKUP_KINDS,
    "drill": {"drill": (1.0, _drill)},
    "apps": APPS_KINDS,
    # the base world's first phase: short apps where copying forms
    "apps_drill": {"drill": (1.0, _apps("drill"))},
    # the same, half of it echo rows (names written back from the user's
    # message: copy-dense; no gain over apps_drill by 800 steps, measured in
    # docs/results/world_base.md)
    "apps_echo": {"drill": (0.5, _apps("drill")), "echo": (0.5, make_echo)},
}


def base_example(seed: int, index: int, mix: str = "general") -> Trajectory:
    """Example ``index`` of the base data for ``seed`` (``mix``: a MIXES key)."""
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {sorted(MIXES)}, got {mix!r}")
    kinds = MIXES[mix]
    rng = np.random.default_rng([seed, BASE_STREAM, index])
    names = list(kinds)
    shares = np.array([kinds[k][0] for k in names])
    kind = names[int(np.searchsorted(np.cumsum(shares), rng.random(), side="right"))]
    ex = kinds[kind][1](rng)
    meta = {"world": "base", "kind": kind, "seed": seed, "index": index}
    if "trajectory" in ex:  # an app episode, played through the agent loop
        traj = ex["trajectory"]
        traj.meta = {**traj.meta, **meta}
        return traj
    return Trajectory(
        harness_id=HARNESS_ID,
        user_message=ex["user_message"],
        messages=ex["messages"],
        tool_calls=ex.get("exchanges", []),
        reply=ex["reply"],
        meta={**meta, **ex.get("meta", {})},
    )


def base_examples(n: int, seed: int, mix: str = "general") -> Iterator[Trajectory]:
    for i in range(n):
        yield base_example(seed, i, mix)


def write_base_data(
    out: str | Path, *, n: int, seed: int, mix: str = "general"
) -> dict[str, int]:
    """Writes ``n`` base trajectories of ``mix`` as JSONL; returns the count of
    each kind."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()

    def counted() -> Iterator[Trajectory]:
        for traj in base_examples(n, seed, mix):
            counts[traj.meta["kind"]] += 1
            yield traj

    write_jsonl(counted(), out)
    return {k: counts[k] for k in MIXES[mix]}
