"""What an RL step's rollouts were: WORKDIR/rollouts.jsonl and a TensorBoard text.

One JSON line per step (metrics.jsonl's rows stay scalars):

    {"step": 3, "rollouts": [
       {"group": 0, "rewards": {"accuracy": 1.0, ...}, "advantage":
        {"tool": 0.7, "reply": -0.2}, "status": "ok", "harness": "taolive@1.0",
        "reply": "...the last SAMPLE_CHARS characters of the final reply..."},
       ...]}

Every rollout of the step is listed, in the trainer's batch order (by group),
with its training rewards (after shaping: what the advantages were computed
from) and its per-segment sequence advantages (``rl.compute_advantages``); the
first ``tracking.rollout_samples`` also carry the text of the final reply (the
dispatched reply, else the last assistant message; its tail). A line is
appended with one ``write`` and the file is cut back to the resumed step when a
run resumes (`RolloutLog`), so a resumed run's file equals an uninterrupted
run's; a torn last line (a kill mid-write) is dropped on reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hat_jax.train.metrics import read_metrics, trim_metrics
from hat_jax.train.rl_batch import Episode, batch_order

__all__ = ["ROLLOUTS", "SAMPLE_CHARS", "RolloutLog", "markdown", "reply_text"]
__all__ += ["rollout_rows"]

ROLLOUTS = "rollouts.jsonl"
SAMPLE_CHARS = 800  # the tail of a reply that is kept


def reply_text(traj, chars: int = SAMPLE_CHARS) -> str:
    """The final reply of a trajectory (its tail), or of its last message."""
    text = traj.reply
    if text is None:
        msgs = [m for m in traj.messages if m.get("role") == "assistant"]
        msgs = msgs or traj.messages[-1:]
        last = msgs[-1] if msgs else {}
        text = str(last.get("content") or "")
        if last.get("tool_calls"):
            text += " " + json.dumps(
                last["tool_calls"], ensure_ascii=False, default=str
            )
    return text[-chars:] if len(text) > chars else text


def rollout_rows(
    episodes: Sequence[Episode],
    trajs: Sequence[Any],
    advantages: Mapping[str, Any],
    samples: int,
) -> list[dict[str, Any]]:
    """One record per rollout, in batch order (module docstring).

    Args:
      episodes: the step's episodes (``trajs[i]`` made ``episodes[i]``).
      trajs: their trajectories.
      advantages: ``{"tool": [N, G], "reply": [N, G]}`` of the batch.
      samples: how many records (the first) carry the reply text.
    """
    adv = {k: np.asarray(v, np.float64).reshape(-1) for k, v in advantages.items()}
    rows = []
    for b, i in enumerate(batch_order(episodes)):
        ep, t = episodes[i], trajs[i]
        row = {
            "group": int(ep.group),
            "rewards": {k: float(v) for k, v in ep.rewards.items()},
            "advantage": {k: float(a[b]) for k, a in adv.items()},
            "status": t.status,
            "harness": t.harness_id,
        }
        if b < samples:
            row["reply"] = reply_text(t)
        rows.append(row)
    return rows


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows that carry a reply, as a Markdown table (TensorBoard's text tab)."""

    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| group | rewards | adv tool | adv reply | reply |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "reply" not in r:
            continue
        rew = ", ".join(f"{k} {v:.2f}" for k, v in r["rewards"].items())
        a = r["advantage"]
        lines.append(
            f"| {r['group']} | {rew} | {a.get('tool', 0.0):.3f} | "
            f"{a.get('reply', 0.0):.3f} | {cell(r['reply'])} |"
        )
    return "\n".join(lines)


class RolloutLog:
    """Appends a step's line to WORKDIR/rollouts.jsonl.

    Args:
      workdir: the run folder.
      last_step: the step the run resumes from (0: none); later lines (from
        before a kill) are dropped, as `trim_metrics` drops metrics rows.
    """

    def __init__(self, workdir: str | os.PathLike[str], last_step: int):
        self.path = os.path.join(os.fspath(workdir), ROLLOUTS)
        trim_metrics(self.path, last_step)

    def append(self, step: int, rollouts: Sequence[Mapping[str, Any]]) -> None:
        data = (
            json.dumps({"step": int(step), "rollouts": list(rollouts)}) + "\n"
        ).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:  # one write for a regular file; the loop is a guard
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def read(self) -> list[dict[str, Any]]:
        """The lines written so far (a torn last line dropped)."""
        return read_metrics(self.path) if os.path.exists(self.path) else []
