"""The paper's runs at tiny scale: our own model and tokenizer, on 2 CPU cores.

A 2,048-token BPE and a base stage trained from scratch on the world's general
data, then the paper's stages on simulator trajectories; every run ends with an
evaluation. Scales (``SCALES``; each is described where it is defined): ``tiny``
(default, `make reproduce`), ``compact``, ``compact_drill``, ``compact_plan``,
``compact_num``, ``compact_slip``, ``compact_first``, ``compact_plan_first``,
``compact_long`` (issue 16: measured, short of the target), ``compact_cycles``,
``compact_copy``, ``compact_copy3``, ``dense``, ``micro`` / ``micro_hybrid``
(the driver's tests).
Runs: see ``experiments.driver.hat_pipeline``.

Launch (`make reproduce`: the main runs; `make reproduce-ablation`: all)::

    hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny
    hat run --config=experiments/configs/hat_tiny.py:scale=compact --run fixed_sft \
        --root runs/pilot

Time: `tiny` ~20 min for `make reproduce` on 2 cores; ``est`` below is the progress
display's per-step basis. Feeds every `hat paper` table at tiny scale; measured
results go to docs/results/hat_tiny.md (`hat paper --results`), pilots to
docs/results/hat_tiny_pilot.md. Arguments (`:k=v,...`): scale, run.
"""

from __future__ import annotations

import ml_collections

from experiments.driver import hat_pipeline
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {"scale": "tiny", "run": "hat"}


def _scale(
    vocab, model, world, base, sft, opd, rl, ev, mtp, replay, est, **more
) -> dict:
    """One scale's blocks. ``more``: ``drill`` (a look-up phase before the base
    stage: its sft_tiny argument dict), ``sft_extra`` (overrides of both SFT
    runs), ``digits`` (the tokenizer's number cutting)."""
    truncate = ("data.overlong=truncate",)  # keep the start of the odd long one
    out = {
        "base_model": None,  # trained here from scratch
        "vocab": vocab,
        "model": model,
        "world": world,
        "base": {"config": "sft_tiny.py", "arg": base, "extra": truncate},
        "sft": {
            "config": "sft_tiny.py",
            "arg": sft,
            "extra": truncate + tuple(more.pop("sft_extra", ())),
        },
        "opd": {"config": "opd_tiny.py", "arg": opd},
        "rl": {"config": "rl_tiny.py", "arg": rl | {"eval_cases": 0}},
        "eval": ev,
        "mtp": {"config": "sft_tiny.py", "arg": mtp, "extra": truncate},
        "replay": replay,
        "est": est,
    }
    drill = more.pop("drill", None)
    if drill is not None:
        out["drill"] = {"config": "sft_tiny.py", "arg": drill, "extra": truncate}
    if "digits" in more:
        out["digits"] = more.pop("digits")
    if more:
        raise TypeError(f"unknown scale fields {sorted(more)}")
    return out


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

# Blocks the compact scales share. The tiny world sized to learn (issue 16): the
# harness rendered compact with compact tool results (about half the tokens of a
# trajectory), thousands of gold trajectories, a dense 4-layer model with a
# co-trained MTP head, evaluation sets large enough to separate runs.
WIDTH_128 = {"layers": 4, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32}
DENSE_MTP = WIDTH_128 | {"extra": {"mtp_num_hidden_layers": 1}}
WORLD = {"base_n": 2000, "prompts_n": 400, "sim_n": 2000, "copies": 1}
WORLD |= {"prompt_format": "compact", "compact_results": True}
# + the look-up drill before the base stage (experiments.world.lookup: where a
# from-scratch model learns to copy an argument), then the general mix with
# look-ups (docs/results/hat_tiny_pilot.md).
WORLD_DRILL = WORLD | {"drill_n": 20000, "base_mix": "lookup"}
DRILL = {"steps": 700, "batch_size": 8, "seq_len": 256, "lr": 3e-3}
BASE = {"steps": 128, "batch_size": 4, "seq_len": 1024, "lr": 3e-3}
EVAL_LIMITS = {"t1": 300, "t2": 300, "t3": 200, "edit": 150, "ifeval": 541}
EVAL_LIMITS |= {"ifeval_proxy": 300}
# Tokens a model call may write (evaluation, RL rollouts, replay): above the
# longest gold assistant message of the compact worlds (up to ~170 tokens of
# the world tokenizer with skills and plans first; 96 cut 5-32 % of the golds'
# first messages: docs/results/hat_tiny_pilot.md, fifteenth pilot).
CALL_BUDGET = 192


def _sft(steps: int) -> dict:
    return {"steps": steps, "batch_size": 3, "seq_len": 2048, "lr": 3e-3}


