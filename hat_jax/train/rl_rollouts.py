"""RL's rollouts in an agent task: a step's episodes, the held-out evaluation.

Each step takes ``rollout.tasks`` cases from a fixed training pool (cycled) and
runs ``rollout.group`` rollouts of each through the agent loop, all in one
``run_turns`` batch. With ``rollout.hsa``, each rollout draws (from
``default_rng([seed, step, task, rollout])``) whether it runs under an HSA
variant of the base harness (``rollout.hsa_p``; the task draws the variant from
``rollout.hsa_family``), so one group mixes harnesses. The task's rewards,
shaped by ``rl.shaping`` (`AgentTask.shape`), become Episodes
(``hat_jax.train.rl_batch``); ``rl/success`` logs the task's headline reward and
``rl/equal_reward_groups`` the groups that teach nothing (every rollout
rewarded alike). ``evaluate`` is greedy decoding on held-out cases under the
base harness, with the judges' raw rewards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from hat_jax.harness import run_turns
from hat_jax.harness.policy import thinking_prefill
from hat_jax.train.agent_task import AgentTask, TaskCase
from hat_jax.train.rl import compute_advantages
from hat_jax.train.rl_batch import Episode, episode_from_trajectory, episodes_to_batch
from hat_jax.train.rollout_log import markdown, rollout_rows

__all__ = [
    "evaluate",
    "group_metrics",
    "log_rollouts",
    "make_batch",
    "rollout_metrics",
    "rollouts",
    "step_rollouts",
]

HSA_STREAM = 11  # keeps RL's augmentation draws apart from other seeded uses
PAD_MULTIPLE = 256  # batches pad to the longest episode, rounded up (few shapes)
TRAINED_MULTIPLE = 64  # and the trained positions per row to a multiple of this


def rollouts(
    task: AgentTask, cases: Sequence[TaskCase], policy, backend, base, *, seed
):
    """One ``run_turns`` batch; returns (trajectories, the task's reward dicts)."""
    trajs = run_turns(base, [c.request for c in cases], policy, backend, seed=seed)
    scores = [task.rewards(c, t) for c, t in zip(cases, trajs, strict=True)]
    for t, c in zip(trajs, cases):
        t.meta["fmt"] = c.harness.tool_call_format
    return trajs, scores


def evaluate(cfg, task: AgentTask, policy, base, cases, backend):
    """Greedy rollouts on held-out ``cases`` under the base harness.

    Returns:
      (the mean of each reward, ``eval/reward`` (their mean) and the headline's;
      the per-case reward dicts).
    """
    params = policy.params
    policy.params = dataclasses.replace(
        params, temperature=0.0, max_new_tokens=int(cfg.eval.max_new_tokens)
    )
    try:
        bound = [task.bind(c, base) for c in cases]
        _, scores = rollouts(task, bound, policy, backend, base, seed=cfg.seed)
    finally:
        policy.params = params
    names = cfg.rl.reward_names
    out = {f"eval/{k}": float(np.mean([s[k] for s in scores])) for k in names}
    out["eval/reward"] = float(np.mean([out[f"eval/{k}"] for k in names]))
    head = task.headline
    out[f"eval/{head}"] = float(np.mean([s[head] for s in scores]))
    return out, scores


def step_rollouts(cfg, task: AgentTask, step: int, pool, base, policy, backend, tok):
    """The episodes of RL step ``step`` (>= 1), a function of (seed, step).

    Returns:
      (episodes, trajectories, number of rollouts under an HSA harness).
    """
    ro = cfg.rollout
    n, g = int(ro.tasks), int(ro.group)
    cases, groups = [], []
    for i in range(n):
        case = pool[((step - 1) * n + i) % len(pool)]
        for j in range(g):
            rng = np.random.default_rng([cfg.seed, step, i, j, HSA_STREAM])
            hsa = bool(ro.hsa) and rng.random() < float(ro.hsa_p)
            family = str(ro.hsa_family) if hsa else None
            cases.append(task.bind(case, base, hsa_family=family, rng=rng))
            groups.append(i)
    trajs, scores = rollouts(
        task, cases, policy, backend, base, seed=cfg.seed * 100003 + step
    )
    shaping = cfg.rl.get("shaping", "none")
    scores = [task.shape(s, shaping) for s in scores]
    prefill = tok.encode(thinking_prefill(ro.enable_thinking))
    episodes = [
        episode_from_trajectory(
            t,
            tok,
            rewards=s,
            group=grp,
            other_segment=int(cfg.rl.other_segment),
            on_mismatch=cfg.rl.on_mismatch,
            prefill_ids=prefill,
        )
        for t, s, grp in zip(trajs, scores, groups)
    ]
    return episodes, trajs, sum(c.spec is not None for c in cases)


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
    rewards: Sequence[dict[str, float]],
    groups: Sequence[int],
    names: Sequence[str],
    headline: str = "success",
) -> dict[str, float]:
    """Shares over one step's rollouts (their training rewards, after shaping).

    ``rl/equal_reward_groups``: the groups in which every rollout earned the same
    value of every reward in ``names``, so that no rollout of the group has an
    advantage to learn from (but a length penalty's); ``rl/<headline>``: the
    mean headline reward (``rl/success`` in the simulator).
    """
    by_group: dict[int, list[dict[str, float]]] = {}
    for r, g in zip(rewards, groups, strict=True):
        by_group.setdefault(g, []).append(r)
    equal = [
        all(len({r[k] for r in rs}) == 1 for k in names) for rs in by_group.values()
    ]
    return {
        "rl/equal_reward_groups": float(np.mean(equal)),
        f"rl/{headline}": float(np.mean([r[headline] for r in rewards])),
    }


def rollout_metrics(cfg, episodes, trajs, specs: int, headline: str) -> dict:
    """Host-side metrics of one step's rollouts."""
    max_len = int(cfg.rl.max_len)
    rewards = [e.rewards for e in episodes]
    groups = [e.group for e in episodes]
    return {
        **group_metrics(rewards, groups, cfg.rl.reward_names, headline),
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
