"""A fake sweep root in the driver's layout, from small synthetic records.

Runs: the six main pipelines, two HSA-dimension ablation runs (tools, hooks),
one still running (prompt) and one listed but never started (skill_ids). The
HAT run has no T3 suite; the base run's stage workdir is shared by every run;
one SFT stage path is absolute, the others relative to the root. Simulator
records carry ``success`` (accurate, fully effective and within the rules),
except those of the ``OLD`` runs (made before the score existed); T2 cases are
tagged with their HSA family, HSA-SFT runs do better on T2 than the others, and
fixed-harness SFT answered only the first ``FIXED_T2`` T2 cases. Every run also
has an ``ifeval_proxy`` suite shaped like ``ifeval``. The HAT run has a latency
replay (the driver's ``replay`` step folder, named in its
config.json's ``step_folders``) of two MTP heads at concurrency 1, 4 and 8;
its co-trained head is skipped. Every run lists its step folders, each with a
``done.json`` (tests/paper/fake_steps.py; the running run's eval step has none);
train stages log ``train/accuracy``, SFT stages also the decision probe's keys.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from hat_jax.eval.stats import error_reduction, mean_ci
from hat_jax.eval.summary import flat_metrics, summarize_suite
from paper.results import load_sweep
from paper.tables import TABLES, get
from tests.paper.fake_replay import write_replay
from tests.paper.fake_steps import decision_metrics, write_steps

N = 40  # cases per suite (questions for the edit test)
T3_KINDS = ("tool_fault", "distractor_tools", "schema_edit", "injection")
FAMILIES = ("all_identifiers", "reshaped_rewritten", "prompt_under_hooks", "everything")
OLD = {"abl_hooks"}  # records and summaries without success
FIXED_T2 = 36  # T2 cases fixed-harness SFT answered
HSA_T2_GAIN = 0.3  # HSA-SFT runs' extra quality on T2
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
SIM_METRICS = ("success", "accuracy", "effectiveness")
IFEVAL_WEIGHTS = {
    "instruction_level_strict": "n_instructions",
    "instruction_level_loose": "n_instructions",
}


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def _success(scores, rng, old):
    """Adds ``success``: accurate, fully effective and the rules kept (90 %)."""
    kept = rng.random() < 0.9
    ok = scores["accuracy"] == 1 and scores.get("effectiveness", 1.0) == 1 and kept
    return scores if old else {"success": float(ok), **scores}


def _sim_records(suite, rng, q, n=N, old=False):
    out = []
    for i in range(n):
        tags = {"intent": ["qa", "chit_chat"][i % 2]}
        if suite == "t2":
            tags["family"] = FAMILIES[i % len(FAMILIES)]
        if suite == "t3":
            j = i // 2
            kind = "prompt_robustness" if i % 2 else T3_KINDS[j % len(T3_KINDS)]
            tags.update(kind=kind, question=f"q{j // 4:05d}")
        scores = {
            "accuracy": float(rng.random() < q),
            "effectiveness": float(
                rng.choice([0.0, 0.5, 1.0], p=[1 - q, q / 4, 3 * q / 4])
            ),
        }
        scores = _success(scores, rng, old)
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


def _ifeval_records(rng, q, suite="ifeval"):
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
                "id": f"{suite}-{i:05d}",
                "suite": suite,
                "tags": {},
                "scores": scores,
                "trajectory": {"status": "ok"},
            }
        )
    return out


def _edit_records(rng, q, old=False):
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
                    "scores": _success({"accuracy": float(rng.random() < p)}, rng, old),
                    "trajectory": {"status": "ok"},
                }
            )
    return out


def _summary(suite, records):
    if suite.startswith("ifeval"):
        metrics = tuple(records[0]["scores"])[:4]
        s = summarize_suite(records, metrics=metrics, weights=IFEVAL_WEIGHTS)
    else:
        group = {"t3": ("kind", "intent"), "t2": ("family", "intent")}
        metrics = [m for m in SIM_METRICS if m in records[0]["scores"]]
        s = summarize_suite(
            records, metrics=metrics, group_by=group.get(suite, ("intent",))
        )
    if suite == "edit":
        pairs = {}
        measure = metrics[0]  # the suite's error: 1 - success (else accuracy)
        for r in records:
            pairs.setdefault(r["tags"]["question"], {})[r["tags"]["edit"]] = (
                1 - r["scores"][measure]
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


def _loss(steps, start, seed, decisions=False):
    rng = np.random.default_rng(seed)
    rows = [
        {"step": s, "train/loss": start * 0.97**s + 0.05 * rng.random()} for s in steps
    ]
    for r in rows:
        r |= {"train/lr": 1e-3, "train/accuracy": 1 - r["train/loss"] / 10}
        r |= decision_metrics(r["step"]) if decisions else {}
    return rows


def build_sweep(root: Path, old=frozenset(OLD)) -> Path:
    """Writes the fake sweep under ``root`` and returns it; the runs in ``old``
    have no ``success`` scores."""
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
    clock = [0]  # done.json files written (fake_steps)
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
        stages = {"base": {"path": "stages/base", "seconds": 1.0}}
        if sft:
            sft_dir = root / "stages" / f"sft_{name}"
            _metrics(sft_dir, _loss(range(0, 40, 2), 5.0, k, decisions=True))
            path = str(sft_dir) if name == "sft_hsa" else f"stages/sft_{name}"
            stages["sft"] = {"path": path, "seconds": 2.0}
        if opd:
            _metrics(root / "stages" / f"opd_{name}", _loss(range(10), 1.0, k))
            stages["opd"] = {"path": f"stages/opd_{name}", "seconds": 2.0}
        if rl:
            rows = [
                {
                    "step": s,
                    "train/loss": 0.1 - 0.001 * s,
                    "rl/reward/accuracy": 0.3 + 0.01 * s,
                    "rl/reward/effectiveness": 0.5 + 0.01 * s,
                    **({"eval/reward": 0.45 + 0.01 * s} if s % 5 == 0 else {}),
                    **({"eval/success": 0.2 + 0.01 * s} if s % 5 == 0 else {}),
                }
                for s in range(30)
            ]
            _metrics(root / "stages" / f"rl_{name}", rows)
            stages["rl"] = {"path": f"stages/rl_{name}", "seconds": 3.0}
        status = "running" if name in RUNNING else "done"
        replay = f"stages/replay_{name}" if rl else None
        if replay:
            write_replay(root / replay)
        done = name not in RUNNING
        kw = {"leave_out": leave, "replay": replay, "done": done}
        steps = write_steps(root, name, stages, clock, **kw)
        config["step_folders"], config["steps"] = steps
        _write_json(run / "config.json", config)
        _write_json(
            run / "run.json", {"status": status, "seconds": 9.0, "stages": stages}
        )
        rng = np.random.default_rng(100 + k)
        suites = {}
        for suite in ("t1", "t2", "t3", "ifeval", "ifeval_proxy", "edit"):
            if suite == "t3" and name in NO_T3:
                continue
            if suite.startswith("ifeval"):
                recs = _ifeval_records(rng, q + 0.2, suite)
            elif suite == "edit":
                recs = _edit_records(rng, q + 0.1, old=name in old)
            elif suite == "t2":
                n = FIXED_T2 if name == "sft_fixed" else N
                q2 = min(q + HSA_T2_GAIN, 0.95) if sft == "hsa" else q
                recs = _sim_records(suite, rng, q2, n, old=name in old)
            else:
                recs = _sim_records(suite, rng, q, old=name in old)
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


@pytest.fixture(scope="session")
def make_sweep():
    """``build_sweep`` itself, for tests that need a second or an old sweep."""
    return build_sweep


@pytest.fixture(scope="module")
def sweep(sweep_root):
    return load_sweep(sweep_root)


@pytest.fixture(scope="module")
def tables(sweep):
    return {name: get(name)(sweep) for name in TABLES}
