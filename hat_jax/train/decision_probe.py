"""Decision accuracy during SFT: teacher-forced argmax on the decision tokens.

Token accuracy is mostly the system prompt's echoes and the reply templates; a
turn is decided by a few tokens (``hat_jax.harness.decisions``: tool name,
argument values, skill name, numbers in the reply, the reasoning's reading of
the message). Every ``train.decision_every`` steps the loop runs
:func:`DecisionProbe` on a fixed set of trajectories: the first
``train.decision_rows`` (8) that fit ``seq_len``, one a row, of the held-out
file ``data.eval`` when one is set, else of the training set. It logs, beside
``train/accuracy``:

  train/decision/<kind>   the share of kind-``kind`` target tokens predicted
                          exactly (tool, argument, skill, number, intent)
  train/decision/intent_first  the share of intent spans whose first token is
                          right: the first decision of a turn, which follows the
                          user message and a fixed lead, so it is what greedy
                          decoding writes closed-loop (a policy that writes the
                          majority intent scores that intent's share of rows)
  train/decision_accuracy the same over every decision token
  train/decision_exact/<kind>  the share of kind-``kind`` spans (a maximal run
                          of tokens of that kind: a value, a name, a number)
                          whose every token is predicted: a price is right
                          only with all its digits, so tokenisers that cut
                          numbers differently compare on the same footing
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from hat_jax.harness.decisions import KINDS, decision_kinds
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.harness.trajectory import Trajectory
from hat_jax.text.tokenizer import Tokenizer

INTENT = KINDS.index("intent") + 1


def probe_batch(
    trajs: Sequence[Trajectory], tokenizer: Tokenizer, *, seq_len: int, rows: int, fmt
) -> dict[str, np.ndarray] | None:
    """The first ``rows`` trajectories that fit, one a row, padded to ``seq_len``:
    inputs, targets, positions, segment_ids int32 [R, T], kinds int8 [R, T] (the
    targets' decision kinds). None when none has a decision token."""
    cols = {k: [] for k in ("inputs", "targets", "positions", "segment_ids", "kinds")}
    for traj in trajs:
        if len(cols["inputs"]) == rows:
            break
        ids, _ = trajectory_to_tokens(traj, tokenizer, fmt=fmt)
        kinds = decision_kinds(traj, tokenizer, fmt=fmt)
        if len(ids) - 1 > seq_len or not kinds.any():
            continue
        n, pad = len(ids) - 1, seq_len - (len(ids) - 1)
        cols["inputs"].append(np.pad(ids[:-1], (0, pad)))
        cols["targets"].append(np.pad(ids[1:], (0, pad)))
        cols["positions"].append(np.pad(np.arange(n, dtype=np.int32), (0, pad)))
        cols["segment_ids"].append(np.pad(np.ones(n, np.int32), (0, pad)))
        cols["kinds"].append(np.pad(kinds[1:], (0, pad)))
    if not cols["inputs"]:
        return None
    return {k: np.stack(v) for k, v in cols.items()}


class DecisionProbe:
    """``probe(state) -> metrics`` on a fixed batch (module docstring)."""

    def __init__(self, graphdef, batch: dict[str, np.ndarray]):
        self.batch = jax.tree.map(jnp.asarray, batch)
        self._fn = jax.jit(lambda p, f, b: _accuracy(p, f, b, graphdef=graphdef))
        have = set(np.unique(batch["kinds"]).tolist())  # kinds the batch holds
        self.names = ["train/decision_accuracy"] + [
            f"train/decision/{k}" for i, k in enumerate(KINDS) if i + 1 in have
        ]
        if INTENT in have:
            self.names.append("train/decision/intent_first")
        self.kinds = batch["kinds"]

    def __call__(self, state) -> dict[str, float]:
        out = jax.device_get(self._fn(state.params, state.frozen, self.batch))
        metrics = {k: float(out[k]) for k in self.names}
        return metrics | exact_spans(np.asarray(out["correct"]), self.kinds)


def exact_spans(correct: np.ndarray, kinds: np.ndarray) -> dict[str, float]:
    """``train/decision_exact/<kind>`` for each kind present: the share of runs
    of consecutive kind-``kind`` tokens (per row) whose tokens are all correct.

    Args:
      correct: bool [R, T], argmax == target.
      kinds: int8 [R, T], each target's decision kind (0 none).
    """
    flat_k = kinds.reshape(-1)
    flat_c = correct.reshape(-1)
    start = np.ones_like(flat_k, bool)
    start[1:] = flat_k[1:] != flat_k[:-1]
    start[:: kinds.shape[1]] = True  # a run never crosses rows
    at = np.flatnonzero(start)
    run_kind = flat_k[at]
    run_ok = np.minimum.reduceat(flat_c.astype(np.int8), at).astype(bool)
    out = {}
    for i, name in enumerate(KINDS):
        mine = run_kind == i + 1
        if mine.any():
            out[f"train/decision_exact/{name}"] = float(run_ok[mine].mean())
    return out


def span_starts(mask: jax.Array) -> jax.Array:
    """bool [R, T]: the first token of each run of True along T."""
    before = jnp.pad(mask[:, :-1], ((0, 0), (1, 0)))  # the previous token's mask
    return mask & ~before


def _accuracy(params, frozen, batch, *, graphdef) -> dict[str, jax.Array]:
    model = nnx.merge(graphdef, params, frozen)
    hidden, _, _ = model.hidden_states(
        batch["inputs"], batch["positions"], segment_ids=batch["segment_ids"]
    )
    correct = jnp.argmax(model.logits(hidden), axis=-1) == batch["targets"]  # [R, T]
    kinds = batch["kinds"]

    def share(mask):
        return (correct & mask).sum() / jnp.maximum(mask.sum(), 1)

    out = {f"train/decision/{k}": share(kinds == i + 1) for i, k in enumerate(KINDS)}
    out["train/decision_accuracy"] = share(kinds > 0)
    out["train/decision/intent_first"] = share(span_starts(kinds == INTENT))
    out["correct"] = correct  # [R, T], for the exact-span shares on the host
    return out
