"""Stage 1, HSA-SFT: masked next-token cross-entropy over packed trajectories.

    batch [B, T] -> (A micro-batches of [B/A, T]) -> model.hidden_states [B/A, T, D]
    -> chunked LM head + CE on the assistant tokens (never all [B, T, V] logits)
    -> token-weighted mean of the micro-batch grads -> AdamW

`sft_train_step` is pure; `jit_sft_step` jits it with the state donated. The loss is
`hat_jax.losses.chunked.chunked_cross_entropy` (`cfg.loss_chunk` rows at a time,
only the trained positions when they fit in `cfg.loss_share` of the positions);
`cfg.remat` recomputes each layer in the backward pass (less memory, ~1/3 more
compute). With an MTP head and `cfg.mtp_weight` > 0 the head's CE on the token
after next (`mtp_targets`) is added with that weight; `cfg.mtp_only` trains the
head alone on that loss, the trunk frozen (`build.trainable_filter`). Models with
routed experts add the load-balancing loss times `router_aux_loss_coef`
(`hat_jax.losses.moe`, logged as `train/moe_aux_loss`). LoRA comes through the
`trainable` filter of `init_state`.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import ml_collections
import optax
from flax import nnx

from hat_jax.losses.chunked import chunked_cross_entropy
from hat_jax.losses.moe import moe_aux_term
from hat_jax.losses.sft import mtp_targets
from hat_jax.models.mtp import mtp_hidden
from hat_jax.train.state import (
    TrainState,
    cast_floats,
    make_optimizer,
    make_schedule,
)

__all__ = [
    "jit_sft_step",
    "run_sft",
    "sft_loss",
    "sft_train_step",
]


def sft_loss(params, frozen, batch, *, graphdef, cfg) -> tuple[jax.Array, dict]:
    """Mean CE over the batch's loss tokens; params may be cast to bf16 here."""
    params, frozen = cast_floats((params, frozen), cfg.compute_dtype)
    model = nnx.merge(graphdef, params, frozen)
    hidden, _, routers = model.hidden_states(
        batch["inputs"],
        batch["positions"],
        segment_ids=batch["segment_ids"],
        remat=bool(cfg.get("remat", False)),
    )
    chunk = int(cfg.get("loss_chunk", 512))
    b, t = batch["targets"].shape
    rows = math.ceil(float(cfg.get("loss_share", 0.0) or 0.0) * b * t)
    if cfg.get("mtp_only", False):  # standalone MTP mode: the frozen trunk feeds it
        stopped = jax.lax.stop_gradient(hidden)
        return _mtp_term(model, stopped, batch, chunk, rows)
    loss, metrics = chunked_cross_entropy(
        hidden=hidden,
        head=model.logits,
        targets=batch["targets"],
        mask=batch["loss_mask"],
        chunk=chunk,
        rows=rows,
    )
    aux, aux_metrics = moe_aux_term(routers, model.config, batch["segment_ids"] > 0)
    loss, metrics = loss + aux, {**metrics, **aux_metrics}
    weight = float(cfg.get("mtp_weight", 0.0))
    if getattr(model, "mtp", None) is not None and weight > 0:
        mtp, m = _mtp_term(model, hidden, batch, chunk, rows)
        loss = loss + weight * mtp
        metrics = {**metrics, **m}
    return loss, metrics


def _mtp_term(model, hidden, batch, chunk: int, rows: int) -> tuple[jax.Array, dict]:
    h = mtp_hidden(
        model, hidden, batch["inputs"], batch["positions"], batch["segment_ids"]
    )
    targets, weights = mtp_targets(
        batch["targets"], batch["loss_mask"], batch["segment_ids"]
    )
    loss, m = chunked_cross_entropy(
        hidden=h,
        head=model.logits,
        targets=targets,
        mask=weights,
        chunk=chunk,
        rows=rows,
    )
    return loss, {"mtp_ce": m["ce"], "mtp_accuracy": m["accuracy"]}


