"""Stage 3 (HSA-RL) on a tiny Qwen3 model in the simulator, on CPU.

The model is sft_tiny's (2-layer Qwen3, hidden 64, SmolLM2's tokenizer); start it
from an SFT run with ``init_from`` (from scratch it earns only the reward of
making no tool call: this config without ``init_from`` only shows the loop
runs). Each step takes ``tasks`` simulator cases and ``group`` rollouts each;
with ``hsa`` on, each rollout gets a harness sampled from an HSA family with
probability ``hsa_p``, so a group mixes harnesses. Evaluation: greedy, on
``eval_cases`` held-out dev-split cases under the base harness, at step 0 and
every ``eval.every`` steps and at the end.

Recipe (2 shared CPU cores; the times measured there)::

    hat sim generate --harness taolive_v1 --n 1000 --seed 0 --split train \
        --out /tmp/rlwork/sft_base.jsonl                              # 5 s
    hat train sft --config=experiments/configs/sft_tiny.py:steps=500,lr=3e-3,\
data=/tmp/rlwork/sft_base.jsonl --workdir /tmp/rlwork/sft_b            # ~26 min
    hat train rl --config=experiments/configs/rl_tiny.py:steps=4,tasks=2,\
group=8,lr=3e-4 --workdir /tmp/rlwork/rl_2l \
        --config.init_from=/tmp/rlwork/sft_b                         # ~14 min
    python -m experiments.plot_curve /tmp/rlwork/rl_2l/metrics.jsonl \
        --keys eval/reward eval/success --out /tmp/rlwork/curve.svg

A step costs 60-140 s (12 rollouts + the update, 2 cores). Measured runs and their
analysis: docs/results/rl_tiny_notes.md and docs/rl_*_curve.json.

Arguments (`:k=v,...`): steps, tasks, group, lr, hsa, max_new_tokens, kl_coef,
ratio, micro_batch, save_every, eval_cases. Feeds no paper table on its own:
the smoke-test scale of HSA-RL (hat_tiny's RL stage uses it).
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
    "max_new_tokens": 160,  # SFT assistant messages: p99 130, max 172 tokens
    "kl_coef": 0.01,
    "ratio": "sequence",
    "micro_batch": 8,
    "save_every": 10,
    "eval_cases": 32,
}

REWARDS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection")


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = sft_tiny.get_config(f"steps={a.steps},lr={a.lr}")
    c.stage = "rl"
    del c.data
    del c.train.eval_every, c.train.eval_batches  # RL evaluates with eval.*
    # sft_tiny's tracking group, and: the rollouts per step whose reply text goes
    # to WORKDIR/rollouts.jsonl (every rollout's rewards and advantages do) and
    # TensorBoard's text tab
    c.tracking.rollout_samples = 4
    c.optim.warmup_steps = 0
    # c.mtp_weight (sft_tiny's): with an MTP head the step adds its CE on the
    # sampled tokens (hat_jax.train.rl); without one it is unused
    c.train.save_every = max(a.save_every, 1)
    inner = ml_collections.FieldReference(1)
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
            "inner_steps": inner,  # optimiser updates per batch of rollouts
            "old_logp": "sampler",  # or "trainer": recomputed before the update
            "other_segment": 0,  # rejected replies / unreadable outputs: untrained
            # an episode with no tool call takes tool + reply advantage on its reply
            # (it chose there not to call): without it RL learns to skip skills
            "fold_missing_tool": True,
            # training-reward shaping (experiments.sim_task.SHAPINGS): "none",
            # "gate_accuracy" (accuracy counts only when effectiveness > 0) or
            # "gate_success" (accuracy counts only on a success, the headline)
            "shaping": "gate_success",
            # a sampled run that does not re-render to the same ids: "splice_last"
            # trains the last one (exact), "skip" none, "splice" all (rl_batch)
            "on_mismatch": "splice_last",
            # most positions per episode (longer ones are cut): sim episodes are
            # 1,800-2,900 tokens
            "max_len": 3072,
            "micro_batch": a.micro_batch,  # episodes per micro-batch; 0 = all
        }
    )
    # the schedule counts updates; it follows --config.train.steps and rl.inner_steps
    c.optim.total_steps = c.train.get_ref("steps") * inner
    c.rollout = ml_collections.ConfigDict(
        {
            # the agent task (hat_jax.train.agent_task; `hat.tasks` entry points)
            "task": "sim",
            "harness": "taolive_v1",
            "prompt_format": "",  # "" = the harness's own; "compact" (tiny world)
            "compact_results": False,  # tools return only the fields a reply needs
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
            # None: the model opens its own <think> block, as in the SFT data
            # (the oracle's messages all carry reasoning)
            "enable_thinking": None,
            # conversations per sampler call (0 = all): bounds the sampler's
            # memory, which grows with rows x prompt length squared
            "max_rows": 4,
        }
    )
    c.eval = ml_collections.ConfigDict(
        {
            "split": "dev",
            "n_cases": a.eval_cases,  # 0: no evaluation
            "every": 5,
            "at_start": True,  # the step-0 evaluation (the curve's first point)
            "max_new_tokens": a.max_new_tokens,
        }
    )
    return c
