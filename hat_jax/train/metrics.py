"""Run outputs: `metrics.jsonl`, TensorBoard event files, and the NaN/inf check.

`metrics.jsonl` holds one JSON object per logged step, e.g.
`{"step": 10, "train/loss": 2.31, "train/lr": 0.001, "train/tokens_per_s": 812.0}`.
TensorBoard files are written with tensorboardX (no TensorFlow) when it is
installed; without it the run goes on with a one-time notice. They go to
WORKDIR/tb, or WORKDIR/tb/<tracking.name>; with `tracking.wandb` set the same
rows also go to a W&B run (`hat_jax.train.tracking`). A resumed run passes
`purge_step`, so TensorBoard hides the earlier events of the steps it logs again.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from typing import Any

from hat_jax.jsonl import DataError, parse_line, write_text_atomic
from hat_jax.train.tracking import WandbSink, check_tracking, tb_logdir

__all__ = [
    "MetricsWriter",
    "NonFiniteError",
    "check_finite",
    "read_metrics",
    "trim_metrics",
]


class NonFiniteError(FloatingPointError):
    """A loss or gradient norm became NaN or inf."""


def check_finite(step: int, metrics: Mapping[str, float], keys=None) -> None:
    """Raises NonFiniteError naming the step and the first non-finite metric.

    Args:
      step: the step the metrics belong to.
      metrics: host floats.
      keys: which metrics to check (default: every `*loss*` and `*grad_norm*`).
    """
    for k in sorted(metrics):
        if keys is None and "loss" not in k and "grad_norm" not in k:
            continue
        if keys is not None and k not in keys:
            continue
        v = float(metrics[k])
        if not math.isfinite(v):
            raise NonFiniteError(
                f"step {step}: {k} is {v}; stopping (the last good checkpoint is "
                "kept; lower the learning rate or check the data)"
            )


def _summary_writer(logdir: str, purge_step: int | None = None):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        print(
            "note: tensorboardX is not installed, so no TensorBoard event files are "
            "written (pip install tensorboardX==2.6.5); metrics.jsonl is complete.",
            file=sys.stderr,
        )
        return None
    return SummaryWriter(logdir, purge_step=purge_step)


class MetricsWriter:
    """Appends metrics to `<workdir>/metrics.jsonl`, TensorBoard and (opt.) W&B.

    Args:
      workdir: the run folder.
      tensorboard: write TensorBoard event files (tensorboardX).
      tracking: the config's `tracking` group (TB run name, W&B sink); None:
        WORKDIR/tb and no W&B.
      config: the resolved config, the W&B run's config.
      purge_step: the first step this process logs after a resume; TensorBoard
        then drops the earlier files' events from that step on.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        tensorboard: bool = True,
        tracking: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        purge_step: int | None = None,
    ):
        os.makedirs(workdir, exist_ok=True)
        check_tracking(tracking)
        self.path = os.path.join(workdir, "metrics.jsonl")
        self._file = open(self.path, "a", encoding="utf-8")
        self._tb = None
        self._wandb = None
        try:
            if tensorboard:
                self._tb = _summary_writer(tb_logdir(workdir, tracking), purge_step)
            if tracking is not None and tracking.get("wandb"):
                self._wandb = WandbSink(workdir, tracking, config)
        except BaseException:
            self.close(failed=True)
            raise

    def write(self, step: int, metrics: Mapping[str, Any]) -> None:
        row = {"step": int(step)}
        row.update({k: float(v) for k, v in metrics.items()})
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        scalars = {k: v for k, v in row.items() if k != "step"}
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(k, v, global_step=int(step))
        if self._wandb is not None:
            self._wandb.log(step, scalars)

    def text(self, step: int, tag: str, text: str) -> None:
        """A text (Markdown) entry in TensorBoard at `step` (not metrics.jsonl)."""
        if self._tb is not None:
            self._tb.add_text(tag, text, global_step=int(step))

    def close(self, failed: bool = False) -> None:
        """Closes every sink; `failed` marks the W&B run as failed (exit code 1)."""
        if not self._file.closed:
            self._file.close()
        tb, self._tb = self._tb, None
        sink, self._wandb = self._wandb, None
        try:
            if tb is not None:
                tb.close()
        finally:
            if sink is not None:
                sink.close(failed=failed)

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(failed=exc_type is not None)


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, float]]:
    """The rows of a `metrics.jsonl` file (NaN allowed: a diverged run logs one).

    A last line cut short (no newline, not JSON: the process was killed while
    writing it) is dropped; any other bad line is a ``path:line:`` DataError.
    """
    with open(path, "rb") as f:
        lines = f.readlines()
    rows = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            row = parse_line(raw, f"{path}:{n}", allow_nan=True)
        except DataError:
            if n == len(lines) and not raw.endswith(b"\n"):
                break  # a torn final write
            raise
        if not isinstance(row, dict):
            raise DataError(f"{path}:{n}: expected a JSON object of metrics")
        rows.append(row)
    return rows


def trim_metrics(path: str | os.PathLike[str], last_step: int) -> None:
    """Keeps the rows up to `last_step`: a resumed run logs the later ones again
    (a negative `last_step` drops every row, a step-0 evaluation included)."""
    if not os.path.exists(path):
        return
    rows = [r for r in read_metrics(path) if r.get("step", 0) <= last_step]
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))
