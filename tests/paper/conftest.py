"""A fake sweep root in the driver's layout, from small synthetic records.

Runs: the six main pipelines, two HSA-dimension ablation runs (tools, hooks),
one still running (prompt) and one listed but never started (skill_ids). The
HAT run has no T3 suite; the base run's stage workdir is shared by every run;
one SFT stage path is absolute, the others relative to the root. The HAT run
has a latency replay (the driver's ``replay`` step folder, named in its
config.json's ``step_folders``) of two MTP heads at concurrency 1, 4 and 8;
its co-trained head is skipped.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from hat_jax.eval.stats import error_reduction, mean_ci
from hat_jax.eval.summary import flat_metrics, summarize_suite
from serving.metrics import summarize
from serving.policies import CallStats
from serving.schedule import TurnRecord

N = 40  # cases per suite (questions for the edit test)
T3_KINDS = ("tool_fault", "distractor_tools", "schema_edit", "injection")
MODEL = {"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 64}
# name -> (row, group, sft, opd, rl, leave_out, quality in [0, 1])
RUNS = {
    "base": ("base", "main", None, False, False, None, 0.35),
    "sft_fixed": ("fixed-harness SFT", "main", "fixed", False, False, None, 0.5),
    "sft_hsa": ("HSA-SFT", "main", "hsa", False, False, None, 0.6),
    "sft_fixed_opd": ("fixed SFT + OPD", "main", "fixed", True, False, None, 0.55),
    "sft_hsa_opd": ("HSA-SFT + OPD", "main", "hsa", True, False, None, 0.65),
    "hat": ("HAT", "main", "hsa", True, True, None, 0.75),
    "abl_tools": ("HSA-SFT − tools", "ablation", "hsa", False, False, "tools", 0.45),
    "abl_hooks": ("HSA-SFT − hooks", "ablation", "hsa", False, False, "hooks", 0.58),
    "abl_prompt": ("HSA-SFT − prompt", "ablation", "hsa", False, False, "prompt", 0.5),
}
RUNNING = {"abl_prompt"}
NEVER_STARTED = "abl_skill_ids"
NO_T3 = {"hat"}
IFEVAL_WEIGHTS = {
    "instruction_level_strict": "n_instructions",
    "instruction_level_loose": "n_instructions",
}


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def _sim_records(suite, rng, q, n=N):
    out = []
    for i in range(n):
        tags = {"intent": ["qa", "chit_chat"][i % 2]}
        if suite == "t3":
            j = i // 2
            kind = "prompt_robustness" if i % 2 else T3_KINDS[j % len(T3_KINDS)]
            tags.update(kind=kind, question=f"q{j // 4:05d}")
        scores = {
            "accuracy": float(rng.random() < q),
            "effectiveness": float(
                rng.choice([0.0, 0.5, 1.0], p=[1 - q, q / 2, q / 2])
            ),
        }
        out.append(
            {
                "id": f"{suite}-{i:05d}",
                "suite": suite,
                "tags": tags,
                "scores": scores,
                "trajectory": {"status": "ok"},
            }
        )
    return out


def _ifeval_records(rng, q):
    out = []
    for i in range(N):
        k = 1 + i % 3
        strict = rng.random(k) < q
        loose = strict | (rng.random(k) < 0.3)
        scores = {
            "prompt_level_strict": float(strict.all()),
            "instruction_level_strict": float(strict.mean()),
            "prompt_level_loose": float(loose.all()),
            "instruction_level_loose": float(loose.mean()),
            "n_instructions": float(k),
        }
        out.append(
            {
                "id": f"ifeval-{i:05d}",
                "suite": "ifeval",
                "tags": {},
                "scores": scores,
                "trajectory": {"status": "ok"},
            }
        )
    return out


def _edit_records(rng, q):
    out = []
    for i in range(N):
        for side, p in (("before", q - 0.15), ("after", q)):
            tags = {
                "edit": side,
                "split": "dev" if i % 3 == 0 else "test",
                "question": f"q{i:05d}",
            }
            out.append(
                {
                    "id": f"edit-{i:05d}-{side}",
                    "suite": "edit",
                    "tags": tags,
                    "scores": {"accuracy": float(rng.random() < p)},
                    "trajectory": {"status": "ok"},
                }
            )
    return out


def _summary(suite, records):
    if suite == "ifeval":
        metrics = tuple(records[0]["scores"])[:4]
        s = summarize_suite(records, metrics=metrics, weights=IFEVAL_WEIGHTS)
    else:
        group = ("kind", "intent") if suite == "t3" else ("intent",)
        s = summarize_suite(
            records, metrics=("accuracy", "effectiveness"), group_by=group
        )
    if suite == "edit":
        pairs = {}
        for r in records:
            pairs.setdefault(r["tags"]["question"], {})[r["tags"]["edit"]] = (
                1 - r["scores"]["accuracy"]
            )
        qs = sorted(pairs)
        s["extra"] = {
            "error": error_reduction(
                [pairs[q]["before"] for q in qs], [pairs[q]["after"] for q in qs]
            )
        }
    if suite == "t3":
        s["extra"] = {"prompt_robustness": {"consistent": mean_ci([1.0, 0.0])}}
    return {"title": suite.upper(), **s}


def _metrics(path: Path, rows) -> None:
    path.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (path / "metrics.jsonl").write_text(text, encoding="utf-8")


def _loss(steps, start, seed):
    rng = np.random.default_rng(seed)
    return [
        {
            "step": s,
            "train/loss": start * 0.97**s + 0.05 * rng.random(),
            "train/lr": 1e-3,
        }
        for s in steps
    ]


REPLAY_LEVELS = (1, 4, 8)
# head -> (drafts per step, decode seconds per token)
REPLAY_HEADS = {"mtp_off": (0, 0.010), "standalone": (1, 0.008)}


def _turns(rng, k: int, per_token: float, c: int) -> list[TurnRecord]:
    """Turn records of a synthetic replay (``serving.schedule.TurnRecord``)."""
    turns = []
    for i in range(12):
        arrival = 2.0 * i
        start = arrival + rng.random() * 0.2 * c
        calls = []
        for _ in range(1 + i % 3):
            new = 40 + int(rng.integers(0, 40))
            proposed = k * (new // 2)
            calls.append(
                CallStats(
                    batch=1,
                    wall_s=0.5 + per_token * new,
                    ttft_s=[0.2 + 0.05 * c * rng.random()],
                    row_decode_s=per_token * (new - 1) * (1 + 0.1 * c),
                    new_tokens=new,
                    drafts_proposed=proposed,
                    drafts_accepted=int(proposed * (0.5 + 0.3 * rng.random())),
                    row_verifies=new // 2 if k else 0,
                )
            )
        model_s = sum(x.wall_s for x in calls)
        rec = TurnRecord(
            i,
            f"s{i % 2}",
            arrival,
            start,
            start + model_s + 0.1,
            "ok" if i % 4 else "failed",
            model_s=model_s,
            first_token=start + calls[0].ttft_s[0],
            calls=calls,
        )
        turns.append(rec)
    if c == 8:  # one slow reply, beyond the 15 s SLA
        turns[-1].end = turns[-1].arrival + 16.0
    return turns


def _turn(r: TurnRecord) -> dict:
    return {**dataclasses.asdict(r), "latency": r.latency, "queue_s": r.queue_s}


def _replay(folder: Path) -> None:
    """A replay step's folder: trace header, config.json, per head replay.json."""
    header = {"kind": "trace", "version": 1, "arrivals": "poisson", "rate": 0.5,
              "seed": 0, "n_messages": 12, "rooms": 2, "split": "test",
              "messages_per_room": 6}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace.jsonl").write_text(json.dumps(header) + "\n")
    heads = {"co_trained": {"status": "skipped: the model has no MTP head"}}
    for j, (head, (k, per_token)) in enumerate(REPLAY_HEADS.items()):
        heads[head] = {"status": "done", "mtp": k}
        runs = []
        for c in REPLAY_LEVELS:
            recs = _turns(np.random.default_rng([j, c]), k, per_token, c)
            runs.append({"concurrency": c, "summary": summarize(recs),
                         "spec_counters": None,
                         "turns": [_turn(r) for r in recs]})  # fmt: skip
        options = {"max_new_tokens": 96, "mtp_k": k, "label": head}
        result = {"backend": "embedded", "options": options, "clock": "virtual"}
        _write_json(folder / head / "replay.json", {**result, "runs": runs})
    _write_json(folder / "config.json", {"heads": heads, "trace_header": header})


