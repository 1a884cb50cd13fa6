"""HSA-RL in the simulator: rollouts, rewards, episodes, ``rl_train_step``.

Each step takes ``rollout.tasks`` cases from a fixed training pool (cycled) and
runs ``rollout.group`` rollouts of each through the agent loop with our sampler,
all in one ``run_turns`` batch. With ``rollout.hsa``, each rollout draws (from
``default_rng([seed, step, task, rollout])``) whether it runs under an augmented
harness (``augment.apply_spec(base, None, spec, seed)``, spec from
``rollout.hsa_family``) and is bound to the simulator through
``canonical_mapping(base).compose(hsa_mapping)``, so one group mixes harnesses.
The judges of ``sim.rewards.judge_all`` give the four rewards and ``success``
(logged as ``rl/success``, with ``rl/equal_reward_groups``: the groups that
teach nothing, every rollout rewarded alike); the trajectories become Episodes
(``hat_jax.train.rl_batch``) and one jitted ``rl_train_step`` updates the policy;
the sampler then gets the new params.

``evaluate`` is greedy decoding on a fixed held-out set (``eval.split``, the base
harness): the mean of each reward and their mean (``eval/reward``) go to
metrics.jsonl, the per-case rewards to ``eval/<step>.json`` (for paired
comparisons); ``eval.n_cases = 0`` turns it off.

It runs on the loop every stage shares (``hat_jax.train.loop.train``: resume,
NaN stop, checkpoints, metrics writer, progress bar, tokens/s of the rollouts);
the data is the step number, the rollouts are made inside the step (as OPD
samples inside its step). Outputs in the workdir: config.json, metrics.jsonl
(train rows every ``train.log_every`` steps; eval rows at step 0 when
``eval.at_start``, every ``eval.every`` steps and at the end;
``rl/frac_reward_zero_std``: the share of groups whose total reward has std 0,
as TRL logs it), rollouts.jsonl (per step every rollout's rewards and
advantages, the reply text of the first ``tracking.rollout_samples``, also in
TensorBoard's text tab: ``hat_jax.train.rollout_log``), tb/ (or
tb/<tracking.name>), wandb/ (with ``tracking.wandb``), ckpt/ (every
``train.save_every`` steps and the last, the newest ``train.keep`` kept).
Run the same command again to resume from the newest checkpoint: a step's
tasks, harness draws and sampling seeds are functions of (seed, step) only, so a
resumed run ends bit-identical to an uninterrupted one (metrics rows and
rollouts.jsonl lines after the checkpoint are dropped and written again). Another
config is refused unless ``--fresh`` or ``--allow-config-change``
(``hat_jax.train.workdir.open_run``). The KL reference is always the starting
model (``init_from``), not the checkpoint.

    hat train rl --config=experiments/configs/rl_tiny.py --workdir runs/rl_tiny
    python -m experiments.rl_sim --config=experiments/configs/rl_tiny.py \\
        --workdir runs/rl_tiny
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from augment import apply_spec, sample_family_spec
from hat_jax.harness import SamplerPolicy, load_harness, run_turns
from hat_jax.harness.policy import formats, thinking_prefill
from hat_jax.jsonl import write_text_atomic
from hat_jax.parallel.placement import place_on_mesh
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.train.loop import train
from hat_jax.train.rl import compute_advantages, jit_rl_step, rl_step_fn
from hat_jax.train.rl_batch import Episode, episode_from_trajectory, episodes_to_batch
from hat_jax.train.rollout_log import RolloutLog, markdown, rollout_rows
from hat_jax.train.setup import open_stage, start_stage
from sim.binding import bind, canonical_mapping
from sim.datasets import fault_config, make_cases
from sim.oracle import case_request
from sim.rewards import SUCCESS, judge_all
from sim.tools import SimBackend

HSA_STREAM = 11  # keeps RL's augmentation draws apart from other seeded uses
PAD_MULTIPLE = 256  # batches pad to the longest episode, rounded up (few shapes)
TRAINED_MULTIPLE = 64  # and the trained positions per row to a multiple of this


def rollout_binding(base, rollout, rng: np.random.Generator):
    """The binding one rollout runs under: the base harness or an HSA variant.

    Returns:
      (binding, spec or None). A spec that does not apply falls back to the base.
    """
    if rollout.hsa and rng.random() < float(rollout.hsa_p):
        spec = sample_family_spec(rollout.hsa_family, rng)
        try:
            h2, _, m = apply_spec(base, None, spec, int(rng.integers(2**31)))
            return bind(h2, canonical_mapping(base).compose(m)), spec
        except ValueError:
            pass
    return bind(base), None


class RowChunkedPolicy:
    """A policy that generates at most ``rows`` conversations per call.

    The sampler pads a call's prompts to a power of two and attends over a
    cache of the next power of two, so its memory grows with rows x prompt
    length squared (16 rows of ~2,200 tokens need ~9 GB for the scores alone);
    chunks bound it. Chunk ``c`` of a call seeded ``s`` is seeded from
    ``(s, c)``. ``params`` reads and sets the wrapped policy's sampling params.
    """

    def __init__(self, policy, rows: int):
        if rows < 1:
            raise ValueError(f"rollout.max_rows must be >= 1, got {rows}")
        self.policy, self.rows = policy, int(rows)

    @property
    def params(self):
        return self.policy.params

    @params.setter
    def params(self, value):
        self.policy.params = value

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        fmts = formats(fmt, len(conversations))
        out = []
        for c, i in enumerate(range(0, len(conversations), self.rows)):
            sub = None
            if seed is not None:
                sub = int(np.random.default_rng([seed, c]).integers(2**31))
            out += self.policy.generate(
                conversations[i : i + self.rows], fmt=fmts[i : i + self.rows], seed=sub
            )
        return out


# Training-reward shaping by name (`rl.shaping`); evaluation always reports the
# judges' raw rewards. name -> fn(reward dict) -> reward dict.
SHAPINGS = {
    "none": lambda r: r,
    # An answer that answers nothing is not accurate: the rule judge's accuracy
    # (no wrong fact) pays a content-free reply, which RL finds and exploits.
    "gate_accuracy": lambda r: (
        r | {"accuracy": r["accuracy"] * (r["effectiveness"] > 0)}
    ),
    # Accuracy gated by success (sim/judge_success.py): a fact-free, off-skill
    # or unsigned reply earns no accuracy reward.
    "gate_success": lambda r: r | {"accuracy": r["accuracy"] * r["success"]},
}


def shape_rewards(scores: list[dict], name: str) -> list[dict]:
    """The training rewards: ``scores`` through the shaping ``name``."""
    if name not in SHAPINGS:
        raise ValueError(f"rl.shaping must be one of {sorted(SHAPINGS)}, got {name!r}")
    return [SHAPINGS[name](dict(s)) for s in scores]


def rollouts(cases, bindings, policy, backend, base, *, seed: int):
    """One ``run_turns`` batch; returns (trajectories, reward dicts)."""
    requests = [case_request(c, b) for c, b in zip(cases, bindings)]
    trajs = run_turns(base, requests, policy, backend, seed=seed)
    scores = [
        {k: float(s.value) for k, s in judge_all(t, c.snapshot, c.message, b).items()}
        for t, c, b in zip(trajs, cases, bindings)
    ]
    for t, b in zip(trajs, bindings):
        t.meta["fmt"] = b.harness.tool_call_format
    return trajs, scores


def evaluate(cfg, policy, base, cases, backend) -> tuple[dict[str, float], list]:
    """Greedy rollouts on ``cases`` (base harness).

    Returns:
      (the mean of each reward and ``eval/reward``, the per-case reward dicts).
    """
    params = policy.params
    policy.params = dataclasses.replace(
        params, temperature=0.0, max_new_tokens=int(cfg.eval.max_new_tokens)
    )
    try:
        binding = bind(base)
        _, scores = rollouts(
            cases, [binding] * len(cases), policy, backend, base, seed=cfg.seed
        )
    finally:
        policy.params = params
    out = {
        f"eval/{k}": float(np.mean([s[k] for s in scores])) for k in cfg.rl.reward_names
    }
    out["eval/reward"] = float(np.mean([out[f"eval/{k}"] for k in cfg.rl.reward_names]))
    out[f"eval/{SUCCESS}"] = float(np.mean([s[SUCCESS] for s in scores]))
    return out, scores


def step_rollouts(cfg, step: int, pool, base, policy, backend, tokenizer):
    """The episodes of RL step ``step`` (>= 1), a function of (seed, step).

    Returns:
      (episodes, trajectories, number of rollouts under an HSA harness).
    """
    ro = cfg.rollout
    n, g = int(ro.tasks), int(ro.group)
    cases, bindings, groups, specs = [], [], [], 0
    for i in range(n):
        case = pool[((step - 1) * n + i) % len(pool)]
        for j in range(g):
            rng = np.random.default_rng([cfg.seed, step, i, j, HSA_STREAM])
            b, spec = rollout_binding(base, ro, rng)
            cases.append(case)
            bindings.append(b)
            groups.append(i)
            specs += spec is not None
    trajs, scores = rollouts(
        cases, bindings, policy, backend, base, seed=cfg.seed * 100003 + step
    )
    scores = shape_rewards(scores, cfg.rl.get("shaping", "none"))
    prefill = tokenizer.encode(thinking_prefill(ro.enable_thinking))
    episodes = [
        episode_from_trajectory(
            t,
            tokenizer,
            rewards=s,
            group=grp,
            other_segment=int(cfg.rl.other_segment),
            on_mismatch=cfg.rl.on_mismatch,
            prefill_ids=prefill,
        )
        for t, s, grp in zip(trajs, scores, groups)
    ]
    return episodes, trajs, specs


def make_batch(cfg, episodes: Sequence[Episode], pad_id: int) -> dict:
    """Pads to the longest episode and the most trained positions, rounded up."""
    longest = max(len(e.ids) for e in episodes) - 1
    pad_to = min(int(cfg.rl.max_len), -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE)
    trained = [int((e.segments[1 : pad_to + 1] > 0).sum()) for e in episodes]
    width = -(-max(max(trained), 1) // TRAINED_MULTIPLE) * TRAINED_MULTIPLE
    return episodes_to_batch(
        episodes,
        pad_to=pad_to,
        pad_trained=min(width, pad_to),
        reward_names=cfg.rl.reward_names,
        pad_id=pad_id,
    )


def group_metrics(
    rewards: Sequence[dict[str, float]], groups: Sequence[int], names: Sequence[str]
) -> dict[str, float]:
    """Shares over one step's rollouts (their training rewards, after shaping).

    ``rl/equal_reward_groups``: the groups in which every rollout earned the same
    value of every reward in ``names``, so that no rollout of the group has an
    advantage to learn from (but a length penalty's); ``rl/success``: the mean
    ``success`` score.
    """
    by_group: dict[int, list[dict[str, float]]] = {}
    for r, g in zip(rewards, groups, strict=True):
        by_group.setdefault(g, []).append(r)
    equal = [
        all(len({r[k] for r in rs}) == 1 for k in names) for rs in by_group.values()
    ]
    return {
        "rl/equal_reward_groups": float(np.mean(equal)),
        "rl/success": float(np.mean([r[SUCCESS] for r in rewards])),
    }


def rollout_metrics(cfg, episodes, trajs, specs: int) -> dict[str, float]:
    """Host-side metrics of one step's rollouts."""
    max_len = int(cfg.rl.max_len)
    rewards = [e.rewards for e in episodes]
    groups = [e.group for e in episodes]
    return {
        **group_metrics(rewards, groups, cfg.rl.reward_names),
        "rl/mismatch_runs": float(sum(e.mismatches for e in episodes)),
        "rl/hsa_share": specs / len(trajs),
        "rl/status_ok": float(np.mean([t.status == "ok" for t in trajs])),
        "rl/truncated": float(sum(len(e.ids) - 1 > max_len for e in episodes)),
    }


def log_rollouts(cfg, log, writer, step, episodes, trajs, batch, samples) -> None:
    """The step's line of rollouts.jsonl and its TensorBoard text (samples > 0).

    The advantages are recomputed on the host from the batch (the jitted step's
    own, as ``compute_advantages`` is deterministic); nothing here touches the
    train state or an RNG.
    """
    adv = compute_advantages(
        jnp.asarray(batch["rewards"]), jnp.asarray(batch["reasoning"]), cfg.rl
    )
    rows = rollout_rows(episodes, trajs, jax.device_get(adv), samples)
    log.append(step, rows)
    if samples > 0:
        writer.text(step, "rl/rollouts", markdown(rows))


def run_rl(
    cfg,
    workdir,
    *,
    progress: bool = True,
    fresh: bool = False,
    allow_config_change: bool = False,
    on_step=None,
) -> tuple[object, object, dict]:
    """Runs (or resumes) ``cfg.train.steps`` RL steps (module docstring).

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
    )
    if int(ro.get("max_rows") or 0):
        policy = RowChunkedPolicy(policy, int(ro.max_rows))
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
    backend = SimBackend(
        fault_config(float(ro.fault_rate)),
        seed=int(cfg.seed),
        compact=bool(ro.get("compact_results", False)),
    )
    pool = make_cases(ro.split, int(cfg.seed), int(ro.n_cases))
    n_eval = int(cfg.eval.n_cases)
    held_out = make_cases(cfg.eval.split, int(cfg.seed), n_eval) if n_eval else []
    samples = int(cfg.get("tracking", {}).get("rollout_samples", 0) or 0)
    now: dict = {"step": 0}  # the step being run, its batch size and rollouts

    def use(state) -> None:
        sampler.update_params(nnx.merge(graphdef, state.params, state.frozen))

    def step_fn(state, step: int, rng):
        t0 = time.perf_counter()
        use(state)  # rollouts from the current policy (also after a restore)
        episodes, trajs, specs = step_rollouts(
            cfg, step, pool, base, policy, backend, tokenizer
        )
        batch = make_batch(cfg, episodes, tokenizer.pad_id)
        rollout_s = time.perf_counter() - t0
        state, metrics = jitted(state, put(batch), rng, ref_params)
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
        metrics.update(rollout_metrics(cfg, episodes, trajs, specs))
        metrics["rl/rollout_s"] = rollout_s
        metrics["rl/step_s"] = time.perf_counter() - t0
        tokens = int(np.sum(batch["attn"]))
        now.update(step=step, tokens=tokens, rollouts=(episodes, trajs, batch))
        return state, metrics

    def run_eval(state) -> dict[str, float]:
        # the means go to metrics.jsonl, the per-case rewards to eval/<step>.json
        t0 = time.perf_counter()
        use(state)
        means, scores = evaluate(cfg, policy, base, held_out, backend)
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


def main(argv: Sequence[str] | None = None) -> int:
    from hat_jax.cli.config_flags import load_config

    p = argparse.ArgumentParser(prog="rl_sim", description=__doc__)
    p.add_argument("--config", required=True, help="FILE[:ARG]")
    p.add_argument("--workdir", required=True)
    p.add_argument("--fresh", action="store_true", help="delete the run, start over")
    p.add_argument(
        "--allow-config-change",
        action="store_true",
        help="resume a checkpoint of another config (recorded in metrics.jsonl)",
    )
    p.add_argument("overrides", nargs="*", help="KEY=VALUE config overrides")
    args = p.parse_args(argv)
    run_rl(
        load_config(args.config, args.overrides),
        args.workdir,
        fresh=args.fresh,
        allow_config_change=args.allow_config_change,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
