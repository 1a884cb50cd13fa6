"""Stage 2, on-policy distillation (OPD): the student samples, the teacher scores.

    prompts -> Sampler(student).generate -> [B, T] prompt + completion rows
      -> student and frozen teacher forwards on the same rows (one jitted step)
      -> named divergence (reverse KL default, exact over the vocabulary) on the
         completion tokens only -> AdamW

Sampling happens on the host between jitted steps (the KV-cache sampler has its own
jitted prefill/decode, its weights swapped in each step without recompiling);
`opd_train_step` is pure and jitted with the train state donated. The teacher is the
pre-SFT base (`init_teacher_from`); "" uses a frozen copy of the initial student.
The loss mask is 1 exactly where the target is a sampled completion token, so the
prompt and padding never contribute (position t predicts token t + 1).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import nnx
from jaxtyping import Array, Bool, Float, Int

from hat_jax.harness.trajectory import check_messages
from hat_jax.jsonl import iter_jsonl
from hat_jax.losses.divergences import get_divergence
from hat_jax.losses.moe import moe_aux_term
from hat_jax.losses.sft import token_logprobs
from hat_jax.sampling.sampler import Completion, Sampler, SamplingParams
from hat_jax.text.chat import render_chat
from hat_jax.train.state import (
    TrainState,
    cast_floats,
    make_optimizer,
    make_schedule,
)

__all__ = [
    "PromptBatches",
    "build_batch",
    "encode_prompts",
    "jit_opd_step",
    "opd_loss",
    "opd_step_fn",
    "opd_train_step",
    "read_prompts",
    "run_opd",
]


def read_prompts(path: str | os.PathLike[str]) -> list[list[dict[str, Any]]]:
    """Chat prompts from a JSONL file, as message lists.

    Each line is `{"messages": [{"role", "content"}, ...]}` or `{"prompt": "..."}`
    (one user turn); trailing assistant turns are dropped, since the student
    writes its own reply. Blank lines are skipped.

    Raises:
      ValueError: `path:line: what was wrong` for the first bad line, or when the
        file holds no prompt.
    """
    out = [_messages(obj, where) for where, obj in iter_jsonl(path)]
    if not out:
        raise ValueError(f"{path}: no prompts")
    return out


def _messages(obj: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if "messages" in obj:
        msgs = obj["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise ValueError(f"{where}: 'messages' must be a non-empty list")
        check_messages(msgs, where)
        msgs = list(msgs)
        while msgs and msgs[-1]["role"] == "assistant":
            msgs.pop()
        if not msgs:
            raise ValueError(f"{where}: only assistant messages, nothing to answer")
        return msgs
    if "prompt" in obj:
        if not isinstance(obj["prompt"], str) or not obj["prompt"].strip():
            raise ValueError(f"{where}: 'prompt' must be a non-empty string")
        return [{"role": "user", "content": obj["prompt"]}]
    raise ValueError(f"{where}: expected a 'messages' or a 'prompt' key")


def encode_prompts(
    prompts: Sequence[list[dict[str, Any]]],
    tokenizer,
    *,
    max_prompt_tokens: int,
    enable_thinking: bool | None = None,
) -> tuple[list[list[int]], dict[str, int]]:
    """Renders each chat with an open assistant turn and tokenises it.

    Prompts longer than `max_prompt_tokens` are dropped (counted in the stats).
    """
    texts = [
        render_chat(m, add_generation_prompt=True, enable_thinking=enable_thinking)
        for m in prompts
    ]
    ids = tokenizer.encode_batch(texts)
    kept = [x for x in ids if 0 < len(x) <= max_prompt_tokens]
    stats = {"prompts": len(ids), "kept": len(kept), "dropped": len(ids) - len(kept)}
    if not kept:
        raise ValueError(
            f"all {len(ids)} prompts are longer than max_prompt_tokens="
            f"{max_prompt_tokens}"
        )
    return kept, stats


class PromptBatches:
    """Endless batches of prompt ids in a per-epoch shuffled order.

    The order depends only on `(seed, epoch)`; `position()`/`restore()` make a
    resumed run see the same prompts as an uninterrupted one.
    """

    def __init__(self, prompts: Sequence[list[int]], *, batch_size: int, seed: int):
        if batch_size > len(prompts):
            raise ValueError(
                f"batch_size {batch_size} is larger than the {len(prompts)} prompts"
            )
        self.prompts, self.batch_size, self.seed = list(prompts), batch_size, seed
        self.epoch, self.index = 0, 0
        self._order = self._perm(0)

    def _perm(self, epoch: int) -> np.ndarray:
        return np.random.default_rng((self.seed, epoch)).permutation(len(self.prompts))

    def position(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def restore(self, pos: dict[str, int]) -> None:
        self.epoch, self.index = int(pos["epoch"]), int(pos["index"])
        self._order = self._perm(self.epoch)

    def __iter__(self):
        return self

    def __next__(self) -> list[list[int]]:
        if self.index + self.batch_size > len(self.prompts):  # drop the remainder
            self.epoch, self.index = self.epoch + 1, 0
            self._order = self._perm(self.epoch)
        at = self._order[self.index : self.index + self.batch_size]
        self.index += self.batch_size
        return [self.prompts[i] for i in at]


def build_batch(
    prompts: Sequence[list[int]],
    completions: Sequence[Completion],
    *,
    seq_len: int,
    pad_id: int,
) -> dict[str, np.ndarray]:
    """Right-padded [B, seq_len] rows of prompt + completion, shifted by one.

    `loss_mask[b, t]` is True iff `targets[b, t]` is a sampled completion token;
    `sampler_logprobs` holds the sampler's log-prob of that token (0 elsewhere).
    """
    b = len(prompts)
    inputs = np.full((b, seq_len), pad_id, np.int32)
    targets = np.full((b, seq_len), pad_id, np.int32)
    mask = np.zeros((b, seq_len), bool)
    lps = np.zeros((b, seq_len), np.float32)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        row = list(p) + list(c.tokens)
        if len(row) - 1 > seq_len:
            raise ValueError(f"row {i}: {len(row) - 1} tokens > seq_len {seq_len}")
        n = len(row) - 1
        inputs[i, :n], targets[i, :n] = row[:-1], row[1:]
        start = len(p) - 1  # position predicting the first completion token
        mask[i, start:n] = True
        lps[i, start:n] = c.logprobs
    return {
        "inputs": inputs,
        "targets": targets,
        "loss_mask": mask,
        "sampler_logprobs": lps,
    }


def opd_loss(
    *,
    student_logits: Float[Array, "B T V"],
    teacher_logits: Float[Array, "B T V"],
    mask: Array,
    cfg,
) -> tuple[Float[Array, ""], dict[str, Array]]:
    """The config's divergence (`cfg.divergence`, `cfg.top_k`; 0 = exact)."""
    top_k = int(cfg.top_k) or None
    return get_divergence(cfg.divergence)(
        student_logits=student_logits,
        teacher_logits=teacher_logits,
        mask=mask,
        top_k=top_k,
    )


