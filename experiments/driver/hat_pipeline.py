"""The paper's runs as pipelines, for any scale (hat_tiny, hat_small, hat_paper).

A scale is a dict of sizes. With ``base_model`` None the base is trained here:
a tokenizer on the world's text and a ``base`` SFT stage from scratch on the
world's general data (``vocab``, ``model``, ``base``); otherwise ``base_model``
(an asset, a HF folder) with its ``tokenizer`` is the base and OPD's teacher.
``sft``, ``opd``, ``rl`` each name a stage ``config`` file (experiments/
configs/), its ``arg`` fields and ``extra`` overrides; ``eval`` the evaluation;
``est`` the expected seconds per step kind (the progress display's ETA).
With ``replay`` (trace, concurrency, max_new_tokens, optional repeats) and
``mtp`` (a stage) the runs with RL also get a standalone MTP head and the
latency replay.
"""

from __future__ import annotations

import dataclasses

import ml_collections

from augment.families import TRAIN_FAMILIES, family_dimensions

# Leave-out name -> the HSA dimension (augment.ops) its train families perturb.
DIMENSIONS = {
    "tools": "tool_schema",
    "skill_ids": "skill_ids",
    "skill_content": "skill_content",
    "prompt": "prompt",
    "hooks": "hooks",
}
SUITES = "t1,t2,t3,edit,ifeval,ifeval_proxy"
# The latency replay's MTP rows: name -> (whose head drafts for the run's final
# model: its own (co-trained through every stage), the base stage's (the head as
# the base left it, before SFT and RL), or the standalone head fitted on the final
# model; drafts per step, 0 = MTP off).
MTP_HEADS = {
    "mtp_off": ("model", 0),
    "co_trained": ("model", 1),
    "base_head": ("base", 1),
    "standalone": ("standalone", 1),
}


@dataclasses.dataclass(frozen=True)
class RunSpec:
    row: str  # the paper table's row label
    group: str = "main"  # "main" | "ablation"
    sft: str | None = None  # None | "fixed" | "hsa"
    opd: bool = False
    rl: bool = False
    leave_out: str | None = None  # a DIMENSIONS key


RUNS: dict[str, RunSpec] = {
    "base": RunSpec("base"),
    "fixed_sft": RunSpec("fixed-harness SFT", sft="fixed"),
    "hsa_sft": RunSpec("HSA-SFT", sft="hsa"),
    "fixed_sft_opd": RunSpec("fixed-harness SFT + OPD", sft="fixed", opd=True),
    "hsa_sft_opd": RunSpec("HSA-SFT + OPD", sft="hsa", opd=True),
    "hat": RunSpec("HAT (HSA-SFT + OPD + HSA-RL)", sft="hsa", opd=True, rl=True),
    **{
        f"wo_{d}": RunSpec(f"HSA-SFT w/o {d}", "ablation", sft="hsa", leave_out=d)
        for d in DIMENSIONS
    },
}


def families_without(leave_out: str | None) -> tuple[str, ...]:
    """The train HSA families that do not touch ``leave_out``'s dimension."""
    if leave_out is None:
        return tuple(TRAIN_FAMILIES)
    dim = DIMENSIONS[leave_out]
    return tuple(
        f for f in TRAIN_FAMILIES if dim not in set().union(*family_dimensions(f))
    )


def model_overrides(s: dict) -> tuple[str, ...]:
    """``model.*`` overrides of a scale's ``vocab`` and ``model`` sizes."""
    m = s["model"]
    fields = {
        "vocab_size": s["vocab"],
        "hidden_size": m["hidden"],
        "intermediate_size": 4 * m["hidden"],
        "num_hidden_layers": m["layers"],
        "num_attention_heads": m["heads"],
        "num_key_value_heads": m["kv"],
        "head_dim": m["head_dim"],
    }
    fields.update(m.get("extra", {}))  # e.g. the hybrid's model_type, layer_types
    return tuple(f"model.{k}={v}" for k, v in fields.items())


def _train(stage: str, st: dict, est: float, tokenizer: str, *overrides: str):
    arg = ",".join(f"{k}={v}" for k, v in st["arg"].items())
    return {
        "kind": "train",
        "stage": stage,
        "config": st["config"],
        "arg": arg,
        "overrides": (f"tokenizer={tokenizer}", *st.get("extra", ()), *overrides),
        "est_s": est,
    }


def _presentation(w: dict) -> dict:
    """How the world shows the harness and tool results (``world`` keys
    ``prompt_format``, ``compact_results``; absent: markdown, full results)."""
    out = {}
    if w.get("prompt_format"):
        out["prompt_format"] = w["prompt_format"]
    if w.get("compact_results"):
        out["compact_results"] = True
    return out


def _sim(w: dict, families: tuple[str, ...], est: float) -> dict:
    return {
        "kind": "sim_data",
        "harness": "taolive_v1",
        "split": "train",
        "n": w["sim_n"],
        "seed": 0,
        "families": families,
        "copies": w["copies"],
        "est_s": est,
        **_presentation(w),
        **({"reply_plan": True} if w.get("reply_plan") else {}),
        **({"slips": w["slips"]} if w.get("slips") else {}),
        **({"skills_first": True} if w.get("skills_first") else {}),
        **({"plan_first": True} if w.get("plan_first") else {}),
    }


