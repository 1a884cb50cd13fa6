"""Trajectories as training data: token ids with a loss mask, and JSONL files.

The mask is True exactly on what the assistant produced: each assistant body
(reasoning, content, tool calls) and its ``<|im_end|>``. Role headers, the system
prompt, viewer and feedback messages and tool results are context only.

Tokenisation is segment by segment: each piece of
:func:`hat_jax.text.render_chat_segments` is encoded on its own and the ids are
concatenated, so the mask boundary is exact by construction. For the ChatML
renders here this equals encoding the whole text (segments meet at special
tokens or at a newline that the Qwen and GPT-2 split patterns keep apart);
``check=True`` verifies it for a given trajectory and tokenizer. Where a
tokenizer would merge across a boundary, segment-wise ids are still what a
sampler produces turn by turn (a prompt is encoded, then the reply is sampled).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from hat_jax.harness.trajectory import Trajectory
from hat_jax.jsonl import DataError, iter_jsonl, write_jsonl_atomic
from hat_jax.text.chat import render_chat_segments
from hat_jax.text.tokenizer import Tokenizer


def trajectory_to_tokens(
    traj: Trajectory,
    tokenizer: Tokenizer,
    *,
    fmt: str = "qwen_xml",
    check: bool = False,
    train_rejected: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Renders a trajectory to ids and a loss mask.

    Args:
      traj: the trajectory; its messages are rendered with ``tools=None`` (the
        system prompt already lists the tools).
      tokenizer: the model's tokenizer.
      fmt: the tool-call format of the trajectory's harness.
      check: raise ValueError unless the ids equal ``tokenizer.encode`` of the
        whole rendered text.
      train_rejected: False: an output the harness rejected (an assistant
        message followed by a ``hook_feedback`` message, :func:`rejected`) is
        context, not a target; SFT learns the recovery, not the mistake. True
        keeps one masked run per assistant message (RL aligns runs with calls).

    Returns:
      ``ids`` int32 [T] and ``loss_mask`` bool [T] (True on assistant tokens).
    """
    segments = render_chat_segments(
        traj.messages, tools=None, fmt=fmt, add_generation_prompt=False
    )
    ids: list[int] = []
    mask: list[bool] = []
    targets = segment_targets(segments, traj.messages, train_rejected=train_rejected)
    for (text, _), trained in zip(segments, targets):
        piece = tokenizer.encode(text)
        ids += piece
        mask += [trained] * len(piece)
    if check:
        whole = tokenizer.encode("".join(text for text, _ in segments))
        if whole != ids:
            at = next(
                (i for i, (a, b) in enumerate(zip(whole, ids)) if a != b),
                min(len(whole), len(ids)),
            )
            raise ValueError(
                f"segment-wise ids differ from whole-text ids at token {at}: "
                f"{tokenizer.decode(ids[at : at + 8])!r} vs "
                f"{tokenizer.decode(whole[at : at + 8])!r}"
            )
    return np.asarray(ids, np.int32), np.asarray(mask, bool)


def rejected(messages: Sequence[dict]) -> list[bool]:
    """Per assistant message, in order: whether the harness rejected it (the
    next message is the hooks' feedback, ``"hook_feedback": True``; see
    ``hat_jax.harness.loop``)."""
    out = []
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            nxt = messages[i + 1] if i + 1 < len(messages) else {}
            out.append(nxt.get("role") == "user" and bool(nxt.get("hook_feedback")))
    return out


def segment_targets(
    segments: Sequence[tuple[str, bool]],
    messages: Sequence[dict],
    *,
    train_rejected: bool = True,
) -> list[bool]:
    """Per rendered segment: whether it is a target. The produced segments are
    the assistant messages in order; with ``train_rejected=False`` the rejected
    ones (:func:`rejected`) are context."""
    skip = iter([False] * len(messages) if train_rejected else rejected(messages))
    # next(skip) runs for produced segments only: one per assistant message
    return [produced and not next(skip) for _, produced in segments]


def write_jsonl(trajectories: Iterable[Trajectory], path: str | Path) -> int:
    """Writes one trajectory per line (UTF-8); returns how many were written.

    The file appears only once every line is written (``atomic_open``).

    Raises:
      DataError: ``path:line: ...`` for a trajectory that does not encode (a
        lone surrogate, NaN); no file is then written.
    """
    return write_jsonl_atomic(path, (t.to_dict() for t in trajectories))


def iter_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """The trajectories of a JSONL file, each with ``where`` set to its line.

    Raises:
      DataError: ``path:line: what was wrong`` for the first bad line.
    """
    for where, obj in iter_jsonl(path, objects=True):
        yield Trajectory.from_dict(obj, where)


def read_jsonl(path: str | Path) -> list[Trajectory]:
    """Reads a file from :func:`write_jsonl`; blank lines are skipped.

    Raises:
      DataError: ``path:line: what was wrong`` for the first bad line, or
        ``path: no trajectories`` for a file without any.
    """
    out = list(iter_trajectories(path))
    if not out:
        raise DataError(f"{path}: no trajectories (expected one JSON object per line)")
    return out
