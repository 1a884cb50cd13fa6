"""The training driver every stage shares: resume, step, log, checkpoint, stop.

    state = restore_latest(ckpt) or init_fn()        # data position restored too
    after_restore(start)                             # e.g. RunRecord.commit
    for step in start+1 .. steps:
        state, m = step_fn(state, next(data), fold_in(state.rng, step))
        check_finite(m)                              # NaN/inf: raise, keep last ckpt
        log every log_every (metrics.jsonl, TensorBoard, W&B, tqdm); save every
        save_every (every probe_every steps, probe(state)'s metrics are logged
        with the step's; every eval_every steps, evaluate(state)'s too, and that
        step's row is written whatever log_every says); after_step(step, state,
        metrics, writer) before the save (e.g. RL's rollout log)

SFT, OPD and RL all run here (`sft.run_sft`, `opd.run_opd`,
`hat_jax.train.rl_run.run_rl`); OPD and RL sample inside their `step_fn`.
`data` is any iterator with `position() -> dict` and `restore(dict)` (see
`hat_jax.train.data.PackedBatches`); its position is saved in the checkpoint's
`extra`, so a resumed run sees the same batches as an uninterrupted one.
`probe` and `evaluate` only read the state (no donation, no RNG), so a run with
them trains exactly as one without; their time is left out of tokens/s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np
from tqdm.auto import tqdm

from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.train.metrics import MetricsWriter, check_finite, trim_metrics
from hat_jax.train.workdir import restore_latest

__all__ = ["train"]


def train(
    cfg,
    *,
    workdir: str | os.PathLike[str],
    init_fn: Callable[[], Any],
    data: Any,
    step_fn: Callable[[Any, Any, jax.Array], tuple[Any, dict]],
    tokens_per_batch: Callable[[Any], int] | None = None,
    on_step: Callable[[int, Any], None] | None = None,
    progress: bool = True,
    probe: Callable[[Any], dict[str, float]] | None = None,
    probe_every: int = 0,
    after_restore: Callable[[int], None] | None = None,
    evaluate: Callable[[Any], dict[str, float]] | None = None,
    eval_every: int = 0,
    evaluate_at_start: bool = False,
    after_step: Callable[[int, Any, dict, MetricsWriter], None] | None = None,
    run_config: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, float]]:
    """Runs `cfg.train.steps` steps of `step_fn`, resuming from `workdir/ckpt`.

    Args:
      cfg: run config; uses train.steps, train.save_every, train.keep,
        train.log_every and the `tracking` group (`hat_jax.train.tracking`).
      workdir: run folder (ckpt/, metrics.jsonl, tb/, wandb/).
      init_fn: builds a fresh state (also the restore template).
      data: resumable batch iterator (`position()`, `restore(pos)`).
      step_fn: jitted `(state, batch, rng) -> (state, metrics)`.
      tokens_per_batch: counts a batch's tokens for tokens/s (default: the size
        of `batch["inputs"]`).
      on_step: called after each step (and its save) with `(step, state)`.
      progress: show a tqdm bar.
      probe: extra metrics of the new state (e.g. decision accuracy), computed
        every `probe_every` steps (and at the last) and logged with that step's.
      probe_every: see `probe`.
      after_restore: called with the step resumed from (0: none) once the
        restore succeeded and metrics.jsonl was trimmed to it
        (`hat_jax.train.workdir.RunRecord.commit` writes config.json there).
      evaluate: held-out metrics of the new state (e.g. `eval/loss`), computed
        every `eval_every` steps and at the last; that step's row is always
        written (`hat_jax.train.heldout`).
      eval_every: see `evaluate` (0: never).
      evaluate_at_start: a fresh run (not a resumed one) also writes row 0,
        `evaluate` of the initial state (a curve's first point).
      after_step: called with `(step, state, metrics, writer)` after each step's
        row (if any) and before its checkpoint, e.g. to log a step's samples.
      run_config: the config W&B records (default `cfg.to_dict()`).

    Returns:
      (final state, the last step's metrics as host floats).

    Raises:
      NonFiniteError: a loss or grad norm became NaN/inf (nothing is saved for
        that step; the newest checkpoint is the last good one).
      ConfigChangeError: the checkpoint does not fit the state `init_fn` builds.
    """
    t = cfg.train
    workdir = os.fspath(workdir)
    steps, log_every = int(t.steps), max(int(t.log_every), 1)
    count = tokens_per_batch or (lambda b: int(np.size(b["inputs"])))
    state, start = init_fn(), 0
    last: dict[str, float] = {}
    with Checkpointer(
        os.path.join(workdir, "ckpt"), save_every=int(t.save_every), keep=int(t.keep)
    ) as ckpt:
        restored = restore_latest(ckpt, state, workdir)
        if restored is not None:
            state, extra, start = restored
            data.restore(extra["data"])
        # rows logged after the checkpoint (all of them when a run died before
        # its first one; row 0 too when a fresh run writes it) are logged again
        at_start = evaluate is not None and evaluate_at_start and start == 0
        trim_metrics(os.path.join(workdir, "metrics.jsonl"), -1 if at_start else start)
        if after_restore is not None:
            after_restore(start)
        writer = MetricsWriter(
            workdir,
            tracking=cfg.get("tracking"),
            config=cfg.to_dict() if run_config is None else run_config,
            purge_step=0 if at_start else start + 1,
        )
        with (
            writer,
            tqdm(total=steps, initial=start, disable=not progress, unit="step") as bar,
        ):
            if at_start:
                writer.write(0, evaluate(state))
            tokens, t0 = 0, time.perf_counter()
            for step in range(start + 1, steps + 1):
                batch = next(data)
                rng = jax.random.fold_in(state.rng, step)
                state, metrics = step_fn(state, batch, rng)
                metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
                check_finite(step, metrics)
                tokens += count(batch)
                extra_s = time.perf_counter()
                if probe is not None and _due(step, probe_every, steps):
                    metrics |= probe(state)
                evaluated = evaluate is not None and _due(step, eval_every, steps)
                if evaluated:
                    metrics |= evaluate(state)
                t0 += time.perf_counter() - extra_s  # not training time
                if evaluated or step % log_every == 0 or step == steps:
                    dt = max(time.perf_counter() - t0, 1e-9)
                    metrics["train/tokens_per_s"] = tokens / dt
                    writer.write(step, metrics)
                    bar.set_postfix(
                        loss=f"{metrics['train/loss']:.4f}",
                        tok_s=f"{metrics['train/tokens_per_s']:.0f}",
                    )
                    tokens, t0 = 0, time.perf_counter()
                last = metrics
                if after_step is not None:
                    after_step(step, state, metrics, writer)
                ckpt.maybe_save(
                    step, state, extra={"data": data.position()}, force=step == steps
                )
                bar.update(1)
                if on_step is not None:
                    on_step(step, state)
    return state, last


def _due(step: int, every: int, steps: int) -> bool:
    """Every `every` steps (0: never) and at the last step."""
    return every > 0 and (step % every == 0 or step == steps)
