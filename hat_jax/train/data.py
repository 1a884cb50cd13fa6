"""SFT data: trajectories -> shifted examples -> packed [B, T] batches.

Each trajectory becomes `inputs = ids[:-1]`, `targets = ids[1:]`,
`loss_mask = assistant_mask[1:]` (the shift happens per example, so no target ever
crosses into the next packed example). An assistant message the harness rejected
(followed by its hooks' feedback) is context: what is trained is the message that
answered the feedback. With `decision_weight` w != 1 the mask is a
float32 weight instead: w on the trained tokens that decide a turn
(`hat_jax.harness.decisions`: tool, argument, skill, reply number, the reasoning's
intent), 1 on the other trained tokens, 0 elsewhere; the loss is then the
weighted mean (the held-out loss stays unweighted). Examples are packed
next-fit into rows of `seq_len` in a shuffled order that depends only on
`(seed, epoch)`; each row carries `segment_ids` (1, 2, ... per example, 0 on
padding) and `positions` that restart at 0 for every example, so
the model's forward (`CausalLM.hidden_states(segment_ids=)`) keeps attention
inside each example.

The iterator's position is `(epoch, index)`; `restore` rebuilds that epoch's packing
from the seed, so a resumed run sees exactly the batches an uninterrupted run would.

`load_trajectories(spec)` resolves `data.train` (and `data.eval`): a JSONL path,
or `tfds:DIR[:SPLIT]`, an ArrayRecord dataset of `hat sim generate --format tfds`
read through tfds' data source and grain (`hat_jax.train.tfds_source`). Both give
the same list of trajectories for the same rows, so everything after (tokenize,
pack, shuffle, resume) is one code path.

Data that cannot train fails early with a `DataError` naming the file: no
trajectory left after `fixed_harness`, every example dropped as overlong, or no
example keeping a trained token (a `seq_len` shorter than the prompts with
`overlong="truncate"` would otherwise train on nothing and report loss 0).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from hat_jax.harness.decisions import decision_kinds
from hat_jax.harness.spec import LOAD_SKILL
from hat_jax.harness.tokens import read_jsonl, trajectory_to_tokens
from hat_jax.harness.trajectory import Trajectory
from hat_jax.jsonl import DataError
from hat_jax.text.tokenizer import Tokenizer
from hat_jax.train.tfds_source import is_tfds_spec, read_tfds

__all__ = [
    "Example",
    "PackedBatches",
    "is_augmented",
    "load_trajectories",
    "pack_rows",
    "prompt_free_copies",
    "reply_view",
    "select_trajectories",
    "tokenize",
]

BATCH_KEYS = ("inputs", "targets", "loss_mask", "segment_ids", "positions")


@dataclasses.dataclass(frozen=True)
class Example:
    inputs: np.ndarray  # int32 [L]
    targets: np.ndarray  # int32 [L]
    loss_mask: np.ndarray  # bool [L], or float32 [L] weights (decision_weight)


def is_augmented(traj: Trajectory) -> bool:
    """True for an HSA trajectory (under an augmented harness).

    `hat sim generate --ops/--family` writes `meta["hsa"]` with a `mapping` for a
    valid augmented trajectory; a failed augmentation falls back to the gold
    trajectory under the original harness and records only `problems`.
    """
    hsa = traj.meta.get("hsa")
    return isinstance(hsa, dict) and "mapping" in hsa


def load_trajectories(spec: str | os.PathLike) -> list[Trajectory]:
    """The trajectories a data key names, in file (row) order.

    Args:
      spec: a JSONL file (`hat sim generate`'s default), or `tfds:DIR` /
        `tfds:DIR:SPLIT` for a dataset folder of `hat sim generate --format tfds`.

    Raises:
      DataError: naming the file (`path:line: ...`) or the dataset
        (`tfds:DIR:row I: ...`), for bad rows, a folder that is no dataset, or
        no trajectories.
    """
    if is_tfds_spec(spec):
        return read_tfds(spec)
    return read_jsonl(spec)


def select_trajectories(
    trajs: Sequence[Trajectory], *, fixed_harness: bool
) -> list[Trajectory]:
    """The training set: all trajectories, or (fixed_harness) only unaugmented.

    Raises:
      DataError: when fixed_harness leaves none of a non-empty set.
    """
    if not fixed_harness:
        return list(trajs)
    out = [t for t in trajs if not is_augmented(t)]
    if trajs and not out:
        raise DataError(
            f"{_source(trajs)}: all {len(trajs)} trajectories are augmented and "
            "fixed_harness keeps only unaugmented ones"
        )
    return out


def prompt_free_copies(
    trajs: Sequence[Trajectory], *, head: int = 0, no_system: int = 0, reply: int = 0
) -> list[Trajectory]:
    """Extra training views of each trajectory without its system prompt.

    ``head`` copies of its start (the viewer message and the first assistant
    message: the reasoning's reading of the message and the first calls, ~70
    tokens instead of ~1,400) and ``no_system`` copies of the whole trajectory
    without the system message. A from-scratch model sees the decisions that
    follow the viewer message many times per step this way; in full
    trajectories the system prompt is most of the tokens (measured in
    docs/results/hat_tiny_pilot.md, fourth pilot). ``reply`` copies of its
    evidence and answer (:func:`reply_view`: the viewer message, the lookups
    and their results, the final reply; no skill bodies) in which only the
    final reply is trained (:func:`tokenize`), so the reply's numbers sit
    next to the results they quote. Trajectories without a system and an
    assistant message give no copies. The copies keep ``meta`` and ``where``
    and add ``meta["view"]``.
    """
    if min(head, no_system, reply) < 0:
        raise ValueError(
            f"copies must be >= 0, got head={head}, no_system={no_system}, "
            f"reply={reply}"
        )
    out: list[Trajectory] = []
    for traj in trajs:
        roles = [m.get("role") for m in traj.messages]
        if "system" not in roles or "assistant" not in roles:
            continue
        rest = [m for m in traj.messages if m.get("role") != "system"]
        first = next(i for i, m in enumerate(rest) if m.get("role") == "assistant")
        for view, msgs, n in (
            ("head", rest[: first + 1], head),
            ("no_system", rest, no_system),
            ("reply", reply_view(rest) if reply else None, reply),
        ):
            if msgs is None:
                continue
            one = dataclasses.replace(
                traj, messages=msgs, meta={**traj.meta, "view": view}
            )
            out += [one] * n
    return out


def reply_view(messages: Sequence[dict]) -> list[dict] | None:
    """``messages`` (no system message) without the skill loads: every
    ``load_skill`` call and its result dropped, and an assistant message left
    with no call dropped with it. None unless the view still holds a tool
    result and ends in a reply (an assistant message without calls)."""
    out = []
    for m in messages:
        if m.get("role") == "tool" and m.get("name") == LOAD_SKILL:
            continue
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = [c for c in m["tool_calls"] if c.get("name") != LOAD_SKILL]
            if not calls:
                continue
            m = {**m, "tool_calls": calls}
        out.append(m)
    if not any(m.get("role") == "tool" for m in out):
        return None
    last = out[-1]
    return (
        out if last.get("role") == "assistant" and not last.get("tool_calls") else None
    )


def last_span(mask: np.ndarray) -> np.ndarray:
    """``mask`` with only its last contiguous run of nonzero entries kept."""
    on = np.flatnonzero(mask)
    if not len(on):
        return mask
    gaps = np.flatnonzero(np.diff(on) > 1)
    start = on[gaps[-1] + 1] if len(gaps) else on[0]
    out = mask.copy()
    out[:start] = 0
    return out


def message_lengths(mask: np.ndarray) -> np.ndarray:
    """Lengths of the runs of trained tokens in one loss mask: one per assistant
    message (its end token included), what one model call has to write."""
    on = np.flatnonzero(mask)
    if not len(on):
        return np.zeros(0, np.int64)
    breaks = np.flatnonzero(np.diff(on) > 1)
    starts = np.r_[0, breaks + 1]
    ends = np.r_[breaks, len(on) - 1]
    return ends - starts + 1


# A world whose golds do not fit the call budget measures its budget: at most
# this share of the golds' assistant messages may be longer.
MAX_OVER_BUDGET = 0.01


def call_budget_stats(
    examples: Sequence[Example], budget: int, source: str
) -> dict[str, int]:
    """`longest_message` (tokens) and, with `budget` > 0, `over_call_budget`.

    `budget` is the tokens one model call may write in evaluation, RL rollouts
    and the replay (a scale's `max_new_tokens`). A gold assistant message longer
    than it is one the policy cannot write there, whatever it learned (session
    24's budget of 96 cut 5-32 % of the golds' first messages).

    Raises:
      DataError: more than `MAX_OVER_BUDGET` of the messages are longer.
    """
    runs = [message_lengths(e.loss_mask) for e in examples]
    lengths = np.concatenate(runs) if runs else np.zeros(0, np.int64)
    out = {"longest_message": int(lengths.max()) if len(lengths) else 0}
    if budget <= 0:
        return out
    over = int(np.sum(lengths > budget))
    out["over_call_budget"] = over
    if len(lengths) and over > MAX_OVER_BUDGET * len(lengths):
        raise DataError(
            f"{source}: {over} of {len(lengths)} gold assistant messages "
            f"({100 * over / len(lengths):.1f} %) are longer than the call budget "
            f"of {budget} tokens (longest {out['longest_message']}): evaluation "
            "would cut them whatever the model learned; raise the budget "
            "(data.call_budget and the evaluation's max_new_tokens) or shorten "
            "the golds"
        )
    return out


def _source(trajs: Sequence[Trajectory]) -> str:
    """The file the trajectories were read from (their ``where``), or "data"."""
    files = {t.where.rsplit(":", 1)[0] for t in trajs if t.where}
    return files.pop() if len(files) == 1 else "data"


def _rows(trajs: Sequence[Trajectory], idx: Sequence[int], k: int = 3) -> str:
    names = [trajs[i].where or f"trajectory {i}" for i in idx[:k]]
    return ", ".join(names) + (f" and {len(idx) - k} more" if len(idx) > k else "")


def _no_loss_error(trajs, firsts, lengths, stats, seq_len, overlong) -> DataError:
    """Why no example keeps a trained token, with the lengths that decide it."""
    n = len(trajs)
    prompts = np.asarray([f for f in firsts if f is not None])
    rows = _rows(trajs, range(n))
    if not len(prompts):
        return DataError(
            f"{_source(trajs)}: 0 of {n} trajectories have a trained token (no "
            f"assistant message), e.g. {rows}"
        )
    return DataError(
        f"{_source(trajs)}: 0 of {n} trajectories keep a trained token at "
        f"seq_len={seq_len} ({stats['truncated']} truncated, overlong={overlong!r}; "
        f"tokens before the first assistant token: median {int(np.median(prompts))}, "
        f"max {int(prompts.max())}; total lengths max {max(lengths)}), e.g. {rows}; "
        "raise seq_len or shorten the prompts"
    )


def tokenize(
    trajs: Sequence[Trajectory],
    tokenizer: Tokenizer,
    *,
    seq_len: int,
    fmt: str = "qwen_xml",
    overlong: str = "drop",
    decision_weight: float = 1.0,
) -> tuple[list[Example], dict[str, int]]:
    """Tokenises and shifts each trajectory.

    Args:
      trajs: the trajectories.
      tokenizer: the model's tokenizer.
      seq_len: row length T; an example holds at most T input tokens.
      fmt: tool-call format the trajectories are rendered in.
      overlong: "drop" examples longer than T, or "truncate" them to T (their
        end, usually the final reply, is then lost).
      decision_weight: the loss weight of decision tokens (module docstring);
        1 keeps the bool mask.

    Returns:
      (examples, stats) with stats `examples`, `dropped`, `truncated`, `tokens`,
      `loss_tokens` and `no_loss` (examples without a trained token, kept).

    Raises:
      DataError: naming the file and rows, when trajectories were given but
        every one is dropped, or none keeps a trained token.
    """
    if overlong not in ("drop", "truncate"):
        raise ValueError(f"overlong must be 'drop' or 'truncate', got {overlong!r}")
    w = float(decision_weight)
    if not (np.isfinite(w) and w > 0):
        raise ValueError(f"decision_weight must be finite and > 0, got {w!r}")
    out, stats = [], {"examples": 0, "dropped": 0, "truncated": 0}
    firsts, lengths = [], []  # first trained position and length, per trajectory
    for traj in trajs:
        ids, mask = trajectory_to_tokens(traj, tokenizer, fmt=fmt, train_rejected=False)
        if traj.meta.get("view") == "reply":  # only the final reply is trained
            mask = last_span(mask)
        if w != 1.0:  # float weights: w on decision tokens, 1 on the rest
            kinds = decision_kinds(traj, tokenizer, fmt=fmt)
            mask = np.where(kinds > 0, w, 1.0).astype(np.float32) * mask
        firsts.append(int(np.argmax(mask)) if mask.any() else None)
        lengths.append(len(ids))
        if len(ids) < 2:
            stats["dropped"] += 1
            continue
        if len(ids) - 1 > seq_len:
            if overlong == "drop":
                stats["dropped"] += 1
                continue
            ids, mask = ids[: seq_len + 1], mask[: seq_len + 1]
            stats["truncated"] += 1
        out.append(Example(ids[:-1], ids[1:], mask[1:]))
    stats["examples"] = len(out)
    stats["tokens"] = int(sum(len(e.inputs) for e in out))
    stats["loss_tokens"] = int(sum(np.count_nonzero(e.loss_mask) for e in out))
    stats["no_loss"] = int(sum(not e.loss_mask.any() for e in out))
    if trajs and not out:
        lens = np.asarray(lengths) - 1
        why = (
            "all shorter than 2 tokens"
            if overlong == "truncate"
            else f"longer than seq_len={seq_len}; raise seq_len or use "
            "overlong='truncate'"
        )
        raise DataError(
            f"{_source(trajs)}: all {len(trajs)} trajectories dropped ({why}; "
            f"lengths median {int(np.median(lens))}, max {int(lens.max())} "
            f"tokens), e.g. {_rows(trajs, range(len(trajs)))}"
        )
    if trajs and not stats["loss_tokens"]:
        raise _no_loss_error(trajs, firsts, lengths, stats, seq_len, overlong)
    return out, stats


def pack_rows(
    examples: Sequence[Example], order: Sequence[int], seq_len: int, pad_id: int
) -> dict[str, np.ndarray]:
    """Packs examples, in `order`, next-fit into rows of length `seq_len`.

    Returns:
      arrays [R, T]: inputs, targets (int32), loss_mask (bool, or float32 when
      the examples carry weights), segment_ids
      (int32; 0 = padding) and positions (int32, restarting per example).
    """
    rows: list[list[int]] = []
    used = seq_len + 1  # forces a new row for the first example
    for i in order:
        n = len(examples[i].inputs)
        if used + n > seq_len:
            rows.append([])
            used = 0
        rows[-1].append(i)
        used += n
    r = len(rows)
    out = {
        "inputs": np.full((r, seq_len), pad_id, np.int32),
        "targets": np.full((r, seq_len), pad_id, np.int32),
        "loss_mask": np.zeros((r, seq_len), _mask_dtype(examples)),
        "segment_ids": np.zeros((r, seq_len), np.int32),
        "positions": np.zeros((r, seq_len), np.int32),
    }
    for row, members in enumerate(rows):
        at = 0
        for seg, i in enumerate(members, 1):
            ex = examples[i]
            n = len(ex.inputs)
            out["inputs"][row, at : at + n] = ex.inputs
            out["targets"][row, at : at + n] = ex.targets
            out["loss_mask"][row, at : at + n] = ex.loss_mask
            out["segment_ids"][row, at : at + n] = seg
            out["positions"][row, at : at + n] = np.arange(n)
            at += n
    return out


def _mask_dtype(examples: Sequence[Example]) -> type:
    weighted = any(e.loss_mask.dtype != np.bool_ for e in examples)
    return np.float32 if weighted else np.bool_


class PackedBatches:
    """An endless, resumable iterator of packed [B, T] batches.

    Epoch `e` shuffles the examples with `default_rng([seed, e])`, packs them and
    cuts the rows into batches of `batch_size` (the last partial batch of an epoch
    is dropped unless it is the only one, which is then padded with empty rows).
    """

    def __init__(
        self,
        examples: Sequence[Example],
        *,
        batch_size: int,
        seq_len: int,
        seed: int,
        pad_id: int = 0,
        shuffle: bool = True,
    ):
        if not examples:
            raise ValueError("no training examples (all dropped or filtered out?)")
        self.examples = list(examples)
        self.batch_size, self.seq_len = batch_size, seq_len
        self.seed, self.pad_id, self.shuffle = seed, pad_id, shuffle
        self.epoch, self.index = 0, 0
        self._rows: dict[str, np.ndarray] | None = None

    def _epoch_rows(self) -> dict[str, np.ndarray]:
        if self._rows is None:
            order = np.arange(len(self.examples))
            if self.shuffle:
                order = np.random.default_rng([self.seed, self.epoch]).permutation(
                    order
                )
            rows = pack_rows(self.examples, order, self.seq_len, self.pad_id)
            short = self.batch_size - len(rows["inputs"])
            if short > 0:  # fewer rows than one batch: pad with empty rows
                rows = {
                    k: np.concatenate([v, np.zeros((short, self.seq_len), v.dtype)])
                    for k, v in rows.items()
                }
                rows["inputs"][-short:] = self.pad_id
                rows["targets"][-short:] = self.pad_id
            self._rows = rows
        return self._rows

    def batches_per_epoch(self) -> int:
        return len(self._epoch_rows()["inputs"]) // self.batch_size

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        if self.index >= self.batches_per_epoch():
            self.epoch, self.index, self._rows = self.epoch + 1, 0, None
        rows = self._epoch_rows()
        lo = self.index * self.batch_size
        self.index += 1
        return {k: v[lo : lo + self.batch_size] for k, v in rows.items()}

    def position(self) -> dict[str, Any]:
        """JSON-serialisable position (saved in the checkpoint's `extra`)."""
        return {"epoch": self.epoch, "index": self.index, "seed": self.seed}

    def restore(self, pos: dict[str, Any]) -> None:
        if int(pos.get("seed", self.seed)) != self.seed:
            raise ValueError(
                f"checkpoint's data seed {pos['seed']} differs from the config's "
                f"{self.seed}: the data order would not match"
            )
        self.epoch, self.index, self._rows = int(pos["epoch"]), int(pos["index"]), None
