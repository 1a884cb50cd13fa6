"""Stage 3 (HSA-RL) on a tiny Qwen3 model in the simulator, on CPU.

The model is sft_tiny's (2-layer Qwen3, hidden 64, SmolLM2's tokenizer); start it
from an SFT run with ``init_from`` (a random model earns ~0 reward: this config
from scratch only shows the loop runs). Each step takes ``tasks`` simulator cases
and ``group`` rollouts each; with ``hsa`` on, each rollout gets a harness sampled
from an HSA family with probability ``hsa_p``, so a group mixes harnesses.

Memory: the step holds [B, T, V] float32 logits several times over (forward,
softmax grad, the reference pass), B = tasks * group, T up to ``rl.max_len``, V
= 49,152: by that count ~6 GB at B = 4, T = 2,048 (an estimate); B = 8 with T
up to 4,096 was killed for memory at 14 GB on a 23 GB machine (the RL step has
no micro-batching yet). One step from scratch with these defaults took 34 s on
2 busy CPU cores, compiles included.

Launch::

    python -m experiments.rl_sim --config=experiments/configs/rl_tiny.py:steps=20 \\
        --workdir runs/rl_tiny init_from=runs/sft_tiny

Arguments (`:k=v,...`): steps, tasks, group, lr, hsa, max_new_tokens, kl_coef,
ratio. Feeds no paper table on its own: the smoke-test scale of HSA-RL.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import sft_tiny
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {
    "steps": 10,
    "tasks": 1,
    "group": 4,
    "lr": 1e-5,
    "hsa": True,
    "max_new_tokens": 64,
    "kl_coef": 0.01,
    "ratio": "sequence",
}

REWARDS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection")


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = sft_tiny.get_config(f"steps={a.steps},lr={a.lr}")
    c.stage = "rl"
    del c.data
    c.optim.warmup_steps = 0
    c.train.save_every = max(a.steps, 1)
    c.rl = ml_collections.ConfigDict(
        {
            "reward_names": REWARDS,
            "advantage": "gdpo",  # any get_advantage name: grpo, dr_grpo, gdpo(...)
            # segment -> {reward: weight}: which rewards drive which segment
            "segment_rewards": {
                "tool": {"tool_rationality": 1.0, "skill_selection": 1.0},
                "reply": {"accuracy": 1.0, "effectiveness": 1.0},
            },
            "length_penalty": {"coef": 0.0, "tool_target": 128, "reply_target": 32},
            "ratio": a.ratio,  # "token" (PPO clip) or "sequence" (GSPO)
            "clip_eps": 0.2,
            "clip_eps_high": None,
            "aggregation": "token-mean",
            "kl_coef": a.kl_coef,
            "kl_estimator": "k3",
            "inner_steps": 1,
            "old_logp": "sampler",  # or "trainer": recomputed before the update
            "other_segment": 0,  # rejected replies / unreadable outputs: untrained
            "on_mismatch": "skip",  # or "splice" (rl_batch docstring)
            "max_len": 2048,  # most positions per episode (longer ones are cut)
        }
    )
    c.rollout = ml_collections.ConfigDict(
        {
            "harness": "taolive_v1",
            "split": "train",
            "tasks": a.tasks,  # N groups per step
            "group": a.group,  # G rollouts per task
            "n_cases": 64,  # the training task pool (cycled)
            "max_new_tokens": a.max_new_tokens,
            "temperature": 1.0,
            "hsa": a.hsa,
            "hsa_family": "tool_renames",
            "hsa_p": 0.5,  # share of rollouts under an augmented harness
            "fault_rate": 0.0,
            "enable_thinking": False,
        }
    )
    c.eval = ml_collections.ConfigDict(
        {
            "split": "dev",
            "n_cases": 8,
            "every": 5,
            "at_start": True,  # the step-0 evaluation (the curve's first point)
            "max_new_tokens": a.max_new_tokens,
        }
    )
    return c
