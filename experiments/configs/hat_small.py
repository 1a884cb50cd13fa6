"""The paper's runs on SmolLM2-135M-Instruct (real weights): a GPU or a CPU budget.

The same runs as hat_tiny (`experiments.driver.hat_pipeline.RUNS`: base,
fixed-harness / HSA-SFT, + OPD, HAT, the five HSA-dimension ablations), with
SmolLM2-135M-Instruct (`init_from=smollm2-135m-instruct`, its own tokenizer)
as the base instead of a model trained here: the `base` run evaluates it as it
is, and it is OPD's teacher. Full fine-tuning by default; `lora=16` trains
rank-16 LoRA adapters in SFT and OPD instead (RL trains all parameters).

Launch::

    make reproduce-small   # = the cpu budget below, then its tables
    hat sweep --config=experiments/configs/hat_small.py:budget=cpu \\
        --root runs/hat_small_cpu --only base,fixed_sft,hsa_sft
    hat sweep --config=experiments/configs/hat_small.py --root runs/hat_small
    hat run --config=experiments/configs/hat_small.py:lora=16 --run hsa_sft \\
        --root runs/hat_small_lora

Budgets (``BUDGETS``). ``cpu``: the pipeline end to end on 2 CPU cores within
an hour (base, fixed-harness SFT, HSA-SFT; 8 SFT steps of 1 x 3,072 tokens
with remat; 4 cases each of T1, T2, IFEval and the IFEval proxy at 160 new
tokens). Measured on the 2-core Intel Xeon machine (2026-12-05, nothing else
running; docs/results/hat_small_cpu.md has the tables and the step times):
base evaluation 357 s, world data 13 s, fixed-harness SFT 881 s (8 steps,
with loading, compiling and checkpoints), its evaluation 670 s: 32 min. The
HSA-SFT run's SFT (the same shapes) was killed for memory in that one-process
sweep, hence ``make reproduce-small``'s process per run; at the fixed run's
times the three runs take ~58 min.
SFT runs at ~40 tokens/s with remat; a step peaks at ~21 GB resident
(~23 GB without remat; before the driver freed each step's memory, a sweep's
SFT after its base evaluation ran out of 24 GB). The tables of so short a run
only show that every stage runs on real weights, not what the stages do.
``gpu`` (default): 500 SFT steps, 100 OPD steps, 20 RL steps, 100 cases of
every suite at 256 new tokens; meant for one GPU, not measured yet (no GPU was
lent to this project's sessions while it was written).

Arguments (`:k=v,...`): run, budget (gpu | cpu), lora (0 = full), sft_steps
and eval_limit (0 = the budget's). Feeds `hat paper`'s tables at small scale
(``small``; ``small_cpu`` for the cpu budget).
"""

from __future__ import annotations

import ml_collections

from experiments.driver import hat_pipeline
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {"run": "hat", "lora": 0, "budget": "gpu", "sft_steps": 0}
DEFAULTS |= {"eval_limit": 0}
BASE = "smollm2-135m-instruct"
# What each budget runs (sft_steps / eval_limit 0 = the budget's own).
BUDGETS = {
    # the paper's stages at a size one GPU runs in minutes
    "gpu": {"sft_steps": 500, "eval_limit": 100, "suites": hat_pipeline.SUITES}
    | {"max_new_tokens": 256, "opd_steps": 100, "rl_steps": 20},
    # the pipeline end to end on 2 CPU cores within an hour: few steps, few
    # cases, the suites whose turns are cheapest (tables are not decisive)
    "cpu": {"sft_steps": 8, "eval_limit": 4, "suites": "t1,t2,ifeval,ifeval_proxy"}
    | {"max_new_tokens": 160, "opd_steps": 4, "rl_steps": 1}
    # without remat one SFT step of 1 x 3,072 tokens peaks at ~23 GB of the
    # machine's 24 (measured); recomputing each layer in the backward fits it
    | {"sft_extra": ("remat=True",)},
}
# Expected seconds per step kind (the progress display's ETA). cpu: measured on
# the 2-core machine (docs/results/hat_small_cpu.md); gpu: not measured yet.
EST = {
    "gpu": {"data": 60, "tok": 0, "base": 0, "sft_step": 1.0, "opd": 300}
    | {"rl": 600, "eval": 900},
    "cpu": {"data": 15, "tok": 0, "base": 0, "sft_step": 60.0, "opd": 900}
    | {"rl": 900, "eval": 600},
}


def scale(a) -> dict:
    if a.budget not in BUDGETS:
        raise ValueError(f"budget must be one of {sorted(BUDGETS)}, got {a.budget!r}")
    b, e = BUDGETS[a.budget], EST[a.budget]
    lora = (f"lora.rank={a.lora}",) if a.lora else ()
    n = a.sft_steps or b["sft_steps"]
    m = b["opd_steps"]
    return {
        "base_model": BASE,
        "tokenizer": BASE,
        "world": {"prompts_n": 2000, "sim_n": 2000, "copies": 1},
        "sft": {
            "config": "sft_tiny.py",
            "arg": {"steps": n, "batch_size": 1, "seq_len": 3072, "lr": 1e-4},
            "extra": lora + tuple(b.get("sft_extra", ())),
        },
        "opd": {
            "config": "opd_tiny.py",
            "arg": {"steps": m, "batch_size": 8, "max_new_tokens": 128} | {"lr": 1e-5},
            "extra": lora,
        },
        "rl": {
            "config": "rl_tiny.py",
            "arg": {"steps": b["rl_steps"], "tasks": 2, "group": 8, "eval_cases": 0},
        },
        "eval": {"limit": a.eval_limit or b["eval_limit"], "suites": b["suites"]}
        | {"max_new_tokens": b["max_new_tokens"], "batch_size": 8},
        "est": {k: v for k, v in e.items() if k != "sft_step"}
        | {"sft": n * e["sft_step"]},
    }


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    name = "small" if a.budget == "gpu" else f"small_{a.budget}"
    return hat_pipeline.make_config(a.run, name, scale(a))


def sweep(add, arg: str | None = None) -> None:
    """Every run of the paper's tables."""
    del arg
    hat_pipeline.sweep(add)