def _forward(graphdef, variables, tokens: Int[Array, "B T"]):
    # Right padding under a causal mask never reaches a real position, so no
    # padding mask is needed (a pad query with no keys would give NaNs).
    return nnx.merge(graphdef, *variables).forward(tokens)  # DecoderOutput


def _real(loss_mask: Bool[Array, "B T"]) -> Bool[Array, "B T"]:
    """The rows' real tokens: prompt and completion, up to the last trained one."""
    t = jnp.arange(loss_mask.shape[1])
    end = jnp.max(jnp.where(loss_mask, t + 1, 0), axis=1)  # [B]
    return t[None, :] < end[:, None]


def _loss_fn(params, frozen, batch, teacher_logits, *, graphdef, cfg):
    params, frozen = cast_floats((params, frozen), cfg.compute_dtype)
    model = nnx.merge(graphdef, params, frozen)
    out = model.forward(batch["inputs"])  # no padding mask: as `_forward`
    logits = out.logits
    loss, m = opd_loss(
        student_logits=logits,
        teacher_logits=teacher_logits,
        mask=batch["loss_mask"],
        cfg=cfg,
    )
    aux, aux_metrics = moe_aux_term(
        out.router_logits, model.config, _real(batch["loss_mask"])
    )
    loss, m = loss + aux, {**m, **aux_metrics}
    # Trainer vs sampler log-prob of the sampled tokens (both at temperature 1).
    lp = token_logprobs(logits=jax.lax.stop_gradient(logits), targets=batch["targets"])
    gap = jnp.where(batch["loss_mask"], jnp.abs(lp - batch["sampler_logprobs"]), 0.0)
    m["logprob_gap"] = jnp.max(gap)
    return loss, m


