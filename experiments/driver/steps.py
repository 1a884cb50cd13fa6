"""The built-in step kinds: data, tokenizer, a training stage, an evaluation.

Each writes into its own folder (`pipeline.execute`); files other steps read:

- ``sim_data``: ``data.jsonl``, gold trajectories of the simulator plus
  ``copies`` HSA variants of each, their families taken in turn from
  ``families`` (none: gold only, the fixed-harness data).
- ``world_base``: ``data.jsonl``, the base stage's general data (IFEval-style
  instruction following, generic tool use, chit-chat).
- ``world_prompts``: ``prompts.jsonl``, OPD's general prompts.
- ``tokenizer``: ``tokenizer/``, a BPE trained on ``files``.
- ``train``: the stage's workdir itself (config.json, metrics.jsonl, ckpt/).
- ``eval``: the `hat eval run` output folder itself (summary.json, records).
- ``replay``: ``trace.jsonl`` (`serving.trace`), ``config.json`` (the spec,
  resolved, and the trace header), and per MTP head ``<head>/`` the `hat
  replay` outputs (replay.json, replay.md, latency_cdf.png) of the embedded
  JAX backend (virtual clock) at each concurrency level.

Each kind declares the code it runs (`experiments.driver.codehash` entries,
below); the hash of those files is part of the step's key, so an edit re-runs
the steps whose code it touches and, through their hashes, the steps after
them, and no others. The sets are whole packages (a new module in one is
covered) less what the kind never imports: a judge (``sim/judge_*``,
``sim/rewards.py``) re-runs evaluation and RL, not data generation or SFT; a
loss re-runs training and what follows, not the data. Left out everywhere:
``hat_jax/cli`` (argument parsing; a train step's resolved config is its
fingerprint already) and the driver itself (a step function's change is a
``version`` bump).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

from experiments.driver.registry import register
from hat_jax.jsonl import write_text_atomic

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

# records, harness folders and hooks, chat rendering and tool-call parsing
LIB_BASE = ("hat_jax/*.py", "hat_jax/harness", "hat_jax/text")
NO_JUDGES = ("!sim/judge_*", "!sim/rewards.py", "!sim/data/judge_labels.jsonl")
NO_CLI = ("!hat_jax/cli/*",)
SIM_DATA_CODE = (*LIB_BASE, "sim", "augment", "experiments/sim_cmd.py", *NO_JUDGES)
WORLD_CODE = (*LIB_BASE, "hat_jax/eval/ifeval", "experiments/world")
TOKENIZER_CODE = (
    *LIB_BASE,
    "experiments/world/tokenizer.py",
    "experiments/world/template.py",
)
# models, losses, train, checkpoints, sampling, parallel, text, harness; not eval
TRAIN_CODE = ("hat_jax", *NO_CLI, "!hat_jax/eval/*")
STAGE_CODE = {"rl": ("experiments/sim_task.py", "sim", "augment")}  # + judges
EVAL_CODE = ("hat_jax", "sim", "augment", "experiments/suites", "experiments/world")
EVAL_CODE += ("experiments/sim_task.py",)  # the suites judge through the task
EVAL_CODE += ("experiments/eval_run_cmd.py", *NO_CLI)
REPLAY_CODE = ("hat_jax", "serving", "sim", *NO_CLI, *NO_JUDGES)


def train_code(spec: dict[str, Any]) -> tuple[str, ...]:
    """A train step's code: the library, and the stage's own modules (RL's
    rollouts run the simulator, its HSA harnesses and its judges)."""
    return TRAIN_CODE + STAGE_CODE.get(str(spec.get("stage")), ())


@register("sim_data", version=2, code=SIM_DATA_CODE)  # 2: the compact call format
def sim_data(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from experiments.sim_cmd import augment_all
    from hat_jax.harness import load_harness
    from sim.datasets import generate, make_cases, summarize, write_dataset

    harness = load_harness(p["harness"]).in_format(p.get("prompt_format"))
    cases = make_cases(
        p.get("split", "train"),
        int(p["seed"]),
        int(p["n"]),
        messages_per_room=int(p.get("messages_per_room", 8)),
        harness_version=Path(p["harness"]).name,
    )
    golds = generate(
        harness,
        cases,
        faults=float(p.get("fault_rate", 0.0)),
        seed=0,
        compact_results=bool(p.get("compact_results", False)),
        reply_plan=bool(p.get("reply_plan", False)),
        slips=float(p.get("slips", 0.0)),
        skills_first=bool(p.get("skills_first", False)),
        plan_first=bool(p.get("plan_first", False)),
    )
    trajs, failed, per_family = list(golds), 0, {}
    families = list(p.get("families") or ())
    for k in range(int(p.get("copies", 1)) if families else 0):
        for j, family in enumerate(families):
            # Gold i's copy k comes from family (i + k) mod F: the same number of
            # variants whatever the families, spread evenly over them.
            idx = [i for i in range(len(golds)) if (i + k) % len(families) == j]
            picked = [copy.deepcopy(golds[i]) for i in idx]
            seed = int(p["seed"]) * 1000 + 97 * k + sorted(families).index(family)
            aug, bad = augment_all(harness, picked, seed=seed, family=family)
            failed += bad
            # A failed augmentation falls back to its gold: not a variant, drop it.
            ok = [t for t in aug if "problems" not in t.meta.get("hsa", {})]
            per_family[family] = per_family.get(family, 0) + len(ok)
            trajs += ok
    write_dataset(trajs, out / "data.jsonl")
    s = summarize(trajs)
    info = {"n": s["n"], "gold": len(golds), "hsa_failed": failed, "hsa": s["hsa"]}
    return info | {"hsa_families": per_family}  # the family weights, as drawn


@register("world_base", code=WORLD_CODE)
def world_base(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from experiments.world.base_data import write_base_data

    mix = str(p.get("mix", "general"))
    n, seed = int(p["n"]), int(p["seed"])
    return dict(write_base_data(out / "data.jsonl", n=n, seed=seed, mix=mix))


@register("world_prompts", code=WORLD_CODE)
def world_prompts(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from experiments.world.prompts import write_prompts

    return dict(
        write_prompts(out / "prompts.jsonl", n=int(p["n"]), seed=int(p["seed"]))
    )


@register("tokenizer", code=TOKENIZER_CODE)
def tokenizer(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from experiments.world.tokenizer import train_tokenizer

    tok = train_tokenizer(
        list(p["files"]),
        vocab_size=int(p["vocab_size"]),
        out=out / "tokenizer",
        digits=str(p.get("digits", "single")),
        idents=str(p.get("idents", "qwen")),
    )
    return {"vocab_size": int(getattr(tok, "vocab_size", p["vocab_size"]))}


def config_path(name: str) -> str:
    """A config file: a bare file name is looked up in experiments/configs/."""
    p = Path(name)
    return str(CONFIG_DIR / p) if not p.is_absolute() and p.parent == Path() else name


def stage_config(p: dict[str, Any]):
    """The stage's ConfigDict: ``config`` file, ``arg`` and ``overrides``."""
    from hat_jax.cli.config_flags import load_config

    spec = config_path(p["config"]) + (f":{p['arg']}" if p.get("arg") else "")
    return load_config(spec, list(p.get("overrides") or ()))


