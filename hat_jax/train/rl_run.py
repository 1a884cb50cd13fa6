"""`hat train rl`: HSA-RL in an agent task, on the loop every stage shares.

    task = load_task(cfg.rollout.task)              # "sim": the simulator
    per step: rollouts of the current policy (hat_jax.train.rl_rollouts)
      -> episodes -> one jitted ``rl_train_step`` (hat_jax.train.rl) -> the
      sampler gets the new params

It runs on ``hat_jax.train.loop.train`` (resume, NaN stop, checkpoints, metrics
writer, progress bar, tokens/s of the rollouts); the data is the step number,
the rollouts are made inside the step (as OPD samples inside its step). The
held-out evaluation (``eval.split``, greedy, the base harness; ``eval.n_cases =
0`` turns it off) writes the means to metrics.jsonl and the per-case rewards to
``eval/<step>.json`` (for paired comparisons). Outputs in the workdir:
config.json, metrics.jsonl (train rows every ``train.log_every`` steps; eval rows
at step 0 when ``eval.at_start``, every ``eval.every`` steps and at the end;
``rl/frac_reward_zero_std`` as TRL logs it), rollouts.jsonl (per step every
rollout's rewards and advantages, the reply text of the first
``tracking.rollout_samples``, also in TensorBoard's text tab:
``hat_jax.train.rollout_log``), tb/, wandb/ (with ``tracking.wandb``), ckpt/.
Run the same command again to resume from the newest checkpoint: a step's
tasks, harness draws and sampling seeds are functions of (seed, step) only, so a
resumed run ends bit-identical to an uninterrupted one (metrics rows and
rollouts.jsonl lines after the checkpoint are dropped and written again). Another
config is refused unless ``--fresh`` or ``--allow-config-change``
(``hat_jax.train.workdir.open_run``). The KL reference is always the starting
model (``init_from``), not the checkpoint. With ``cfg.mesh`` policy and
reference are sharded over a device mesh and the rollouts sampled on the
sharded policy (``hat_jax.parallel.placement``).

    hat train rl --config=experiments/configs/rl_tiny.py --workdir runs/rl_tiny
"""

from __future__ import annotations

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from hat_jax.harness import SamplerPolicy, load_harness
from hat_jax.jsonl import write_text_atomic
from hat_jax.parallel.placement import place_on_mesh
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.train.agent_task import AgentTask, load_task
from hat_jax.train.loop import train
from hat_jax.train.rl import jit_rl_step, rl_step_fn
from hat_jax.train.rl_rollouts import (
    evaluate,
    log_rollouts,
    make_batch,
    rollout_metrics,
    step_rollouts,
)
from hat_jax.train.rollout_log import RolloutLog
from hat_jax.train.setup import open_stage, start_stage

__all__ = ["StepCounter", "run_rl"]


