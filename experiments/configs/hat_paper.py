"""The paper's runs at the paper's scale: Qwen3.6-35B-A3B on a cluster.

The same runs as hat_tiny (`experiments.driver.hat_pipeline.RUNS`) with the
published base, Qwen3.6-35B-A3B (model: experiments/configs/paper_35b.py; its
weights as a local HF folder, `base_model`), its tokenizer, bf16 compute and
an FSDP mesh. The base is OPD's teacher, as in the paper. The report gives no
step counts, batch sizes or learning rates: the numbers below are ours, sized
for "tens of thousands" of SFT trajectories and "thousands" of RL tasks (the
report's words), not the authors' settings.

Launch (one process per host, `hat_jax.parallel.distributed`)::

    HAT_COORDINATOR=node0:12345 HAT_NUM_PROCESSES=8 HAT_PROCESS_ID=$i \\
        hat sweep --config=experiments/configs/hat_paper.py:base=/data/Qwen3.6 \\
        --root runs/hat_paper

Run time: not measured (no cluster here); `hat plan
--config=experiments/configs/paper_35b.py` gives the memory per device. Here,
building it must pass: the model only through `jax.eval_shape`.

Arguments (`:k=v,...`): run, base (HF folder of the base weights), sft_steps.
Feeds the paper tables of `hat paper` at the paper's scale.
"""

from __future__ import annotations

import ml_collections

from experiments.driver import hat_pipeline
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {"run": "hat", "base": "Qwen/Qwen3.6-35B-A3B", "sft_steps": 2000}
TOKENIZER = "qwen3_6-tokenizer"
BF16 = ("compute_dtype=bfloat16",)


def scale(a) -> dict:
    return {
        "base_model": a.base,
        "tokenizer": TOKENIZER,
        "world": {"prompts_n": 20000, "sim_n": 20000, "copies": 1},
        "sft": {
            "config": "paper_35b.py",
            "arg": {"seq_len": 8192, "batch_size": 64, "remat": True},
            "extra": (f"train.steps={a.sft_steps}", "optim.lr=1e-5")
            + ("data.overlong=truncate", "grad_accum=8"),
        },
        "opd": {
            "config": "opd_tiny.py",
            "arg": {"steps": 500, "batch_size": 64, "max_new_tokens": 1024}
            | {"lr": 1e-6},
            "extra": BF16,
        },
        "rl": {
            "config": "rl_tiny.py",
            "arg": {"steps": 300, "tasks": 32, "group": 8, "max_new_tokens": 1024}
            | {"lr": 1e-6, "eval_cases": 0},
            "extra": BF16 + ("rl.max_len=16384",),
        },
        "eval": {"max_new_tokens": 1024, "batch_size": 64},
        "est": {"data": 600, "tok": 0, "base": 0, "sft": 36000, "opd": 7200}
        | {"rl": 36000, "eval": 7200},
    }


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    return hat_pipeline.make_config(a.run, "paper", scale(a))


def sweep(add, arg: str | None = None) -> None:
    """Every run of the paper's tables."""
    del arg
    hat_pipeline.sweep(add)
