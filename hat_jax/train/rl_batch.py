"""HSA-RL episodes: one rollout as token ids with segments and sampler log-probs.

An :class:`Episode` is built from a finished Trajectory and the per-call records
the agent loop keeps in ``traj.meta["generations"]`` (sampled ids + log-probs).

Alignment. ``trajectory_to_tokens`` renders the conversation; each assistant
message is one contiguous run of loss-mask tokens and model call ``k`` wrote
assistant message ``k``. A run is *aligned* when it starts with the policy's
pre-fill ids (``prefill_ids``: the thinking pre-fill, prompt not output) and
then the sampled ids; after them only the render's tail may follow (the
``<|im_end|>`` it appends to a call cut at ``max_new_tokens``). Anything else
before the sampled ids (e.g. a ``<think>`` the render adds to an output that
closed a think block it never opened) is a context the sampler did not see.
Aligned sampled tokens are trained with the sampler's log-probs. Otherwise (the loop
re-renders parsed messages, so a stripped space or a BPE re-split changes ids)
the run is a *mismatch*, counted in ``Episode.mismatches``, and by
``on_mismatch``: ``"skip"`` (default) keeps the rendered ids as context and
trains none of them, so every trained token sees exactly the context the sampler
saw; ``"splice"`` puts the pre-fill and the sampled ids in place of the run and
trains the sampled ones (more tokens, but later calls then see a context that
differs from their prompt); ``"splice_last"`` splices only the episode's last
run, which no trained token follows, so it stays exact. Sampling makes
mismatches common and not at random: a byte-level BPE model at temperature 1
often writes a text in a split that is not the canonical encoding of that text
(a broken UTF-8 byte, a rare merge), mostly in poor replies; skipping every
such reply drops much of the negative signal ``splice_last`` keeps.

Segments: 1 = tool-call segment (assistant messages with tool calls), 2 = reply
segment (the last assistant message, when it has no tool calls), other
assistant messages (rejected replies, unreadable outputs) get ``other_segment``
(0 = not trained by default); 0 everywhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.harness.trajectory import Trajectory
from hat_jax.losses.policy import REPLY_SEGMENT, TOOL_SEGMENT

__all__ = ["Episode", "episode_from_tokens", "episode_from_trajectory"]
__all__ += ["MISMATCH_MODES", "batch_order", "episodes_to_batch"]

MISMATCH_MODES = ("skip", "splice", "splice_last")


@dataclasses.dataclass
class Episode:
    """One rollout ready for the trainer.

    Attributes:
      ids: token ids [T] (int32).
      loss_mask: [T] bool, True on the tokens the policy produced (any segment).
      segments: [T] int32, 0 not trained, 1 tool-call, 2 reply.
      logprobs: [T] float32, the sampler's log-prob of each trained token (0
        elsewhere).
      rewards: reward name -> value.
      group: the task (group) this rollout belongs to.
      reasoning: reasoning tokens in the (tool-call, reply) segments.
      mismatches: assistant runs whose rendered ids differ from the sampled ids.
    """

    ids: np.ndarray
    loss_mask: np.ndarray
    segments: np.ndarray
    logprobs: np.ndarray
    rewards: dict[str, float]
    group: int
    reasoning: tuple[int, int] = (0, 0)
    mismatches: int = 0


def episode_from_tokens(
    prompt: Sequence[int],
    sampled: Sequence[int],
    logprobs: Sequence[float],
    *,
    rewards: Mapping[str, float],
    group: int,
    segment: int = REPLY_SEGMENT,
) -> Episode:
    """A single-call episode: ``prompt`` (context) then ``sampled`` (trained)."""
    p, s = len(prompt), len(sampled)
    return Episode(
        ids=np.asarray(list(prompt) + list(sampled), np.int32),
        loss_mask=np.r_[np.zeros(p, bool), np.ones(s, bool)],
        segments=np.r_[np.zeros(p, np.int32), np.full(s, segment, np.int32)],
        logprobs=np.r_[np.zeros(p, np.float32), np.asarray(logprobs, np.float32)],
        rewards=dict(rewards),
        group=group,
    )


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    # [start, end) of each run of True
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def _segment_of(msg: Mapping, last: bool, other_segment: int) -> int:
    if msg.get("tool_calls"):
        return TOOL_SEGMENT
    return REPLY_SEGMENT if last else other_segment


def episode_from_trajectory(
    traj: Trajectory,
    tokenizer,
    *,
    rewards: Mapping[str, float],
    group: int,
    fmt: str | None = None,
    other_segment: int = 0,
    on_mismatch: str = "skip",
    prefill_ids: Sequence[int] = (),
) -> Episode:
    """An Episode from an agent-loop trajectory (module docstring).

    Args:
      traj: a trajectory with ``meta["generations"]`` from a token-level policy.
      tokenizer: the model's tokenizer.
      rewards: the rollout's reward values by name.
      group: the task index of this rollout.
      fmt: tool-call format (default: ``traj.meta["fmt"]`` or ``"qwen_xml"``).
      other_segment: segment of assistant messages that are neither tool calls nor
        the final reply.
      on_mismatch: ``"skip"``, ``"splice"`` or ``"splice_last"``.
      prefill_ids: the ids the policy pre-fills after the assistant header
        (``tokenizer.encode(thinking_prefill(enable_thinking))``).
    """
    if on_mismatch not in MISMATCH_MODES:
        raise ValueError(
            f"on_mismatch must be one of {MISMATCH_MODES}: {on_mismatch!r}"
        )
    fmt = fmt or traj.meta.get("fmt", "qwen_xml")
    prefill = np.asarray(prefill_ids, np.int32)
    ids, mask = trajectory_to_tokens(traj, tokenizer, fmt=fmt)
    msgs = [m for m in traj.messages if m.get("role") == "assistant"]
    gens = traj.meta.get("generations") or []
    runs = _runs(mask)
    out_ids, seg, lp, lmask = [], [], [], []
    reasoning = [0, 0]
    mismatches = 0
    at = 0
    for k, (s, e) in enumerate(runs):
        out_ids.append(ids[at:s])
        seg.append(np.zeros(s - at, np.int32))
        lp.append(np.zeros(s - at, np.float32))
        lmask.append(np.zeros(s - at, bool))
        at = e
        rendered = ids[s:e]
        msg = msgs[k] if k < len(msgs) else {}
        sid = _segment_of(msg, k == len(runs) - 1, other_segment)
        gen = gens[k] if k < len(gens) and len(gens) == len(runs) else None
        tok = np.asarray(gen["tokens"] if gen else [], np.int32)
        lps = np.asarray((gen or {}).get("logprobs") or [], np.float32)
        n, r = len(tok), len(rendered)
        ok = gen is not None and 0 < n == len(lps)
        seg_run = np.zeros(r, np.int32)
        lp_run = np.zeros(r, np.float32)
        p = len(prefill)
        if ok and p + n <= r and np.array_equal(rendered[: p + n], np.r_[prefill, tok]):
            seg_run[p : p + n], lp_run[p : p + n] = sid, lps
        else:
            mismatches += 1
            last = k == len(runs) - 1
            splice = on_mismatch == "splice" or (on_mismatch == "splice_last" and last)
            if splice and gen is not None and n == len(lps) > 0:
                rendered = np.r_[prefill, tok].astype(ids.dtype)
                seg_run = np.r_[np.zeros(p, np.int32), np.full(n, sid, np.int32)]
                lp_run = np.r_[np.zeros(p, np.float32), lps]
        out_ids.append(rendered)
        seg.append(seg_run)
        lp.append(lp_run)
        lmask.append(np.ones(len(rendered), bool))
        if sid in (TOOL_SEGMENT, REPLY_SEGMENT) and msg.get("reasoning"):
            reasoning[sid - 1] += len(tokenizer.encode(msg["reasoning"]))
    out_ids.append(ids[at:])
    seg.append(np.zeros(len(ids) - at, np.int32))
    lp.append(np.zeros(len(ids) - at, np.float32))
    lmask.append(np.zeros(len(ids) - at, bool))
    return Episode(
        ids=np.concatenate(out_ids).astype(np.int32),
        loss_mask=np.concatenate(lmask),
        segments=np.concatenate(seg),
        logprobs=np.concatenate(lp),
        rewards=dict(rewards),
        group=group,
        reasoning=(reasoning[0], reasoning[1]),
        mismatches=mismatches,
    )


def batch_order(episodes: Sequence[Episode]) -> list[int]:
    """The episodes' indices in the order of ``episodes_to_batch``'s rows: by
    group (in order of first appearance), then in their own order."""
    order: dict[int, list[int]] = {}
    for i, ep in enumerate(episodes):
        order.setdefault(ep.group, []).append(i)
    return [i for group in order.values() for i in group]


def episodes_to_batch(
    episodes: Sequence[Episode],
    *,
    pad_to: int,
    pad_trained: int | None = None,
    reward_names: Sequence[str] | None = None,
    pad_id: int = 0,
) -> dict[str, np.ndarray]:
    """Stacks N groups of G episodes into next-token arrays.

    Episodes are grouped by ``group`` (in order of first appearance; every group
    must hold the same number G), so row ``b = n * G + g``. Position ``t`` of
    the [B, T] arrays (T = ``pad_to``) predicts ``targets[t] = ids[t + 1]``;
    ``segments`` and ``old_logp`` are aligned with the targets. Episodes longer
    than ``pad_to + 1`` tokens are cut (their tail is not trained).

    ``trained_pos`` lists, per row, the positions ``t`` with ``segments > 0`` in
    order, padded with -1 to K = ``pad_trained`` (default: the most any row has,
    at least 1); the trainer computes logits at these K positions only.

    Returns:
      inputs, targets, positions, attn (1 on real tokens) [B, T] int32;
      segments [B, T] int32; old_logp [B, T] float32; trained_pos [B, K] int32;
      rewards [N, G, R] float32 (R in ``reward_names`` order, default: sorted
      names); reasoning [B, 2] float32 (tool, reply).

    Raises:
      ValueError: unequal groups, or a row with more than ``pad_trained``
        trained positions.
    """
    order: dict[int, list[Episode]] = {}
    for ep in episodes:
        order.setdefault(ep.group, []).append(ep)
    sizes = {len(v) for v in order.values()}
    if len(sizes) != 1:
        raise ValueError(f"groups must be equally sized, got sizes {sorted(sizes)}")
    rows = [episodes[i] for i in batch_order(episodes)]
    names = list(reward_names or sorted(rows[0].rewards))
    n, g, t = len(order), sizes.pop(), int(pad_to)
    b = n * g
    out = {
        "inputs": np.full((b, t), pad_id, np.int32),
        "targets": np.full((b, t), pad_id, np.int32),
        "positions": np.zeros((b, t), np.int32),
        "attn": np.zeros((b, t), np.int32),
        "segments": np.zeros((b, t), np.int32),
        "old_logp": np.zeros((b, t), np.float32),
        "reasoning": np.zeros((b, 2), np.float32),
    }
    for i, ep in enumerate(rows):
        m = min(len(ep.ids) - 1, t)
        out["inputs"][i, :m] = ep.ids[:m]
        out["targets"][i, :m] = ep.ids[1 : m + 1]
        out["positions"][i, :m] = np.arange(m)
        out["attn"][i, :m] = 1
        out["segments"][i, :m] = ep.segments[1 : m + 1]
        out["old_logp"][i, :m] = ep.logprobs[1 : m + 1]
        out["reasoning"][i] = ep.reasoning
    where = [np.flatnonzero(row > 0) for row in out["segments"]]
    most = max(max(len(w) for w in where), 1)
    width = most if pad_trained is None else int(pad_trained)
    if most > width:
        raise ValueError(f"a row has {most} trained positions > pad_trained={width}")
    out["trained_pos"] = np.full((b, width), -1, np.int32)
    for i, w in enumerate(where):
        out["trained_pos"][i, : len(w)] = w
    rewards = [[ep.rewards[k] for k in names] for ep in rows]
    out["rewards"] = np.asarray(rewards, np.float32).reshape(n, g, len(names))
    return out