def build_steps(spec: RunSpec, s: dict) -> tuple[dict, dict[str, str]]:
    """The run's steps and its stages (label -> train step name)."""
    w, est = s["world"], s["est"]
    out = {
        "prompts": {"kind": "world_prompts", "n": w["prompts_n"], "seed": 1}
        | {"est_s": est["data"]},
        "sim_hsa": _sim(w, families_without(None), est["data"]),
    }
    stages: dict[str, str] = {}
    if s.get("base_model"):
        base, tokenizer = s["base_model"], s["tokenizer"]
    else:
        base, tokenizer = "@base", "@tokenizer/tokenizer"
        out["base_data"] = {"kind": "world_base", "n": w["base_n"], "seed": 0}
        if w.get("base_mix"):
            out["base_data"]["mix"] = w["base_mix"]
        out["base_data"]["est_s"] = est["data"]
        files = ("@base_data/data.jsonl", "@prompts/prompts.jsonl")
        out["tokenizer"] = {
            "kind": "tokenizer",
            "vocab_size": s["vocab"],
            "files": files + ("@sim_hsa/data.jsonl",),
            "est_s": est["tok"],
        }
        if s.get("digits"):  # how numbers are cut (experiments.world.tokenizer)
            out["tokenizer"]["digits"] = s["digits"]
        start: tuple[str, ...] = ()
        if s.get("drill"):  # a first phase of short look-ups: where copying forms
            out["drill_data"] = {"kind": "world_base", "mix": "drill", "seed": 0}
            out["drill_data"] |= {"n": w["drill_n"], "est_s": est["data"]}
            out["drill"] = _train(
                "sft",
                s["drill"],
                est["drill"],
                tokenizer,
                *model_overrides(s),
                "data.train=@drill_data/data.jsonl",
            )
            stages["drill"], start = "drill", ("init_from=@drill",)
        out["base"] = _train(
            "sft",
            s["base"],
            est["base"],
            tokenizer,
            *(() if start else model_overrides(s)),
            "data.train=@base_data/data.jsonl",
            *start,
        )
        stages["base"] = "base"
    last = base
    if spec.sft is not None:
        data = "sim_hsa"
        if spec.leave_out is not None:
            data = f"sim_wo_{spec.leave_out}"
            out[data] = _sim(w, families_without(spec.leave_out), est["data"])
        out["sft"] = _train(
            "sft",
            s["sft"],
            est["sft"],
            tokenizer,
            f"data.train=@{data}/data.jsonl",
            f"data.fixed_harness={spec.sft == 'fixed'}",
            f"init_from={base}",
        )
        stages["sft"], last = "sft", "@sft"
    if spec.opd:
        out["opd"] = _train(
            "opd",
            s["opd"],
            est["opd"],
            tokenizer,
            "data.train=@prompts/prompts.jsonl",
            f"init_from={last}",
            f"init_teacher_from={base}",  # the pre-SFT base model
        )
        stages["opd"], last = "opd", "@opd"
    if spec.rl:
        rollout = [f"rollout.{k}={v}" for k, v in _presentation(w).items()]
        out["rl"] = _train(
            "rl", s["rl"], est["rl"], tokenizer, f"init_from={last}", *rollout
        )
        stages["rl"], last = "rl", "@rl"
    out["eval"] = {"kind": "eval", "model": last, "suites": SUITES, **s["eval"]}
    out["eval"] |= _presentation(w)
    out["eval"]["est_s"] = est["eval"]
    if spec.rl and s.get("replay"):
        out |= _latency_steps(s, last, tokenizer)
        # not a stage (stages are train steps): config.json's step_folders has it
        stages["mtp"] = "mtp"
    return out, stages


def _latency_steps(s: dict, model: str, tokenizer: str) -> dict[str, dict]:
    """A standalone MTP head fitted on ``model`` and the latency replay.

    The head (one decoder layer, the trunk frozen: `sft.py`'s ``mtp_only``) is
    fitted on the simulator's HSA data. The replay decodes ``model`` without
    drafts, with its own (co-trained) head when it has one, with the base
    model's head when the base has one, and with the standalone head
    (``MTP_HEADS``).
    """
    est = s["est"]
    mtp = _train(
        "sft",
        s["mtp"],
        est["mtp"],
        tokenizer,
        "data.train=@sim_hsa/data.jsonl",
        f"init_from={model}",
        "mtp_only=True",
        "model.mtp_num_hidden_layers=1",
    )
    r = s["replay"]
    base = s.get("base_model") or "@base"
    heads = {}
    for name, (src, k) in MTP_HEADS.items():
        heads[name] = {"model": "@mtp" if src == "standalone" else model, "mtp": k}
        if src == "base":  # the final model drafting with the base's head
            heads[name]["head"] = base
    replay = {
        "kind": "replay",
        "trace": r["trace"],
        "concurrency": r["concurrency"],
        "max_new_tokens": r["max_new_tokens"],
        "heads": heads,
        "est_s": est["replay"],
        **_presentation(s["world"]),
    }
    if r.get("repeats", 1) != 1:  # one replay stays keyed as before
        replay["repeats"] = int(r["repeats"])
    return {"mtp": mtp, "replay": replay}


def make_config(run: str, scale: str, s: dict) -> ml_collections.ConfigDict:
    """The pipeline config of ``run`` (a RUNS name) at ``scale`` (sizes ``s``)."""
    if run not in RUNS:
        raise ValueError(f"run must be one of {sorted(RUNS)}, got {run!r}")
    spec = RUNS[run]
    steps, stages = build_steps(spec, s)
    c = ml_collections.ConfigDict()
    c.name = run
    c.meta = {**dataclasses.asdict(spec), "name": run, "scale": scale}
    c.steps = steps
    c.stages = stages
    c.eval_step = "eval"
    return c


def sweep(add) -> None:
    """Every run of the paper's tables, main runs first, then the ablation."""
    for name in RUNS:
        add(name, run=name)
