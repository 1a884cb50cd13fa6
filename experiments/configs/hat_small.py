"""The paper's runs on SmolLM2-135M-Instruct (real weights): a GPU or a CPU budget.

The same runs as hat_tiny (`experiments.driver.hat_pipeline.RUNS`: base,
fixed-harness / HSA-SFT, + OPD, HAT, the five HSA-dimension ablations), with
SmolLM2-135M-Instruct (`init_from=smollm2-135m-instruct`, its own tokenizer)
as the base instead of a model trained here: the `base` run evaluates it as it
is, and it is OPD's teacher. Full fine-tuning by default; `lora=16` trains
rank-16 LoRA adapters in SFT and OPD instead (RL trains all parameters).

Launch::

    make reproduce-small   # the cpu budget, one process a run, then its tables
    hat run --config=experiments/configs/hat_small.py:budget=cpu --run fixed_sft \\
        --root runs/hat_small_cpu
    hat sweep --config=experiments/configs/hat_small.py --root runs/hat_small
    hat run --config=experiments/configs/hat_small.py:lora=16 --run hsa_sft \\
        --root runs/hat_small_lora

Budgets (``BUDGETS``): ``cpu``, base, fixed-harness SFT and HSA-SFT on 2 CPU
cores in ~55 min (6 SFT steps, 4 cases of four suites: it shows every stage
runs on real weights, not which claim holds); ``gpu`` (default), the paper's
stages at one GPU's size (500 SFT steps, 100 cases of every suite), not run
yet. Feeds `hat paper`'s tables (scale ``small`` / ``small_cpu``); step times
and tables: docs/results/hat_small_cpu.md. Arguments (`:k=v,...`): run,
budget, lora (0 = full), sft_steps and eval_limit (0 = the budget's).
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
    "cpu": {"sft_steps": 6, "eval_limit": 4, "suites": "t1,t2,ifeval,ifeval_proxy"}
    | {"max_new_tokens": 160, "opd_steps": 4, "rl_steps": 1}
    # without remat one SFT step of 1 x 3,072 tokens peaks at ~23 GB of the
    # machine's 24 (measured); recomputing each layer in the backward fits it
    | {"sft_extra": ("remat=True",)},
}
# Expected seconds per step kind (the progress display's ETA). cpu: measured on
# the 2-core machine (an SFT step with its share of loading, compiling and
# checkpoints); gpu: guesses, not measured yet.
EST = {
    "gpu": {"data": 60, "tok": 0, "base": 0, "sft_step": 1.0, "opd": 300}
    | {"rl": 600, "eval": 900},
    "cpu": {"data": 15, "tok": 0, "base": 0, "sft_step": 137.0, "opd": 900}
    | {"rl": 900, "eval": 530},
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
