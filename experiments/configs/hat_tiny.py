"""The paper's runs at tiny scale: our own model and tokenizer, on 2 CPU cores.

The world: a BPE tokenizer (vocab 2,048) trained on the world's text; a base
stage that trains a 2-layer Qwen3 (hidden 128, head_dim 32: vLLM's CPU backend
needs head_dim >= 32) from scratch on general data (IFEval-style instruction
following, generic tool use, chit-chat); then the paper's stages on simulator
trajectories. Runs (`sweep`), each ending with an evaluation (t1, t2, t3, edit,
ifeval; the first 6 cases of each):

    base             the base stage alone
    fixed_sft        base -> fixed-harness SFT (gold trajectories only)
    hsa_sft          base -> HSA-SFT (gold + one HSA variant per trajectory)
    fixed_sft_opd    fixed_sft -> OPD (teacher: the base model)
    hsa_sft_opd      hsa_sft -> OPD
    hat              hsa_sft_opd -> HSA-RL (HAT); then a standalone MTP head
                     fitted on it and the latency replay (`hat paper`'s
                     latency table)
    wo_<dimension>   HSA-SFT without the train families of one HSA dimension
                     (tools, skill_ids, skill_content, prompt, hooks)

Steps shared by runs (data, tokenizer, base, HSA-SFT, ...) are computed once
(`experiments.driver`). Launch (`make reproduce` runs the first line)::

    hat sweep --config=experiments/configs/hat_tiny.py --root runs/hat_tiny
    hat run --config=experiments/configs/hat_tiny.py --run hsa_sft --root runs/t
    hat sweep --config=experiments/configs/hat_tiny.py:scale=micro --root /tmp/m

Run time, measured with `hat sweep` on the 2-core CPU machine while other jobs
shared it (2026-11-30), per step, with the sizes below (the first of a kind
compiles; later ones load the XLA cache the driver keeps in ROOT/_jax_cache):

    world data 4 s, prompts 0.2 s, sim data (200 gold + 200 HSA) 8 s,
    tokenizer 4 s, each ablation's sim data 1.4-2 s
    base: 160 steps x 4 x 1,024 tokens (2,000 examples, 526k tokens)   256 s
    SFT: 40 steps x 1 x 3,072 (sim trajectories ~2,000 tokens)   148 s, then 51-88 s
         (now 48 x 4,096 at lr 3e-3, two trajectories a row: a probe from
         this base, 80 such steps on the HSA data, reached loss 1.07 / token
         accuracy 0.79 at 1,814 tokens/s, where 40 x 3,072 at lr 1e-3 left
         2.2-3.0; est. ~110 s each)
    OPD: 16 steps x 4 prompts x 48 new tokens                    29 s, then 10 s
    HSA-RL: 2 steps x 1 task x 4 rollouts                              68 s
    eval: 6 cases per suite (edit: 12), 96 new tokens       64 s, then 20-58 s
    MTP head (hat only): 30 steps x 1 x 4,096, trunk frozen            88 s
        (head accuracy on the token after next 0.47-0.51 at the end)
    replay (hat only): 16 messages (Poisson, 0.5/s, 2 rooms), 40 new
        tokens a call, concurrency 1, 4, 8; MTP off and the standalone
        head (1 draft a step)                                          182 s
        (measured 2026-11-30 on HAT from an earlier tiny sweep, load
        average 4-5: MTP off 30 s of it, the drafting sampler 152 s;
        40 messages x 96 tokens took 504 s, 20 x 48 took 236 s)

`make reproduce` on a fresh clone (2026-11-30, CI running beside it): 1,686 s in
all (venv + assets ~150 s; the sweep of 1 base, 7 SFT (48 x 4,096), 2 OPD, 1 RL,
the MTP head, the replay and 11 evaluations 1,529 s; `hat paper` a few s).
Results: T1/T2/T3 accuracy 0 in every run (SFT ends at loss 1.6-2.0: 48 steps
do not teach the tiny model the agent task); IFEval prompt-strict 0 for the base
and 33 % for every trained run, on 6 prompts.

``micro`` (a 512-token vocabulary, a 1-layer model, 2
steps per stage, 2 eval cases, a 4-message replay at concurrency 1 and 2
of 4 new tokens a call) takes seconds per step and exists for
the driver's test. HSA-RL draws its augmented harnesses from rl_tiny's one
``rollout.hsa_family`` (tool_renames), not from every train family.

Arguments (`:k=v,...`): scale (tiny|micro), run (a run name above).
Feeds the paper tables of `hat paper` (main results, IFEval drop and recovery,
the HSA ablation, harness-edit error reduction, reply latency) at tiny scale.
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


# est: seconds per step measured on the 2-core CPU machine (the ETA's basis).
SCALES = {
    "tiny": _scale(
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
    ),
    # base and sft share shapes: compiled once (the driver's XLA cache)
    "micro": _scale(
        vocab=512,
        model={"layers": 1, "hidden": 64, "heads": 2, "kv": 1, "head_dim": 32},
        world={"base_n": 16, "prompts_n": 8, "sim_n": 8, "copies": 1},
        base={"steps": 2, "batch_size": 1, "seq_len": 512, "lr": 1e-3},
        sft={"steps": 2, "batch_size": 1, "seq_len": 512, "lr": 1e-3},
        opd={"steps": 2, "batch_size": 2, "max_new_tokens": 4, "lr": 1e-4},
        rl={"steps": 1, "tasks": 1, "group": 2, "max_new_tokens": 4},
        ev={"limit": 2, "max_new_tokens": 4, "batch_size": 2},
        mtp={"steps": 2, "batch_size": 1, "seq_len": 512, "lr": 1e-3},
        replay={"trace": _trace(4, rate=1.0), "concurrency": [1, 2]}
        | {"max_new_tokens": 4},
        est={"data": 3, "tok": 1, "base": 10, "sft": 10, "opd": 15, "rl": 15}
        | {"eval": 20, "mtp": 10, "replay": 10},
    ),
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
