"""Prefix reuse across `Sampler.generate` calls (vLLM's automatic prefix caching).

An agent's turn calls the model several times, and each call's prompt is the
previous call's prompt plus what was said since (the reply, tool results). The
sampler keeps the cache of its last call, and the next call starts each prompt
from the longest prefix it shares with one of the kept rows, prefilling only the
rest. What a kept row can give:

- attention KV: one slot per token fed (prompt + generated tokens but the last,
  slot = position), so any common prefix is reusable;
- Gated DeltaNet state: only the state after the row's prompt is kept (decoding
  runs finished rows on), so a hybrid model reuses a row only when the new prompt
  starts with that whole prompt, and exactly that many tokens.

At least one token of each prompt is always prefilled (its logits start the
decode). Dims: B rows of the new call, R kept rows, S kept slots, P new slots.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int

from hat_jax.models.gated_deltanet import GDNState


@dataclasses.dataclass
class Kept:
    """The last call's cache and what its slots hold, per row.

    Attributes:
      fed: per kept row, the tokens whose keys sit at slots 0..len-1.
      prompt_len: per kept row, its prompt's length (where a DeltaNet state is).
      cache: the model's cache [R, S, ...]; DeltaNet entries are the states
        after each row's prompt.
    """

    fed: list[np.ndarray]
    prompt_len: np.ndarray
    cache: list


def has_recurrent(cache: list) -> bool:
    """Whether a cache holds a DeltaNet state (a hybrid model)."""
    return any(isinstance(e, GDNState) for e in cache)


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """The number of leading tokens `a` and `b` share."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


def plan(prompts: list[list[int]], kept: Kept) -> tuple[np.ndarray, np.ndarray]:
    """(src [B], reuse [B]): the kept row each prompt starts from, and how many
    of its leading tokens come from the cache (0: a fresh row)."""
    recurrent = has_recurrent(kept.cache)
    src = np.zeros(len(prompts), np.int32)
    reuse = np.zeros(len(prompts), np.int32)
    for j, p in enumerate(prompts):
        p = np.asarray(p)
        for i, fed in enumerate(kept.fed):
            m = common_prefix(p, fed)
            if recurrent:  # the state after the kept prompt, or nothing
                n = int(kept.prompt_len[i])
                m = n if m >= n and len(p) > n else 0
            m = min(m, len(p) - 1)
            if m > reuse[j]:
                src[j], reuse[j] = i, m
    return src, reuse


def resize_kv(cache: list, slots: int) -> list:
    """KV entries cut or zero-padded to `slots` slots; DeltaNet states as given."""

    def one(entry):
        if isinstance(entry, GDNState):
            return entry
        s = entry[0].shape[1]
        if slots <= s:
            return tuple(x[:, :slots] for x in entry)
        pad = ((0, 0), (0, slots - s), (0, 0), (0, 0))
        return tuple(jnp.pad(x, pad) for x in entry)

    return [one(e) for e in cache]


@functools.partial(jax.jit, static_argnames=("slots",))
def gather(
    cache: list, src: Int[Array, " B"], keep: Bool[Array, " B"], *, slots: int
) -> list:
    """The new call's starting cache: row b is kept row src[b] (KV cut or padded
    to `slots`), with a zero DeltaNet state where `keep` is False."""

    def one(entry):
        rows = jax.tree.map(lambda x: jnp.take(x, src, axis=0), entry)
        if isinstance(entry, GDNState):
            return jax.tree.map(
                lambda x: jnp.where(
                    keep.reshape((-1,) + (1,) * (x.ndim - 1)), x, jnp.zeros_like(x)
                ),
                rows,
            )
        return rows

    return resize_kv([one(e) for e in cache], slots)


def copy_states(cache: list) -> list:
    """Copies of a cache's DeltaNet states (None for KV entries): the states after
    the prompt, taken before decoding donates the cache."""
    return [
        jax.tree.map(jnp.copy, e) if isinstance(e, GDNState) else None for e in cache
    ]


def keep(
    prompts: list[list[int]],
    tokens: np.ndarray,
    counts: np.ndarray,
    cache: list,
    states: list,
) -> Kept:
    """What a finished call leaves for the next: row i fed its prompt and its
    generated tokens but the last (slot of the last one was never written)."""
    fed = [
        np.concatenate(
            [np.asarray(p, np.int64), tokens[i, : max(int(counts[i]) - 1, 0)]]
        )
        for i, p in enumerate(prompts)
    ]
    merged = [s if s is not None else e for e, s in zip(cache, states)]
    return Kept(fed, np.array([len(p) for p in prompts]), merged)
