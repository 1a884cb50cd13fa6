"""The set-up every stage runner shares (SFT, OPD, RL), before its loop.

    tokenizer = open_stage(cfg)          # bounds, tracking, tokenizer
    ... the stage reads its data (and records its stats) ...
    st = start_stage(cfg, workdir, tokenizer, data_stats=...)
    train(cfg, init_fn=lambda: st.state, after_restore=st.run.commit, ...)

`start_stage` builds the model (or takes the one given), checks its vocabulary
against the tokenizer, opens the run record (`config.json` with the model's full
config and the data stats; a changed config refused unless `fresh` or
`allow_config_change`: `workdir.open_run`), adds LoRA adapters
(`cfg.lora.rank` > 0) and splits the initial train state with the stage's
trainable filter (`build.trainable_filter`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import ml_collections

from hat_jax.train import build
from hat_jax.train.state import TrainState, init_state, make_optimizer
from hat_jax.train.tracking import check_tracking
from hat_jax.train.workdir import RunRecord, check_config, open_run

__all__ = ["Stage", "open_stage", "start_stage"]


@dataclasses.dataclass
class Stage:
    """What a runner trains: the model (with adapters), its config, the run
    record, the graphdef and the initial state (also the restore template)."""

    model: Any
    model_config: Any
    run: RunRecord
    graphdef: Any
    state: TrainState


def open_stage(cfg: ml_collections.ConfigDict):
    """Checks the config's bounds and tracking block; returns the tokenizer."""
    check_config(cfg)
    check_tracking(cfg.get("tracking"))
    return build.load_tokenizer(cfg.tokenizer)


def start_stage(
    cfg: ml_collections.ConfigDict,
    workdir: str | os.PathLike[str],
    tokenizer,
    *,
    model=None,
    data_stats: dict | None = None,
    trainable_cfg: ml_collections.ConfigDict | None = None,
    fresh: bool = False,
    allow_config_change: bool = False,
) -> Stage:
    """The model, run record and initial state of a stage (module docstring).

    Args:
      cfg: the stage's config.
      workdir: the run folder (created when the run record is committed).
      tokenizer: from `open_stage`.
      model: start from this model instead of `build.make_model(cfg)`.
      data_stats: recorded in config.json as `data_stats`.
      trainable_cfg: the config the trainable filter reads (default `cfg`;
        OPD passes one with `mtp_weight` 0, so a head rides along frozen).
      fresh, allow_config_change: see `workdir.open_run`.
    """
    if model is None:
        model, mcfg = build.make_model(cfg)
    else:
        mcfg = model.config
    build.check_vocab(tokenizer, mcfg.vocab_size)
    record = cfg.to_dict()
    record["model"] = dataclasses.asdict(mcfg)
    if data_stats is not None:
        record["data_stats"] = data_stats
    run = open_run(
        workdir, record, fresh=fresh, allow_config_change=allow_config_change
    )
    # LoRA (cfg.lora.rank > 0): only the adapters (and a co-trained MTP head) get
    # optimiser state; the base weights ride along in `state.frozen`.
    model = build.add_adapters(cfg, model)
    graphdef, state = init_state(
        model,
        make_optimizer(cfg.optim),
        seed=int(cfg.seed),
        trainable=build.trainable_filter(trainable_cfg or cfg, model),
    )
    return Stage(model, mcfg, run, graphdef, state)