def run_rl(
    cfg,
    workdir,
    *,
    progress: bool = True,
    fresh: bool = False,
    allow_config_change: bool = False,
    on_step=None,
    task: AgentTask | None = None,
) -> tuple[object, object, dict]:
    """Runs (or resumes) ``cfg.train.steps`` RL steps (module docstring).

    The environment is ``task``, by default the agent task named by
    ``cfg.rollout.task`` (`hat_jax.train.agent_task.load_task`).

    A rerun with another config is refused unless ``fresh`` (start over) or
    ``allow_config_change`` (recorded): ``hat_jax.train.workdir.open_run``.
    ``on_step(step, state)`` runs after each step and its save (tests). With
    ``cfg.mesh`` policy and reference are sharded over a device mesh and the
    rollouts sampled on the sharded policy (``hat_jax.parallel.placement``).

    Returns:
      (final train state, graphdef, last train metrics incl. the last eval).
    """
    lora = cfg.get("lora")
    if lora is not None and int(lora.get("rank") or 0) > 0:
        raise ValueError("HSA-RL trains all params; LoRA (lora.rank > 0) is not wired")
    if task is None:
        task = load_task(str(cfg.rollout.get("task") or "sim"))
    workdir = os.fspath(workdir)
    tokenizer = open_stage(cfg)
    # an MTP head trains with cfg.mtp_weight (the trainable filter)
    st = start_stage(
        cfg, workdir, tokenizer, fresh=fresh, allow_config_change=allow_config_change
    )
    graphdef, state0, run = st.graphdef, st.state, st.run
    family = st.model_config.family
    sampler = Sampler(st.model, tokenizer)
    del st
    ro = cfg.rollout
    policy = SamplerPolicy(
        sampler,
        tokenizer,
        SamplingParams(
            max_new_tokens=int(ro.max_new_tokens),
            temperature=float(ro.temperature),
            seed=int(cfg.seed),
        ),
        enable_thinking=ro.enable_thinking,
        # conversations per sampler call: its memory grows with rows x prompt
        # length squared (16 rows of ~2,200 tokens: ~9 GB for the scores alone)
        max_rows=int(ro.get("max_rows") or 0),
    )
    ref_params = jax.tree.map(jnp.copy, state0.params)  # the starting policy
    # cfg.mesh: policy and reference sharded over a device mesh, the rollouts
    # sampled on the sharded policy (hat_jax.parallel.placement)
    rows = int(cfg.rl.get("micro_batch") or 0) or int(ro.tasks) * int(ro.group)
    placed = place_on_mesh(
        cfg, state0, rl_step_fn(graphdef, cfg), family, rows=rows, frozen=ref_params
    )
    if placed is None:
        jitted, put = jit_rl_step(graphdef, cfg), (lambda b: b)
    else:  # the per-group rewards [N, G, R] on every device, rows [B, ...] split
        state0, jitted, ref_params = placed.state, placed.step, placed.frozen

        def put(batch):
            return placed.put(batch, replicated=("rewards",))

    base = load_harness(ro.harness).in_format(ro.get("prompt_format") or None)
    backend = task.backend(
        seed=int(cfg.seed),
        fault_rate=float(ro.fault_rate),
        compact=bool(ro.get("compact_results", False)),
    )
    pool = task.cases(ro.split, int(cfg.seed), int(ro.n_cases))
    n_eval = int(cfg.eval.n_cases)
    held_out = task.cases(cfg.eval.split, int(cfg.seed), n_eval) if n_eval else []
    samples = int(cfg.get("tracking", {}).get("rollout_samples", 0) or 0)
    now: dict = {"step": 0}  # the step being run, its batch size and rollouts

    def use(state) -> None:
        sampler.update_params(nnx.merge(graphdef, state.params, state.frozen))

    def step_fn(state, step: int, rng):
        t0 = time.perf_counter()
        use(state)  # rollouts from the current policy (also after a restore)
        episodes, trajs, specs = step_rollouts(
            cfg, task, step, pool, base, policy, backend, tokenizer
        )
        batch = make_batch(cfg, episodes, tokenizer.pad_id)
        rollout_s = time.perf_counter() - t0
        state, metrics = jitted(state, put(batch), rng, ref_params)
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
        metrics.update(rollout_metrics(cfg, episodes, trajs, specs, task.headline))
        metrics["rl/rollout_s"] = rollout_s
        metrics["rl/step_s"] = time.perf_counter() - t0
        tokens = int(np.sum(batch["attn"]))
        now.update(step=step, tokens=tokens, rollouts=(episodes, trajs, batch))
        return state, metrics

    def run_eval(state) -> dict[str, float]:
        # the means go to metrics.jsonl, the per-case rewards to eval/<step>.json
        t0 = time.perf_counter()
        use(state)
        means, scores = evaluate(cfg, task, policy, base, held_out, backend)
        means["eval/seconds"] = time.perf_counter() - t0
        os.makedirs(os.path.join(workdir, "eval"), exist_ok=True)
        path = os.path.join(workdir, "eval", f"{now['step']}.json")
        write_text_atomic(path, json.dumps(scores))
        return means

    def after_restore(start: int) -> None:
        run.commit(start)  # config.json only now: a failed restore keeps the old
        now["log"] = RolloutLog(workdir, start)  # lines after the checkpoint: again

    def after_step(step, state, metrics, writer) -> None:
        episodes, trajs, batch = now["rollouts"]
        log_rollouts(cfg, now["log"], writer, step, episodes, trajs, batch, samples)

    steps, every = int(cfg.train.steps), int(cfg.eval.every)
    state, last = train(
        cfg,
        workdir=workdir,
        init_fn=lambda: state0,
        data=StepCounter(),
        step_fn=step_fn,
        tokens_per_batch=lambda _: now["tokens"],
        progress=progress,
        after_restore=after_restore,
        evaluate=run_eval if held_out else None,
        eval_every=every or steps,  # and at the last step
        evaluate_at_start=bool(cfg.eval.at_start),
        after_step=after_step,
        on_step=on_step,
        run_config=run.record,
    )
    return state, graphdef, last


class StepCounter:
    """RL's data: the step number (a step's rollouts are made in the step, from
    (seed, step) and the current params); resumable like `PackedBatches`."""

    def __init__(self):
        self.step = 0

    def __next__(self) -> int:
        self.step += 1
        return self.step

    def position(self) -> dict:
        return {"step": self.step}

    def restore(self, position: dict) -> None:
        self.step = int(position["step"])
