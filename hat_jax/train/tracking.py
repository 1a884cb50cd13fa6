"""Where a run's metrics go besides `metrics.jsonl`: TensorBoard names and W&B.

The config group `tracking` (every stage config; `experiments/configs/sft_tiny.py`
`tracking_block`):

  wandb    "" (off, the default) | "offline" | "online": an optional Weights &
           Biases sink beside metrics.jsonl and TensorBoard. wandb is imported
           only when this is set (`pip install 'hat_jax[wandb]'`).
  project  the W&B project ("hat_jax").
  name     the run's display name. TensorBoard: "" writes the event files to
           WORKDIR/tb, which `tensorboard --logdir ROOT` lists under the
           workdir's own folder name; a name writes them to WORKDIR/tb/<name>, so
           the sweep driver can pass "<run>/<step>" and a sweep's runs read by
           name instead of by step hash. W&B: the run name ("" = the workdir's
           folder name).

"offline" makes no network call: the run goes to WORKDIR/wandb/wandb/offline-
run-*/ (`wandb sync` uploads it later); "online" needs a W&B login of the user's
own (`wandb login` or WANDB_API_KEY), which nothing here reads or writes.
WANDB_* variables act only as wandb itself applies them. The sink logs the
scalars of every metrics.jsonl row at its step, and the resolved config as the
run's config; it touches no RNG and no training state, so a run with it is
bit-identical to one without (tested). Each process start is a new W&B run
(W&B drops steps at or below a run's last one, so a resumed run that logs its
re-done steps again is a run of its own, from its resumed step on).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["INSTALL", "MODES", "WandbSink", "check_tracking", "run_name", "tb_logdir"]

MODES = ("", "offline", "online")
INSTALL = "pip install 'hat_jax[wandb]'"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]*")  # one path part of a name


def _get(tracking: Mapping | None, key: str, default: Any = "") -> Any:
    if tracking is None:
        return default
    value = tracking.get(key, default)
    return default if value is None else value


def check_tracking(tracking: Mapping | None) -> None:
    """Refuses a bad `tracking` group before any work, naming the key.

    Raises:
      ValueError: an unknown `tracking.wandb` mode, or a `tracking.name` that is
        not relative parts of letters, digits and `._=+-` (it names a folder
        inside the workdir).
      ImportError: `tracking.wandb` is set but wandb is not installed.
    """
    mode = _get(tracking, "wandb")
    if mode not in MODES:
        raise ValueError(
            f"tracking.wandb must be one of {list(MODES)} ('' = off), got {mode!r}"
        )
    name = str(_get(tracking, "name"))
    if name and not all(_NAME.fullmatch(p) for p in name.split("/")):
        raise ValueError(
            f"tracking.name {name!r}: use '/'-separated parts of letters, digits "
            "and ._=+- (it names the folder WORKDIR/tb/<name>)"
        )
    if mode:
        _import_wandb(mode)


def run_name(workdir: str | os.PathLike[str], tracking: Mapping | None) -> str:
    """`tracking.name`, or the workdir's folder name."""
    name = str(_get(tracking, "name"))
    return name or os.path.basename(os.path.abspath(os.fspath(workdir)))


def tb_logdir(workdir: str | os.PathLike[str], tracking: Mapping | None) -> str:
    """WORKDIR/tb, or WORKDIR/tb/<tracking.name> when a name is set."""
    name = str(_get(tracking, "name"))
    base = os.path.join(os.fspath(workdir), "tb")
    return os.path.join(base, *name.split("/")) if name else base


def _import_wandb(mode: str):
    try:
        import wandb
    except ImportError as e:
        raise ImportError(
            f"tracking.wandb={mode!r} needs the wandb package: {INSTALL} "
            "(or set tracking.wandb='' to turn the W&B sink off)"
        ) from e
    return wandb


class WandbSink:
    """One W&B run: `log(step, scalars)`, `close(failed)`.

    Args:
      workdir: the run folder; W&B writes under WORKDIR/wandb.
      tracking: the `tracking` group (wandb mode, project, name).
      config: the resolved config, stored as the W&B run's config.
    """

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        tracking: Mapping,
        config: Mapping[str, Any] | None = None,
    ):
        mode = _get(tracking, "wandb")
        wandb = _import_wandb(mode)
        root = os.path.join(os.path.abspath(os.fspath(workdir)), "wandb")
        os.makedirs(root, exist_ok=True)
        self.run = wandb.init(
            project=str(_get(tracking, "project")) or "hat_jax",
            name=run_name(workdir, tracking),
            dir=root,
            mode=mode,
            config=dict(config or {}),
            # a new run beside any other in this process; no stdout capture
            # (tqdm and the caller's own logging stay as they are)
            reinit="create_new",
            settings=wandb.Settings(console="off", save_code=False),
        )

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        self.run.log(dict(scalars), step=int(step))

    def close(self, failed: bool = False) -> None:
        """Finishes the run (exit code 1 when the training raised)."""
        self.run.finish(exit_code=1 if failed else 0)
