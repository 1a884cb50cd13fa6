"""The generalist base of the tiny world, built from nothing and released (issue 56).

Data of the base world only (``hat world base --mix apps``: episodes in
generated apps with fresh identifiers, constrained instructions, chit-chat), a
BPE trained on that data and the OPD prompts (never on taolive), the base model
trained from scratch with its MTP head, its evaluation on the premise suites
(T1 and T2 under taolive_v1, held-out generated apps, the IFEval proxy) and the
release folder (`hat export`'s HF folder, model card, premise table, sha256).

Launch (`make world-base` runs the ``full`` scale and copies the release to
``releases/world_base``)::

    hat run --config=experiments/configs/world_base.py:scale=pilot \\
        --root runs/world_base_pilot

Scales (``SCALES``): ``pilot`` (about 5 M tokens: whether copying forms),
``full`` (the release), ``micro`` (the driver's tests). Time: the progress
display's ETA (``est`` below, seconds per step kind on 2 cores); measured
times go to docs/results/world_base.md. Feeds the premise table and, through
the release, every `hat_tiny` run. Arguments (`:k=v,...`): scale.
"""

from __future__ import annotations

import ml_collections

from experiments.driver import hat_pipeline
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {"scale": "full"}
SUITES = "t1,t2,apps,ifeval_proxy"
PREMISE_LIMITS = {"t1": 300, "t2": 300, "apps": 300, "ifeval_proxy": 300}
MODEL = {"layers": 4, "hidden": 128, "heads": 4, "kv": 2, "head_dim": 32, "mtp": 1}
# The drill: one long cosine, where copying forms after ~1,000-1,800 steps at peak
# learning rate (docs/results/world_base.md, pilot 8).
DRILL = {"steps": 4000, "batch_size": 4, "seq_len": 1024, "lr": 3e-3}
# Tokens a model call may write (as the hat_tiny compact scales).
CALL_BUDGET = 192

SCALES = {
    "pilot": {
        "vocab": 2048,
        "model": MODEL | {"mtp": 0},
        "drill_n": 48000,
        "drill": DRILL,
        "data_n": 8000,
        "train": {"steps": 1500, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
        "limit": {"t1": 100, "t2": 100, "apps": 200, "ifeval_proxy": 100},
        "est": {"data": 90, "tok": 15, "drill": 4000, "base": 2700, "eval": 900}
        | {"release": 10},
    },
    "full": {
        "vocab": 2048,
        "model": MODEL,
        "drill_n": 48000,
        "drill": DRILL,
        "data_n": 60000,
        "train": {"steps": 6000, "batch_size": 3, "seq_len": 2048, "lr": 3e-3},
        "limit": PREMISE_LIMITS,
        "est": {"data": 180, "tok": 40, "drill": 4000, "base": 10500, "eval": 2400}
        | {"release": 10},
    },
    "micro": {
        "vocab": 512,
        "model": {"layers": 1, "hidden": 64, "heads": 2, "kv": 1, "head_dim": 32}
        | {"mtp": 1},
        "drill_n": 8,
        "drill": {"steps": 1, "batch_size": 1, "seq_len": 1024, "lr": 1e-3},
        "data_n": 24,
        "train": {"steps": 2, "batch_size": 1, "seq_len": 4096, "lr": 1e-3},
        "limit": 2,
        "est": {"data": 3, "tok": 1, "drill": 5, "base": 10, "eval": 30, "release": 3},
    },
}


def _model(vocab: int, m: dict) -> tuple[str, ...]:
    """The model block's overrides (hat_tiny's sizes, with its MTP layers)."""
    extra = {"mtp_num_hidden_layers": m["mtp"]}
    return hat_pipeline.model_overrides({"vocab": vocab, "model": m | {"extra": extra}})


def _args(d: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in d.items())


def steps(s: dict) -> dict[str, dict]:
    est = s["est"]
    return {
        "prompts": {"kind": "world_prompts", "n": 400, "seed": 1}
        | {"est_s": est["data"]},
        "drill_data": {"kind": "world_base", "mix": "apps_drill", "n": s["drill_n"]}
        | {"seed": 0, "est_s": est["data"]},
        "base_data": {"kind": "world_base", "mix": "apps", "n": s["data_n"]}
        | {"seed": 0, "est_s": est["data"]},
        "tokenizer": {
            "kind": "tokenizer",
            "vocab_size": s["vocab"],
            "idents": "bare",  # a name cut one way wherever it stands
            "files": (
                "@base_data/data.jsonl",
                "@drill_data/data.jsonl",
                "@prompts/prompts.jsonl",
            ),
            "est_s": est["tok"],
        },
        # where copying forms: short apps first (docs/results/world_base.md)
        "drill": {
            "kind": "train",
            "stage": "sft",
            "config": "sft_tiny.py",
            "arg": _args(s["drill"]),
            "overrides": (
                "tokenizer=@tokenizer/tokenizer",
                "data.train=@drill_data/data.jsonl",
                "data.overlong=truncate",
                *_model(s["vocab"], s["model"]),
            ),
            "est_s": est["drill"],
        },
        "base": {
            "kind": "train",
            "stage": "sft",
            "config": "sft_tiny.py",
            "arg": _args(s["train"]),
            "overrides": (
                "tokenizer=@tokenizer/tokenizer",
                "data.train=@base_data/data.jsonl",
                "data.overlong=truncate",
                "init_from=@drill",
            ),
            "est_s": est["base"],
        },
        "eval": {
            "kind": "eval",
            "model": "@base",
            "suites": SUITES,
            "limit": s["limit"],
            "max_new_tokens": CALL_BUDGET,
            "batch_size": 64,
            "prompt_format": "compact",
            "compact_results": True,
            "est_s": est["eval"],
        },
        "release": {
            "kind": "release",
            "model": "@base",
            "evaluation": "@eval",
            "data": {
                "drill_data": "@drill_data",
                "base_data": "@base_data",
                "prompts": "@prompts",
            },
            "est_s": est["release"],
        },
    }


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    if a.scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {a.scale!r}")
    c = ml_collections.ConfigDict()
    c.name = "world_base"
    meta = {"name": "world_base", "row": "base", "group": "main", "sft": None}
    c.meta = meta | {"opd": False, "rl": False, "leave_out": None, "scale": a.scale}
    c.steps = steps(SCALES[a.scale])
    c.stages = {"drill": "drill", "base": "base"}
    c.eval_step = "eval"
    return c