# Both SFT runs also train on 4 copies of each trajectory's start without its
# system prompt (the viewer message -> the first assistant message); without
# them the policy writes the majority intent for every message (the pilot
# file's fourth pilot); and refuse golds whose assistant messages the call
# budget would cut.
SFT_EXTRA = ("data.head_copies=4", f"data.call_budget={CALL_BUDGET}")
LATER = {  # the compact scales' stages after SFT, their evaluation and replay
    "opd": {"steps": 48, "batch_size": 8, "max_new_tokens": 64, "lr": 1e-4},
    "rl": {"steps": 8, "tasks": 4, "group": 4, "max_new_tokens": CALL_BUDGET},
    "ev": {"limit": EVAL_LIMITS, "max_new_tokens": CALL_BUDGET, "batch_size": 64},
    "mtp": {"steps": 20, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
    # 5 replays of each level: one is one draw (serving.repeats)
    "replay": {"trace": _trace(48, rate=0.5), "concurrency": [1, 4, 8]}
    | {"max_new_tokens": CALL_BUDGET, "repeats": 5},
}
# est: seconds per step measured on the 2-core CPU machine (the ETA's basis).
EST = {"data": 15, "tok": 5, "base": 170, "sft": 700, "opd": 60, "rl": 300}
EST |= {"eval": 2400, "mtp": 60, "replay": 1500}


def _compact(world: dict, sft_steps: int, est_sft: int, drill=700, **more) -> dict:
    """A compact scale: the 4 x 128 dense model on `world` (with WORLD_DRILL, a
    look-up drill of `drill` steps first), SFT for `sft_steps`, the shared
    later stages."""
    est = EST | {"sft": est_sft}
    if "drill_n" in world:
        more = {"drill": DRILL | {"steps": drill}} | more
        est |= {"drill": round(330 * drill / 700)}
    return _scale(
        vocab=more.pop("vocab", 2048),
        model=DENSE_MTP,
        world=world,
        base=BASE,
        sft=_sft(sft_steps),
        est=est,
        sft_extra=SFT_EXTRA + tuple(more.pop("sft_extra", ())),
        **LATER,
        **more,
    )


# `dense`: the 2-layer Qwen3 world of before.
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
# The compact scales, each one explicit (the pilot file,
# docs/results/hat_tiny_pilot.md, has what each measured):
#   compact            300 SFT steps on the compact world
#   compact_drill      the look-up drill first; 1,500 SFT steps (ninth pilot)
#   compact_plan       golds that name each reply's plan before it (``sim.oracle.
#                      reply_plan``; eleventh pilot)
#   compact_num        compact_plan with numbers cut in groups of up to 3 digits,
#                      3,072 entries (measured worse; twelfth pilot)
#   compact_slip       compact_plan with 30 % recovery golds (``sim.oracle_slips``:
#                      a wrong first reply, rejected by factual_risk, then the gold;
#                      thirteenth pilot)
#   compact_first      compact_plan whose golds load their skills before the tool
#                      calls (``skills_first``; fourteenth pilot)
#   compact_plan_first compact_first naming the plan in the turn's first reasoning
#                      (``plan_first``; fifteenth pilot)
#   compact_long       compact_first with 3,000 SFT steps in one cosine (issue 16's
#                      learnability run: sixteenth run)
#   compact_cycles     compact_long's 3,000 steps as two cosine cycles, 3e-3 then
#                      1e-3 (`optim.cycles`, the fifteenth pilot's F4 schedule)
#   compact_copy       compact_cycles with a 2,100-step drill, long enough for the
#                      copy to form in it (seventeenth run)
#   compact_copy3      compact_copy with a third SFT cycle (4,500 steps, peaks 3e-3,
#                      1e-3, 3.3e-4): its first 3,000 steps are compact_copy's
#                      (twenty-first run)
PLAN = WORLD_DRILL | {"reply_plan": True}
FIRST = PLAN | {"skills_first": True}
CYCLES = ("optim.cycles=2", "optim.cycle_decay=0.3333333333333333")
COMPACT = _compact(WORLD, 300, 700)
COMPACT_DRILL = _compact(WORLD_DRILL, 1500, 3000)
COMPACT_PLAN = _compact(PLAN, 1500, 3000)
COMPACT_NUM = _compact(PLAN, 1500, 3000, vocab=3072, digits="groups")
COMPACT_SLIP = _compact(PLAN | {"slips": 0.3}, 1500, 3000)
COMPACT_FIRST = _compact(FIRST, 1500, 3000)
COMPACT_PLAN_FIRST = _compact(FIRST | {"plan_first": True}, 1500, 3000)
COMPACT_LONG = _compact(FIRST, 3000, 6000)
COMPACT_CYCLES = _compact(FIRST, 3000, 6000, sft_extra=CYCLES)
COMPACT_COPY = _compact(FIRST, 3000, 6000, drill=2100, sft_extra=CYCLES)
CYCLES3 = ("optim.cycles=3", "optim.cycle_decay=0.3333333333333333")
COMPACT_COPY3 = _compact(FIRST, 4500, 9000, drill=2100, sft_extra=CYCLES3)
# `make reproduce`: the paper's architecture in miniature (HYBRID). Its step
# costs ~1.7 s at 2 x 2,560 against the dense model's 0.8 s (its co-trained MTP
# layer is a second full-attention layer), so it takes fewer steps: base 128,
# SFT 100 (markdown prompt, full tool results, 200 golds, 6 eval cases: `make
# reproduce` well within its 60-minute budget).
TINY = _scale(
    vocab=2048,
    model=WIDTH_128 | {"extra": HYBRID},
    world={"base_n": 2000, "prompts_n": 200, "sim_n": 200, "copies": 1},
    base=BASE,
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


def _micro(model_extra: dict | None, layers: int) -> dict:
    # base and sft share shapes: compiled once (the driver's XLA cache)
    model = {"layers": layers, "hidden": 64, "heads": 2, "kv": 1, "head_dim": 32}
    return _scale(
        vocab=512,
        model=model | ({"extra": model_extra} if model_extra else {}),
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
    "compact_copy": COMPACT_COPY,
    "compact_copy3": COMPACT_COPY3,
    "dense": DENSE,
    "micro": _micro(None, 1),  # the driver's tests
    "micro_hybrid": _micro(MICRO_HYBRID, 2),
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
