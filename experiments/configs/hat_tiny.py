"""The paper's runs at tiny scale: our own model and tokenizer, on 2 CPU cores.

A 2,048-token BPE and a base stage trained from scratch on the world's general
data, then the paper's stages on simulator trajectories; every run ends with an
evaluation. Scales (``SCALES``; each is described where it is defined): ``tiny``
(default, `make reproduce`), ``compact``, ``compact_drill``, ``compact_plan``,
``compact_num``, ``compact_slip``, ``compact_first``, ``compact_plan_first``,
``compact_long`` (issue 16: measured, short of the target), ``compact_cycles``,
``dense``, ``micro`` / ``micro_hybrid`` (the driver's tests). Runs: see
``experiments.driver.hat_pipeline``.

Launch (`make reproduce`: the main runs; `make reproduce-ablation`: all)::

    hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny
    hat run --config=experiments/configs/hat_tiny.py:scale=compact --run fixed_sft \
        --root runs/pilot

Time: `tiny` ~40 min for `make reproduce`; ``est`` below is the progress
display's per-step basis. Feeds every `hat paper` table at tiny scale; measured
results go to docs/results/hat_tiny.md (`hat paper --results`), pilots to
docs/results/hat_tiny_pilot.md. Arguments (`:k=v,...`): scale, run.
"""

from __future__ import annotations

import ml_collections

from experiments.driver import hat_pipeline
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {"scale": "tiny", "run": "hat"}


def _scale(vocab, model, world, base, sft, opd, rl, ev, mtp, replay, est) -> dict:
    truncate = ("data.overlong=truncate",)  # keep the start of the odd long one
    return {
        "base_model": None,  # trained here from scratch
        "vocab": vocab,
        "model": model,
        "world": world,
        "base": {"config": "sft_tiny.py", "arg": base, "extra": truncate},
        "sft": {"config": "sft_tiny.py", "arg": sft, "extra": truncate},
        "opd": {"config": "opd_tiny.py", "arg": opd},
        "rl": {"config": "rl_tiny.py", "arg": rl | {"eval_cases": 0}},
        "eval": ev,
        "mtp": {"config": "sft_tiny.py", "arg": mtp, "extra": truncate},
        "replay": replay,
        "est": est,
    }


def _trace(n: int, rate: float) -> dict:
    """A replay trace (`serving.trace.make_trace`): Poisson arrivals in 2 rooms."""
    return dict(n_messages=n, rooms=2, arrivals="poisson", rate=rate, seed=0)


# The paper's architecture in miniature (Qwen3.5 hybrid MoE with an MTP head):
# 3 Gated DeltaNet layers to 1 gated-attention layer, 4 routed experts (top 2)
# plus a shared expert, one MTP layer co-trained from the base stage on (the
# sft config's mtp_weight). DeltaNet head dims 64 and attention head_dim 32 fit
# vLLM's CPU kernels.
HYBRID = {
    "model_type": "qwen3_5_moe_text",
    "layer_types": ("linear_attention",) * 3 + ("full_attention",),
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 64,
    "linear_value_head_dim": 64,
    "linear_num_key_heads": 1,
    "linear_num_value_heads": 2,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 128,
    "shared_expert_intermediate_size": 128,
    "partial_rotary_factor": 0.25,
    "mtp_num_hidden_layers": 1,
}
MICRO_HYBRID = HYBRID | {
    "layer_types": ("linear_attention", "full_attention"),
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
}