def build_sweep(root: Path) -> Path:
    """Writes the fake sweep under ``root`` and returns it."""
    names = [*RUNS, NEVER_STARTED]
    _write_json(
        root / "sweep.json",
        {
            "config": "experiments/configs/hat_tiny.py",
            "arg": "scale=tiny",
            "scale": "tiny",
            "runs": names,
        },
    )
    _metrics(root / "stages" / "base", _loss(range(0, 60), 8.0, 0))
    for k, (name, (row, group, sft, opd, rl, leave, q)) in enumerate(RUNS.items()):
        run = root / name
        meta = {
            "name": name,
            "row": row,
            "group": group,
            "sft": sft,
            "opd": opd,
            "rl": rl,
            "leave_out": leave,
            "scale": "tiny",
        }
        config = {"meta": meta, "model": MODEL, "seed": 0}
        if rl:
            _replay(root / "stages" / f"replay_{name}")
            config["step_folders"] = {"replay": f"stages/replay_{name}"}
        _write_json(run / "config.json", config)
        stages = {"base": {"path": "stages/base", "seconds": 1.0}}
        if sft:
            sft_dir = root / "stages" / f"sft_{name}"
            _metrics(sft_dir, _loss(range(0, 40, 2), 5.0, k))
            path = str(sft_dir) if name == "sft_hsa" else f"stages/sft_{name}"
            stages["sft"] = {"path": path, "seconds": 2.0}
        if opd:
            _metrics(root / "stages" / f"opd_{name}", _loss(range(10), 1.0, k))
            stages["opd"] = {"path": f"stages/opd_{name}", "seconds": 2.0}
        if rl:
            rows = [
                {
                    "step": s,
                    "rl/reward/accuracy": 0.3 + 0.01 * s,
                    "rl/reward/effectiveness": 0.5 + 0.01 * s,
                    **({"eval/reward": 0.45 + 0.01 * s} if s % 5 == 0 else {}),
                }
                for s in range(30)
            ]
            _metrics(root / "stages" / f"rl_{name}", rows)
            stages["rl"] = {"path": f"stages/rl_{name}", "seconds": 3.0}
        status = "running" if name in RUNNING else "done"
        _write_json(
            run / "run.json", {"status": status, "seconds": 9.0, "stages": stages}
        )
        rng = np.random.default_rng(100 + k)
        suites = {}
        for suite in ("t1", "t2", "t3", "ifeval", "edit"):
            if suite == "t3" and name in NO_T3:
                continue
            if suite == "ifeval":
                recs = _ifeval_records(rng, q + 0.2)
            elif suite == "edit":
                recs = _edit_records(rng, q + 0.1)
            else:
                recs = _sim_records(suite, rng, q)
            path = run / "eval" / suite / "records.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in recs))
            suites[suite] = _summary(suite, recs)
        _write_json(
            run / "eval" / "summary.json",
            {
                "run": {"source": name},
                "cases": {},
                "metrics": flat_metrics(suites),
                "suites": suites,
            },
        )
    return root


@pytest.fixture(scope="session")
def sweep_root(tmp_path_factory) -> Path:
    return build_sweep(tmp_path_factory.mktemp("hat_tiny"))