def opd_train_step(
    state: TrainState,
    batch: dict,
    rng: jax.Array,
    *,
    graphdef,
    teacher_params,
    cfg,
    teacher_graphdef=None,
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One optimiser update on a batch of sampled completions.

    Args:
      state: the student's train state.
      batch: `build_batch` arrays [B, T].
      rng: this step's key (unused: sampling happened on the host).
      graphdef: the student's static graph.
      teacher_params: the frozen teacher's variables (`nnx.split(teacher)[1]`).
      cfg: the run config (divergence, top_k, compute_dtype, optim).
      teacher_graphdef: the teacher's graph; default the student's.

    Returns:
      (new state, metrics): train/loss, train/divergence, train/max_divergence,
      train/student_entropy, train/completion_len, train/loss_tokens,
      train/logprob_gap, train/grad_norm, train/param_norm, train/update_norm,
      train/lr.
    """
    del rng
    tg = graphdef if teacher_graphdef is None else teacher_graphdef
    teacher_logits = jax.lax.stop_gradient(
        _forward(tg, (teacher_params,), batch["inputs"]).logits
    )
    grad_fn = jax.value_and_grad(
        functools.partial(_loss_fn, graphdef=graphdef, cfg=cfg), has_aux=True
    )
    (loss, m), grads = grad_fn(state.params, state.frozen, batch, teacher_logits)
    tx = make_optimizer(cfg.optim)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = jax.tree.map(lambda p, u: p + u, state.params, updates)
    rows = batch["loss_mask"].shape[0]
    metrics = {
        "train/loss": loss,
        "train/divergence": m["divergence"],
        "train/max_divergence": m["max_divergence"],
        "train/student_entropy": m["student_entropy"],
        "train/completion_len": m["n_tokens"] / rows,
        "train/loss_tokens": m["n_tokens"],
        "train/logprob_gap": m["logprob_gap"],
        "train/grad_norm": optax.tree.norm(grads),
        "train/param_norm": optax.tree.norm(params),
        "train/update_norm": optax.tree.norm(updates),
        "train/lr": make_schedule(cfg.optim)(state.step),
    }
    if "moe_aux_loss" in m:  # models with routed experts
        metrics["train/moe_aux_loss"] = m["moe_aux_loss"]
    new = state.replace(step=state.step + 1, params=params, opt_state=opt_state)
    return new, metrics


def opd_step_fn(graphdef, cfg: ml_collections.ConfigDict, teacher_graphdef=None):
    """`(state, batch, rng, teacher_params) -> (state, metrics)`, unjitted (to jit
    plainly, `jit_opd_step`, or for a mesh, `hat_jax.parallel.place_on_mesh`)."""

    def step(state, batch, rng, teacher_params):
        return opd_train_step(
            state,
            batch,
            rng,
            graphdef=graphdef,
            teacher_params=teacher_params,
            cfg=cfg,
            teacher_graphdef=teacher_graphdef,
        )

    return step


def jit_opd_step(graphdef, cfg: ml_collections.ConfigDict, teacher_graphdef=None):
    """`(state, batch, rng, teacher_params) -> (state, metrics)`, state donated."""
    return jax.jit(opd_step_fn(graphdef, cfg, teacher_graphdef), donate_argnums=(0,))


def _teacher(cfg, student: nnx.Module):
    """(graphdef, variables) of the frozen teacher (module docstring)."""
    from hat_jax.train import build

    src = str(cfg.get("init_teacher_from") or "")
    if not src:
        return nnx.split(student)  # run_opd copies what the step would donate
    tcfg = ml_collections.ConfigDict(cfg.to_dict())
    tcfg.init_from = src
    teacher, _ = build.make_model(tcfg)
    return nnx.split(teacher)


def _sampling_params(cfg) -> SamplingParams:
    s = cfg.sampling
    return SamplingParams(
        max_new_tokens=int(s.max_new_tokens),
        temperature=float(s.temperature),
        top_k=int(s.top_k),
        top_p=float(s.top_p),
    )


def run_opd(
    cfg: ml_collections.ConfigDict,
    workdir,
    *,
    model: nnx.Module | None = None,
    teacher: nnx.Module | None = None,
    fresh: bool = False,
    allow_config_change: bool = False,
    **train_kw,
):
    """Builds prompts, student, teacher and state from `cfg`; trains (`hat train opd`).

    With `cfg.mesh` student and teacher are sharded over a device mesh by the
    family's rules and the rollouts are sampled on the sharded student
    (`hat_jax.parallel.placement`).

    Args:
      cfg: the run config (experiments/configs/opd_tiny.py).
      workdir: run folder: config.json, metrics.jsonl, tb/, ckpt/ (wandb/ with
        `tracking.wandb`); with `data.eval`, held-out prompts are scored every
        `train.eval_every` steps on the teacher's greedy completions
        (`hat_jax.train.heldout`).
      model: a student to start from instead of `cfg.init_from` (tests).
      teacher: a teacher instead of `cfg.init_teacher_from` (tests).
      fresh: delete the workdir's earlier outputs and start over.
      allow_config_change: resume a checkpoint of another config (recorded in
        metrics.jsonl); by default that is refused
        (`hat_jax.train.workdir.open_run`).
      **train_kw: passed to `hat_jax.train.loop.train` (progress, on_step).

    Returns:
      (final state, graphdef, last metrics).
    """
    from hat_jax.parallel.placement import place_on_mesh
    from hat_jax.train import build
    from hat_jax.train.heldout import opd_heldout
    from hat_jax.train.loop import train
    from hat_jax.train.setup import open_stage, start_stage

    tokenizer = open_stage(cfg)
    ids, stats = encode_prompts(
        read_prompts(cfg.data.train),
        tokenizer,
        max_prompt_tokens=int(cfg.data.max_prompt_tokens),
        enable_thinking=cfg.data.get("enable_thinking"),
    )
    batches = PromptBatches(ids, batch_size=int(cfg.batch_size), seed=int(cfg.seed))
    if model is None:
        model, mcfg = build.make_model(cfg)
    else:
        mcfg = model.config
    if teacher is None:
        tgraph, tparams = _teacher(cfg, model)
    else:
        tgraph, tparams = nnx.split(teacher)
    # The step donates the student's buffers; the teacher must not share any.
    shared = {id(x) for x in jax.tree.leaves(nnx.state(model))}
    tparams = jax.tree.map(lambda x: jnp.copy(x) if id(x) in shared else x, tparams)
    tconfig = nnx.merge(tgraph, tparams).config
    tvocab = tconfig.vocab_size
    if tvocab != mcfg.vocab_size:
        raise ValueError(
            f"teacher vocab {tvocab} != student vocab {mcfg.vocab_size}: OPD "
            "compares distributions over one shared vocabulary"
        )
    # OPD has no MTP term: a head (if any) rides along frozen, out of weight decay
    no_mtp = ml_collections.ConfigDict(cfg.to_dict())
    no_mtp.mtp_weight = 0.0
    # LoRA (cfg.lora.rank > 0) on the student only, after the teacher was taken.
    st = start_stage(
        cfg,
        workdir,
        tokenizer,
        model=model,
        data_stats=stats,
        trainable_cfg=no_mtp,
        fresh=fresh,
        allow_config_change=allow_config_change,
    )
    sampler = Sampler(st.model, tokenizer)
    graphdef, state0, run = st.graphdef, st.state, st.run
    del model, st
    # cfg.mesh: student and teacher sharded over a device mesh, the rollouts
    # sampled on the sharded student (hat_jax.parallel.placement)
    placed = place_on_mesh(
        cfg,
        state0,
        opd_step_fn(graphdef, cfg, tgraph),
        mcfg.family,
        rows=int(cfg.batch_size),
        frozen=tparams,
        frozen_family=tconfig.family,
    )
    if placed is None:
        jitted, put = jit_opd_step(graphdef, cfg, tgraph), (lambda b: b)
    else:
        state0, jitted, put, tparams = (
            placed.state,
            placed.step,
            placed.put,
            placed.frozen,
        )
    sp = _sampling_params(cfg)
    seq_len = int(cfg.data.max_prompt_tokens) + sp.max_new_tokens
    pad = tokenizer.pad_id
    counted = {"tokens": 0}

    def step_fn(state, prompts, rng):
        sampler.update_params(nnx.merge(graphdef, state.params, state.frozen))
        seed = int(np.asarray(rng)[-1]) & 0x7FFFFFFF  # rng is fold_in bits
        comps = sampler.generate(prompts, sp, seed=seed)
        batch = build_batch(prompts, comps, seq_len=seq_len, pad_id=pad)
        counted["tokens"] = int(batch["loss_mask"].sum())
        state, metrics = jitted(state, put(batch), rng, tparams)
        metrics = dict(metrics)
        metrics["train/stop_frac"] = np.mean([c.finish_reason == "stop" for c in comps])
        return state, metrics

    heldout, eval_every = opd_heldout(cfg, tokenizer, graphdef, tgraph, tparams)
    state, last = train(
        cfg,
        workdir=workdir,
        init_fn=lambda: state0,
        data=batches,
        step_fn=step_fn,
        tokens_per_batch=lambda _: counted["tokens"],
        after_restore=run.commit,
        evaluate=heldout,
        eval_every=eval_every,
        run_config=run.record,
        **train_kw,
    )
    return state, graphdef, last