def _train_fingerprint(spec: dict[str, Any]) -> dict[str, Any]:
    # The resolved config: a changed default in a config file is a new step.
    return stage_config(spec).to_dict()


@register("train", fingerprint=_train_fingerprint, code=train_code)
def train(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    from hat_jax.cli.train_cmd import load_runner, stages

    cfg = stage_config(p)
    table = stages()
    if p["stage"] not in table:
        raise ValueError(f"unknown stage {p['stage']!r}; have {sorted(table)}")
    _, _, last = load_runner(table[p["stage"]])(cfg, out, progress=progress)
    keep = ("train/loss", "eval/reward", "eval/accuracy")
    return {
        "stage": p["stage"],
        "steps": int(cfg.train.steps),
        **{k: float(v) for k, v in last.items() if k in keep},
    }


@register("eval", version=2, code=EVAL_CODE)  # 2: compact call format, fault index
def evaluate(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    import json

    from experiments import eval_run_cmd

    parser = argparse.ArgumentParser()
    eval_run_cmd.add_arguments(parser)
    argv = ["--model", p["model"], "--out", str(out), "--suite", p["suites"]]
    limit = p.get("limit")
    if isinstance(limit, dict):  # per suite: {"t1": 300, ...}, of the suites run
        run = set(str(p["suites"]).split(","))
        limit = ",".join(f"{k}={v}" for k, v in limit.items() if k in run) or None
    if limit is not None:
        argv += ["--limit", str(limit)]
    for key in ("max_new_tokens", "batch_size", "seed", "harness", "prompt_format"):
        if p.get(key) is not None:
            argv += [f"--{key.replace('_', '-')}", str(p[key])]
    if p.get("compact_results"):
        argv.append("--compact-results")
    if not progress:
        argv.append("--no-progress")
    rc = eval_run_cmd.run(parser.parse_args(argv))
    if rc:
        raise RuntimeError(f"hat eval run exited with {rc}")
    summary = json.loads((out / "summary.json").read_text())
    return {"metrics": summary.get("metrics", {})}


def _has_head(model) -> bool:
    return getattr(model, "mtp", None) is not None


@register("replay", code=REPLAY_CODE)
def replay(p: dict[str, Any], out: Path, *, progress: bool) -> dict[str, Any]:
    """A trace replayed through the agent loop, once per MTP head.

    ``trace``: `serving.trace.make_trace` arguments; ``concurrency``: the
    levels; ``max_new_tokens``: per model call; ``heads``: {name: {"model":
    workdir, "mtp": drafts per step, "head": optional workdir whose MTP head
    drafts instead of the model's own}}. A head with drafts whose model (or
    ``head`` donor) has no MTP head is skipped (recorded as such). A head whose
    ``replay.json`` exists is kept (`serving.replay` writes it last): an
    interrupted step resumes with the next head. ``prompt_format`` and
    ``compact_results``: how the world shows the harness and tool results;
    ``repeats`` (default 1): replays of each level (`serving.repeats`).
    """
    import json

    from hat_jax.eval.backends import load_jax_model
    from hat_jax.models.mtp import graft_head
    from serving.cases import trace_jobs
    from serving.replay import ReplayOptions
    from serving.replay import replay as run_replay
    from serving.trace import make_trace, write_trace
    from sim.tools import SimBackend

    trace = make_trace(**p["trace"])
    write_trace(trace, out / "trace.jsonl")
    jobs = trace_jobs(
        trace, str(out / "trace.jsonl"), prompt_format=p.get("prompt_format")
    )
    tools = SimBackend(None, seed=0, compact=bool(p.get("compact_results", False)))
    levels = [int(c) for c in p["concurrency"]]
    heads: dict[str, dict[str, Any]] = {}
    loaded: dict[str, Any] = {}
    for name, h in p["heads"].items():
        k, folder = int(h.get("mtp", 0)), out / name
        heads[name] = {"model": h["model"], "mtp": k}
        if h.get("head"):
            heads[name]["head"] = h["head"]
        if (folder / "replay.json").exists():
            heads[name]["status"] = "done"
            continue
        if h["model"] not in loaded:
            loaded[h["model"]] = load_jax_model(str(h["model"]))
        model, tokenizer = loaded[h["model"]]
        if h.get("head"):
            if h["head"] not in loaded:
                loaded[h["head"]] = load_jax_model(str(h["head"]))
            donor = loaded[h["head"]][0]
            if not _has_head(donor):
                heads[name]["status"] = f"skipped: {h['head']} has no MTP head"
                continue
            model = graft_head(model, donor)
        if k and not _has_head(model):
            heads[name]["status"] = "skipped: the model has no MTP head"
            continue
        opts = ReplayOptions(
            max_new_tokens=int(p["max_new_tokens"]),
            mtp_k=k,
            label=name,
            repeats=int(p.get("repeats", 1)),
        )
        target = (model, tokenizer)
        run_replay(
            jobs,
            "embedded",
            target,
            folder,
            concurrency=levels,
            opts=opts,
            tool_backend=tools,
        )
        heads[name]["status"] = "done"
    record = {**p, "trace_header": trace.header, "heads": heads}
    write_text_atomic(out / "config.json", json.dumps(record, indent=1, default=str))
    info: dict[str, Any] = {"messages": len(jobs), "heads": {}}
    for name, h in heads.items():
        if h["status"] != "done":
            info["heads"][name] = h["status"]
            continue
        runs = json.loads((out / name / "replay.json").read_text())["runs"]
        info["heads"][name] = {
            str(r["concurrency"]): round(r["summary"]["latency_s"]["p50"], 4)
            for r in runs
        }
    return info


from experiments.driver import steps_release  # noqa: E402, F401  (registers "release")