# est: seconds per step measured on the 2-core CPU machine (the ETA's basis).
# `dense`: the 2-layer Qwen3 world of before (the recipe its times above are for).
DENSE = _scale(
    vocab=2048,
    model={"layers": 2, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32},
    world={"base_n": 2000, "prompts_n": 200, "sim_n": 200, "copies": 1},
    base={"steps": 160, "batch_size": 4, "seq_len": 1024, "lr": 3e-3},
    sft={"steps": 160, "batch_size": 2, "seq_len": 2560, "lr": 3e-3},
    opd={"steps": 16, "batch_size": 4, "max_new_tokens": 48, "lr": 1e-4},
    rl={"steps": 2, "tasks": 1, "group": 4, "max_new_tokens": 96},
    ev={"limit": 6, "max_new_tokens": 96, "batch_size": 6},
    mtp={"steps": 30, "batch_size": 2, "seq_len": 2560, "lr": 3e-3},
    replay={"trace": _trace(16, rate=0.5), "concurrency": [1, 4, 8]}
    | {"max_new_tokens": 40},
    est={"data": 4, "tok": 4, "base": 150, "sft": 140, "opd": 20, "rl": 50}
    | {"eval": 45, "mtp": 30, "replay": 150},
)
# The tiny world sized to learn (issue 16): the harness rendered compact and
# compact tool results (about half the tokens of a trajectory), thousands of gold
# trajectories, a dense 4-layer model with a co-trained MTP head, evaluation
# sets large enough to separate runs.
EVAL_LIMITS = {"t1": 300, "t2": 300, "t3": 200, "edit": 150, "ifeval": 541}
EVAL_LIMITS |= {"ifeval_proxy": 300}
# Tokens a model call may write (evaluation, RL rollouts, replay): above the
# longest gold assistant message of the compact worlds (up to ~170 tokens of
# the world tokenizer with skills and plans first; 96 cut 5-32 % of the golds'
# first messages: docs/results/hat_tiny_pilot.md, fifteenth pilot).
CALL_BUDGET = 192
COMPACT = _scale(
    vocab=2048,
    model={"layers": 4, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32}
    | {"extra": {"mtp_num_hidden_layers": 1}},
    world={"base_n": 2000, "prompts_n": 400, "sim_n": 2000, "copies": 1}
    | {"prompt_format": "compact", "compact_results": True},
    base={"steps": 128, "batch_size": 4, "seq_len": 1024, "lr": 3e-3},
    sft={"steps": 300, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
    opd={"steps": 48, "batch_size": 8, "max_new_tokens": 64, "lr": 1e-4},
    rl={"steps": 8, "tasks": 4, "group": 4, "max_new_tokens": CALL_BUDGET},
    ev={"limit": EVAL_LIMITS, "max_new_tokens": CALL_BUDGET, "batch_size": 64},
    mtp={"steps": 20, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
    replay={"trace": _trace(48, rate=0.5), "concurrency": [1, 4, 8]}
    | {"max_new_tokens": CALL_BUDGET},
    est={"data": 15, "tok": 5, "base": 170, "sft": 700, "opd": 60, "rl": 300}
    | {"eval": 2400, "mtp": 60, "replay": 150},
)
# Both SFT runs of compact also train on 4 copies of each trajectory's start
# without its system prompt (the viewer message -> the first assistant message:
# `data.head_copies`); without them the policy writes the majority intent for
# every message (docs/results/hat_tiny_pilot.md, fourth pilot).
COMPACT["sft"] = COMPACT["sft"] | {
    "extra": (*COMPACT["sft"]["extra"], "data.head_copies=4"),
}
# ... and refuse golds whose assistant messages the call budget would cut.
COMPACT["sft"]["extra"] += (f"data.call_budget={CALL_BUDGET}",)
# compact, its base stage first trained on short look-ups (experiments.world.
# lookup, drill form: where a from-scratch model learns to copy an argument),
# then on the general mix with look-ups (docs/results/hat_tiny_pilot.md).
COMPACT_DRILL = COMPACT | {
    "drill": {
        "config": "sft_tiny.py",
        "arg": {"steps": 700, "batch_size": 8, "seq_len": 256, "lr": 3e-3},
        "extra": ("data.overlong=truncate",),
    },
    "world": COMPACT["world"] | {"drill_n": 20000, "base_mix": "lookup"},
    # 1,500 SFT steps: the look-up keeps improving past 700 from this base
    # (docs/results/hat_tiny_pilot.md, ninth pilot)
    "sft": COMPACT["sft"] | {"arg": COMPACT["sft"]["arg"] | {"steps": 1500}},
    "est": COMPACT["est"] | {"drill": 330, "sft": 3000},
}
# compact_drill whose golds name each reply's plan before it (``sim.oracle.
# reply_plan``, the world key ``reply_plan``; docs/results/hat_tiny_pilot.md,
# eleventh pilot).
COMPACT_PLAN = COMPACT_DRILL | {"world": COMPACT_DRILL["world"] | {"reply_plan": True}}
# compact_plan with numbers cut in groups of up to 3 digits, each group one
# token (``experiments.world.tokenizer.DIGITS``), 3,072 entries (~1,950 left
# for text, as compact_plan's 2,048). Measured worse for the 4 x 128 model
# (docs/results/hat_tiny_pilot.md, twelfth pilot).
COMPACT_NUM = COMPACT_PLAN | {"vocab": 3072, "digits": "groups"}
# compact_plan whose golds include slips (``sim.oracle_slips``): in 30 % of
# the cases the first reply quotes wrong numbers, the factual_risk hook rejects
# it and the gold reply follows; SFT trains the recovery, never the slip.
COMPACT_SLIP = COMPACT_PLAN | {"world": COMPACT_PLAN["world"] | {"slips": 0.3}}
# compact_plan whose golds load their skills before the tool calls
# (``sim.oracle.OraclePolicy(skills_first=)``, the world key ``skills_first``):
# the results sit right before the reply instead of ~400 tokens of skill text
# back (docs/results/hat_tiny_pilot.md, fourteenth pilot).
COMPACT_FIRST = COMPACT_PLAN | {"world": COMPACT_PLAN["world"] | {"skills_first": True}}
# compact_first whose golds name the reply plan in the turn's first reasoning
# too (the world key ``plan_first``), next to the viewer's message.
COMPACT_PLAN_FIRST = COMPACT_FIRST | {
    "world": COMPACT_FIRST["world"] | {"plan_first": True}
}
# The learnability scale (issue 16), written out in full: compact_first (the
# look-up drill, then the general mix with look-ups; golds that name the reply
# plan and load their skills before the tool calls) with 3,000 SFT steps in one
# schedule: the look-up and the intent kept improving past 1,500
# (docs/results/hat_tiny_pilot.md, fifteenth pilot).
COMPACT_LONG = _scale(
    vocab=2048,
    model={"layers": 4, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32}
    | {"extra": {"mtp_num_hidden_layers": 1}},
    world={"base_n": 2000, "prompts_n": 400, "sim_n": 2000, "copies": 1}
    | {"prompt_format": "compact", "compact_results": True}
    | {"drill_n": 20000, "base_mix": "lookup"}
    | {"reply_plan": True, "skills_first": True},
    base={"steps": 128, "batch_size": 4, "seq_len": 1024, "lr": 3e-3},
    sft={"steps": 3000, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
    opd={"steps": 48, "batch_size": 8, "max_new_tokens": 64, "lr": 1e-4},
    rl={"steps": 8, "tasks": 4, "group": 4, "max_new_tokens": CALL_BUDGET},
    ev={"limit": EVAL_LIMITS, "max_new_tokens": CALL_BUDGET, "batch_size": 64},
    mtp={"steps": 20, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
    replay={"trace": _trace(48, rate=0.5), "concurrency": [1, 4, 8]}
    | {"max_new_tokens": CALL_BUDGET},
    est={"data": 15, "tok": 5, "base": 170, "sft": 6000, "opd": 60, "rl": 300}
    | {"eval": 2400, "mtp": 60, "replay": 150, "drill": 330},
)
COMPACT_LONG["sft"]["extra"] += (
    "data.head_copies=4",
    f"data.call_budget={CALL_BUDGET}",
)
COMPACT_LONG["drill"] = {
    "config": "sft_tiny.py",
    "arg": {"steps": 700, "batch_size": 8, "seq_len": 256, "lr": 3e-3},
    "extra": ("data.overlong=truncate",),
}
# compact_long's 3,000 SFT steps as two cosine cycles (a warm restart at 1,500:
# 3e-3 then 1e-3, `optim.cycles`), the schedule of the fifteenth pilot's F4.
COMPACT_CYCLES = COMPACT_LONG | {
    "sft": COMPACT_LONG["sft"]
    | {"extra": (*COMPACT_LONG["sft"]["extra"], "optim.cycles=2")}
}
COMPACT_CYCLES["sft"]["extra"] += ("optim.cycle_decay=0.3333333333333333",)
# `make reproduce`: the paper's architecture in miniature (HYBRID). Its step
# costs ~1.7 s at 2 x 2,560 against the dense model's 0.8 s (its co-trained MTP
# layer is a second full-attention layer), so it takes fewer steps: base 128,
# SFT 100 (markdown prompt, full tool results, 200 golds, 6 eval cases: `make
# reproduce` within 45 minutes).
TINY = _scale(
    vocab=2048,
    model={"layers": 4, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32}
    | {"extra": HYBRID},
    world={"base_n": 2000, "prompts_n": 200, "sim_n": 200, "copies": 1},
    base={"steps": 128, "batch_size": 4, "seq_len": 1024, "lr": 3e-3},
    sft={"steps": 100, "batch_size": 2, "seq_len": 2560, "lr": 3e-3},
    opd={"steps": 16, "batch_size": 4, "max_new_tokens": 48, "lr": 1e-4},
    rl={"steps": 2, "tasks": 1, "group": 4, "max_new_tokens": 96},
    ev={"limit": 6, "max_new_tokens": 96, "batch_size": 6},
    mtp={"steps": 20, "batch_size": 2, "seq_len": 2560, "lr": 3e-3},
    replay={"trace": _trace(16, rate=0.5), "concurrency": [1, 4, 8]}
    | {"max_new_tokens": 40},
    est={"data": 4, "tok": 4, "base": 220, "sft": 180, "opd": 20, "rl": 50}
    | {"eval": 45, "mtp": 40, "replay": 200},
)
SCALES = {
    "tiny": TINY,
    "compact": COMPACT,
    "compact_drill": COMPACT_DRILL,
    "compact_plan": COMPACT_PLAN,
    "compact_num": COMPACT_NUM,
    "compact_slip": COMPACT_SLIP,
    "compact_first": COMPACT_FIRST,
    "compact_plan_first": COMPACT_PLAN_FIRST,
    "compact_long": COMPACT_LONG,
    "compact_cycles": COMPACT_CYCLES,
    "dense": DENSE,
    # base and sft share shapes: compiled once (the driver's XLA cache)
    "micro": _scale(
        vocab=512,
        model={"layers": 1, "hidden": 64, "heads": 2, "kv": 1, "head_dim": 32},
        world={"base_n": 16, "prompts_n": 8, "sim_n": 8, "copies": 1},
        # 4,096: the markdown prompt is ~2,200 tokens of this 512-token BPE (at
        # 512 every trajectory was cut before its first trained token)
        base={"steps": 2, "batch_size": 1, "seq_len": 4096, "lr": 1e-3},
        sft={"steps": 2, "batch_size": 1, "seq_len": 4096, "lr": 1e-3},
        opd={"steps": 2, "batch_size": 2, "max_new_tokens": 4, "lr": 1e-4},
        rl={"steps": 1, "tasks": 1, "group": 2, "max_new_tokens": 4},
        ev={"limit": 2, "max_new_tokens": 4, "batch_size": 2},
        mtp={"steps": 2, "batch_size": 1, "seq_len": 4096, "lr": 1e-3},
        replay={"trace": _trace(4, rate=1.0), "concurrency": [1, 2]}
        | {"max_new_tokens": 4},
        est={"data": 3, "tok": 1, "base": 10, "sft": 10, "opd": 15, "rl": 15}
        | {"eval": 20, "mtp": 10, "replay": 10},
    ),
}
SCALES["micro_hybrid"] = SCALES["micro"] | {
    "model": {"layers": 2, "hidden": 64, "heads": 2, "kv": 1, "head_dim": 32}
    | {"extra": MICRO_HYBRID},
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    if a.scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {a.scale!r}")
    return hat_pipeline.make_config(a.run, a.scale, SCALES[a.scale])


def sweep(add, arg: str | None = None) -> None:
    """Every run of the paper's tables (the scale comes with ``arg``)."""
    del arg
    hat_pipeline.sweep(add)
