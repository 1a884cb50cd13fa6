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
        --keys eval/reward eval/accuracy eval/effectiveness \
        eval/tool_rationality eval/skill_selection \
        --out docs/rl_tiny_2layer_curve.svg \
        --summary docs/rl_tiny_2layer_curve.json --eval-dir /tmp/rlwork/rl_2l/eval

Measured with that recipe (docs/rl_tiny_2layer_curve.json): eval/reward 0.125
at step 0 and 0.125 after 4 steps on 32 cases, every case the same. The SFT
model writes no valid tool call, greedy or sampled (it loops on ``<think>`` and
XML tags), so all rollouts of a group earn the same rewards: both segments'
advantages were exactly 0 at every step and the update was the KL term alone.
This model does not learn the task at this SFT budget; RL needs a start that
sometimes succeeds.

A 4-layer start (hidden 128, head_dim 32, intermediate 384; sft_tiny with
steps=400, lr=2e-3: loss 0.26, token accuracy 0.95), then ``steps=12,tasks=2,
group=6,lr=5e-5,hsa=False,kl_coef=0.05`` with ``rollout.temperature=0.7``,
``rollout.n_cases=64``, ``eval.every=4`` (docs/rl_tiny_4layer_fold_curve.json):
eval/reward 0.402 -> 0.332 (step 4) -> 0.453 (steps 8 and 12); paired over the
32 cases +0.051 (stderr 0.054; 7 up, 9 down): not a real gain. Accuracy rose
0.34 -> 1.00 and effectiveness 0.06 -> 0.16 while skill selection fell 0.66 ->
0.16 and tool rationality 0.55 -> 0.50: the policy found one generic reply
("谢谢...屏幕上这款可以点开看～") that the rule judge scores accurate (it states
no wrong fact) for every intent. lr 3e-4 collapsed (all rewards 0 from step 6).
``rl.fold_missing_tool`` did not stop the skill-selection drop (0.27 vs 0.33 at
step 4 without/with it), nor did ``rl.shaping=gate_accuracy`` (0.402 -> 0.453,
the same generic reply: docs/rl_tiny_4layer_gate_curve.json).

From hat_tiny's HSA-SFT + OPD model (2 layers, its own 2,048 BPE; the
`make reproduce` step folders), ``steps=16,tasks=4,group=4,lr=5e-5,kl_coef=0.05,
eval_cases=32,max_new_tokens=96`` with ``rollout.temperature=0.7``,
``rollout.max_rows=16``, ``eval.every=4`` (docs/rl_hat_tiny_curve.json; 556 s of
steps and 171 s of evaluation, 2 cores): eval/reward 0.352 -> 0.375 (step 4) ->
0.398 (8, 12, 16); paired over the 32 dev cases +0.047 (stderr 0.021; 5 up, 0
down), all of it accuracy (+0.16) and effectiveness (+0.03). On T1's first 32
test cases the final model's greedy trajectories are identical to the start's
(`hat eval run --suite t1 --limit 32`, accuracy 6.2 % both): the SFT model
answers every message with the same calls and line, and 16 small steps move
only a few dev cases off it.

Cost (same machine, busy): 12 rollouts + the update 60-140 s a step since the
sampler prefills prompts with the fused kernel (before: 85-540 s, the cached
attention path ran ~9-18x slower than the training forward); a greedy
evaluation of 32 cases 0.5-4 min. Memory: the step computes logits only at the
trained positions and splits the batch into ``micro_batch`` episodes (XLA's
temp buffers for 8 episodes x 3,072 positions: 2.4 GiB); the sampler gets at
most ``rollout.max_rows`` conversations per call (16 rows of ~2,200 tokens in
one call were killed for memory at 17.5 GB).

Arguments (`:k=v,...`): steps, tasks, group, lr, hsa, max_new_tokens, kl_coef,
ratio, micro_batch, save_every, eval_cases. Feeds no paper table on its own:
the smoke-test scale of HSA-RL.
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
    c.optim.warmup_steps = 0
    # c.mtp_weight (sft_tiny's): with an MTP head the step adds its CE on the
    # sampled tokens (hat_jax.train.rl); without one it is unused
    c.train.save_every = max(a.save_every, 1)
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
            "inner_steps": 1,  # optimiser updates per batch of rollouts
            "old_logp": "sampler",  # or "trainer": recomputed before the update
            "other_segment": 0,  # rejected replies / unreadable outputs: untrained
            # an episode with no tool call takes tool + reply advantage on its reply
            # (it chose there not to call): without it RL learns to skip skills
            "fold_missing_tool": True,
            # training-reward shaping (experiments.rl_sim.SHAPINGS): "none",
            # "gate_accuracy" (accuracy counts only when effectiveness > 0) or
            # "gate_success" (accuracy counts only on a success, the headline)
            "shaping": "gate_success",
            "on_mismatch": "skip",  # or "splice" (rl_batch docstring)
            # most positions per episode (longer ones are cut): sim episodes are
            # 1,800-2,900 tokens
            "max_len": 3072,
            "micro_batch": a.micro_batch,  # episodes per micro-batch; 0 = all
        }
    )
    c.optim.total_steps = a.steps * c.rl.inner_steps  # the schedule counts updates
    c.rollout = ml_collections.ConfigDict(
        {
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