def sft_train_step(
    state: TrainState, batch: dict, rng: jax.Array, *, graphdef, cfg
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One optimiser update over `cfg.grad_accum` micro-batches.

    Args:
      state: the train state.
      batch: packed arrays [B, T] (`hat_jax.train.data.BATCH_KEYS`).
      rng: this step's key (unused by SFT; kept for the common signature).
      graphdef: the model's static graph.
      cfg: the run config (uses compute_dtype, grad_accum and optim).

    Returns:
      (new state, flat metrics): train/loss, train/accuracy, train/grad_norm,
      train/param_norm, train/update_norm, train/lr, train/loss_tokens.
    """
    del rng
    accum = int(cfg.grad_accum)
    b = batch["inputs"].shape[0]
    if b % accum:
        raise ValueError(f"batch size {b} is not divisible by grad_accum {accum}")
    micro = jax.tree.map(lambda x: x.reshape(accum, b // accum, *x.shape[1:]), batch)
    counts = micro["loss_mask"].reshape(accum, -1).sum(-1).astype(jnp.float32)
    weights = counts / jnp.maximum(counts.sum(), 1.0)  # token-weighted mean over A
    grad_fn = jax.value_and_grad(
        functools.partial(sft_loss, graphdef=graphdef, cfg=cfg), has_aux=True
    )

    keep = ("accuracy", "mtp_ce", "mtp_accuracy", "moe_aux_loss")  # weighted
    first = jax.tree.map(lambda x: x[0], micro)
    shapes = jax.eval_shape(grad_fn, state.params, state.frozen, first)[0][1]
    names = [k for k in keep if k in shapes]

    def body(carry, xs):
        mb, w = xs
        (loss, m), g = grad_fn(state.params, state.frozen, mb)
        grads, sums = carry
        grads = jax.tree.map(lambda a, x: a + w * x, grads, g)
        sums = {"loss": sums["loss"] + w * loss} | {
            k: sums[k] + w * m[k] for k in names
        }
        return (grads, sums), None

    zero = jax.tree.map(jnp.zeros_like, state.params)
    sums0 = {k: jnp.zeros((), jnp.float32) for k in ("loss", *names)}
    (grads, sums), _ = jax.lax.scan(body, (zero, sums0), (micro, weights))

    tx = make_optimizer(cfg.optim)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = jax.tree.map(lambda p, u: p + u, state.params, updates)
    metrics = {
        **{f"train/{k}": v for k, v in sums.items()},
        "train/grad_norm": optax.tree.norm(grads),
        "train/param_norm": optax.tree.norm(params),
        "train/update_norm": optax.tree.norm(updates),
        "train/lr": make_schedule(cfg.optim)(state.step),
        "train/loss_tokens": jnp.count_nonzero(batch["loss_mask"]).astype(jnp.float32),
    }
    new = state.replace(step=state.step + 1, params=params, opt_state=opt_state)
    return new, metrics


def jit_sft_step(graphdef, cfg: ml_collections.ConfigDict):
    """`sft_train_step` jitted for this graphdef and config, the state donated."""
    return jax.jit(
        functools.partial(sft_train_step, graphdef=graphdef, cfg=cfg),
        donate_argnums=(0,),
    )


def run_sft(
    cfg: ml_collections.ConfigDict,
    workdir,
    *,
    fresh: bool = False,
    allow_config_change: bool = False,
    **train_kw,
):
    """Builds data, model and state from `cfg` and trains (`hat train sft`).

    Writes `config.json` (with the model's actual config) into `workdir` once a
    resume (if any) succeeded; a rerun with another config is refused unless
    `fresh` or `allow_config_change` (`hat_jax.train.workdir.open_run`). With
    `cfg.mesh` (axis sizes) the state is sharded over a device mesh and the step
    jitted with its shardings (`hat_jax.parallel.placement`). With
    `cfg.lora.rank` > 0 the model gets LoRA adapters and only they are trained;
    `nnx.merge(graphdef, state.params, state.frozen)` is the adapted model and
    `save_hf` merges the adapters on export. With `data.eval` the held-out loss
    is logged every `train.eval_every` steps (`hat_jax.train.heldout`);
    `tracking` picks the TensorBoard run name and the W&B sink
    (`hat_jax.train.tracking`).

    Returns:
      (final state, graphdef, last metrics).
    """
    from hat_jax.parallel.placement import place_on_mesh
    from hat_jax.train import data
    from hat_jax.train.heldout import sft_heldout
    from hat_jax.train.loop import train
    from hat_jax.train.setup import open_stage, start_stage

    tokenizer = open_stage(cfg)
    trajs = data.select_trajectories(
        data.load_trajectories(cfg.data.train),
        fixed_harness=bool(cfg.data.fixed_harness),
    )
    trajs += data.prompt_free_copies(
        trajs,
        head=int(cfg.data.get("head_copies", 0)),
        no_system=int(cfg.data.get("no_system_copies", 0)),
        reply=int(cfg.data.get("reply_copies", 0)),
    )
    examples, stats = data.tokenize(
        trajs,
        tokenizer,
        seq_len=int(cfg.seq_len),
        fmt=cfg.data.fmt,
        overlong=cfg.data.overlong,
        decision_weight=float(cfg.data.get("decision_weight", 1.0)),
    )
    budget = int(cfg.data.get("call_budget", 0) or 0)
    stats |= data.call_budget_stats(examples, budget, str(cfg.data.train))
    batches = data.PackedBatches(
        examples,
        batch_size=int(cfg.batch_size),
        seq_len=int(cfg.seq_len),
        seed=int(cfg.seed),
        pad_id=tokenizer.pad_id,
    )
    st = start_stage(
        cfg,
        workdir,
        tokenizer,
        data_stats=stats,
        fresh=fresh,
        allow_config_change=allow_config_change,
    )
    graphdef, state0, mcfg, run = st.graphdef, st.state, st.model_config, st.run
    del st  # the model: its arrays are the state's
    # cfg.mesh: the state sharded over a device mesh (hat_jax.parallel.placement)
    step = functools.partial(sft_train_step, graphdef=graphdef, cfg=cfg)
    placed = place_on_mesh(cfg, state0, step, mcfg.family)
    if placed is None:
        step_fn = jit_sft_step(graphdef, cfg)
    else:
        state0, step_fn, batches = placed.state, placed.step, placed.feed(batches)

    probe, every = None, int(cfg.train.get("decision_every", 0))
    held_path = str(cfg.data.get("eval") or "")  # read once, for either reader
    wanted = every > 0 or int(cfg.train.get("eval_every", 0) or 0) > 0
    held = data.load_trajectories(held_path) if held_path and wanted else None
    if every > 0 and placed is None and not cfg.get("mtp_only", False):
        from hat_jax.train.decision_probe import DecisionProbe, probe_batch

        rows = int(cfg.train.get("decision_rows", 8))
        source = held if held is not None else trajs  # held-out rows when given
        pb = probe_batch(
            source, tokenizer, seq_len=int(cfg.seq_len), rows=rows, fmt=cfg.data.fmt
        )
        probe = DecisionProbe(graphdef, pb) if pb is not None else None
    heldout, eval_every = sft_heldout(cfg, tokenizer, graphdef, held)
    state, last = train(
        cfg,
        workdir=workdir,
        init_fn=lambda: state0,  # also the restore template
        data=batches,
        step_fn=step_fn,
        tokens_per_batch=lambda b: int((b["segment_ids"] > 0).sum()),  # no padding
        probe=probe,
        probe_every=every,
        after_restore=run.commit,
        evaluate=heldout,
        eval_every=eval_every,
        run_config=run.record,
        **train_kw,
    )
    return state, graphdef, last
