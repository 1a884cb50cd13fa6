"""HSA-RL in the simulator: rollouts, rewards, episodes, ``rl_train_step``.

Each step takes ``rollout.tasks`` cases from a fixed training pool (cycled) and
runs ``rollout.group`` rollouts of each through the agent loop with our sampler,
all in one ``run_turns`` batch. With ``rollout.hsa``, each rollout draws (from
``default_rng([seed, step, task, rollout])``) whether it runs under an augmented
harness (``augment.apply_spec(base, None, spec, seed)``, spec from
``rollout.hsa_family``) and is bound to the simulator through
``canonical_mapping(base).compose(hsa_mapping)``, so one group mixes harnesses.
The four judges of ``sim.rewards.judge_all`` give the rewards; the trajectories
become Episodes (``hat_jax.train.rl_batch``) and one jitted ``rl_train_step``
updates the policy; the sampler then gets the new params.

``evaluate`` is greedy decoding on a fixed held-out set (``eval.split``, the base
harness): the mean of each reward and their mean (``eval/reward``).

Outputs in the workdir: config.json, metrics.jsonl (train rows every step; eval
rows at step 0 when ``eval.at_start``, every ``eval.every`` steps and at the
end), tb/, ckpt/ (the final state only; resuming an RL run is not implemented).

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
from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.harness import SamplerPolicy, load_harness, run_turns
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.train import build
from hat_jax.train.metrics import MetricsWriter, check_finite
from hat_jax.train.rl import jit_rl_step
from hat_jax.train.rl_batch import episode_from_trajectory, episodes_to_batch
from hat_jax.train.state import init_state, make_optimizer
from sim.binding import bind, canonical_mapping
from sim.datasets import fault_config, make_cases
from sim.oracle import case_request
from sim.rewards import judge_all
from sim.tools import SimBackend

HSA_STREAM = 11  # keeps RL's augmentation draws apart from other seeded uses
PAD_MULTIPLE = 256  # batches pad to the longest episode, rounded up (few shapes)


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


def evaluate(cfg, policy, base, cases, backend) -> dict[str, float]:
    """Mean simulator rewards of greedy rollouts on ``cases`` (base harness)."""
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
    return out


def run_rl(cfg, workdir, *, progress: bool = True) -> tuple[object, dict]:
    """Runs ``cfg.train.steps`` RL steps (module docstring).

    Returns:
      (final train state, last train metrics incl. the last eval).
    """
    workdir = os.fspath(workdir)
    os.makedirs(workdir, exist_ok=True)
    tokenizer = build.load_tokenizer(cfg.tokenizer)
    model, mcfg = build.make_model(cfg)
    record = cfg.to_dict()
    record["model"] = dataclasses.asdict(mcfg)
    with open(os.path.join(workdir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2, default=str)
    sampler = Sampler(model, tokenizer)
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
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=int(cfg.seed))
    ref_params = jax.tree.map(jnp.copy, state.params)
    step_fn = jit_rl_step(graphdef, cfg)
    base = load_harness(ro.harness)
    backend = SimBackend(fault_config(float(ro.fault_rate)), seed=int(cfg.seed))
    pool = make_cases(ro.split, int(cfg.seed), int(ro.n_cases))
    held_out = make_cases(cfg.eval.split, int(cfg.seed), int(cfg.eval.n_cases))
    steps, n, g = int(cfg.train.steps), int(ro.tasks), int(ro.group)
    last: dict[str, float] = {}
    with (
        MetricsWriter(workdir) as writer,
        Checkpointer(os.path.join(workdir, "ckpt"), save_every=steps, keep=1) as ckpt,
    ):
        if cfg.eval.at_start:
            writer.write(0, evaluate(cfg, policy, base, held_out, backend))
        for step in range(1, steps + 1):
            t0 = time.perf_counter()
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
            episodes = [
                episode_from_trajectory(
                    t,
                    tokenizer,
                    rewards=s,
                    group=grp,
                    other_segment=int(cfg.rl.other_segment),
                    on_mismatch=cfg.rl.on_mismatch,
                )
                for t, s, grp in zip(trajs, scores, groups)
            ]
            longest = max(len(e.ids) for e in episodes) - 1
            pad_to = min(
                int(cfg.rl.max_len), -(-longest // PAD_MULTIPLE) * PAD_MULTIPLE
            )
            batch = episodes_to_batch(
                episodes,
                pad_to=pad_to,
                reward_names=cfg.rl.reward_names,
                pad_id=tokenizer.pad_id,
            )
            rollout_s = time.perf_counter() - t0
            rng = jax.random.fold_in(state.rng, step)
            state, metrics = step_fn(state, batch, rng, ref_params)
            metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
            check_finite(step, metrics)
            sampler.update_params(nnx.merge(graphdef, state.params, state.frozen))
            metrics.update(
                {
                    "rl/mismatch_runs": float(sum(e.mismatches for e in episodes)),
                    "rl/hsa_share": specs / len(trajs),
                    "rl/status_ok": float(np.mean([t.status == "ok" for t in trajs])),
                    "rl/truncated": float(
                        sum(len(e.ids) - 1 > int(cfg.rl.max_len) for e in episodes)
                    ),
                    "rl/rollout_s": rollout_s,
                    "rl/step_s": time.perf_counter() - t0,
                }
            )
            if step % int(cfg.eval.every) == 0 or step == steps:
                metrics.update(evaluate(cfg, policy, base, held_out, backend))
            writer.write(step, metrics)
            if progress:
                print(
                    f"step {step}/{steps} loss {metrics['train/loss']:.4f} "
                    f"gap {metrics['rl/logprob_gap_max']:.2e} "
                    f"{metrics['rl/step_s']:.1f}s",
                    flush=True,
                )
            last = metrics
        ckpt.maybe_save(steps, state, extra={}, force=True)
    return state, last


def main(argv: Sequence[str] | None = None) -> int:
    from hat_jax.cli.config_flags import load_config

    p = argparse.ArgumentParser(prog="rl_sim", description=__doc__)
    p.add_argument("--config", required=True, help="FILE[:ARG]")
    p.add_argument("--workdir", required=True)
    p.add_argument("overrides", nargs="*", help="KEY=VALUE config overrides")
    args = p.parse_args(argv)
    run_rl(load_config(args.config, args.overrides), args.workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
