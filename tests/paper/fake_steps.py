"""A run's step folders in the sweep driver's layout, for the fake sweep.

Every run lists (config.json's ``step_folders``, pipeline order) the shared data
steps ``DATA`` under ``ROOT/_steps/<name>-<hash>/``, the train steps (its
``stages`` workdirs: the base one shared, the others its own), a
``sim_wo_<dim>`` data step when it leaves a dimension out, its own eval step and
its replay. Each folder gets a ``done.json`` ("seconds" and "seconds_all" from
``SECONDS``, one attempt,
"finished" a minute after the previous one of the sweep) except the eval step of a
run in ``unfinished``.
"""

import hashlib
import json
from pathlib import Path

# name -> kind of the data steps every run shares, in pipeline order
DATA = {
    "prompts": "world_prompts",
    "sim_hsa": "sim_data",
    "base_data": "world_base",
    "tokenizer": "tokenizer",
}
# step name -> compute seconds in its done.json
SECONDS = {
    "prompts": 1.5,
    "sim_hsa": 4.0,
    "base_data": 2.5,
    "tokenizer": 3.0,
    "sim_wo": 3.5,
    "base": 60.0,
    "sft": 40.0,
    "opd": 20.0,
    "rl": 30.0,
    "eval": 12.0,
    "replay": 8.0,
}
DECISION_EVERY = 8  # SFT stages log decision accuracy every this many steps


def decision_metrics(step: int) -> dict:
    """The decision probe's keys at ``step`` (every ``DECISION_EVERY``)."""
    if step % DECISION_EVERY:
        return {}
    acc = min(0.2 + 0.02 * step, 0.95)
    kinds = {"tool": acc, "argument": acc - 0.1, "skill": acc + 0.02, "number": 0.5}
    return {"train/decision_accuracy": acc} | {
        f"train/decision/{k}": v for k, v in kinds.items()
    }


def finished(k: int) -> str:
    """The ``k``-th done.json's "finished" time."""
    return f"2026-12-01T{10 + k // 60:02d}:{k % 60:02d}:00"


def _done(path: Path, name: str, spec: dict, info: dict, clock) -> None:
    key = name if name in SECONDS else "sim_wo"
    record = {
        "step": name,
        "kind": spec["kind"],
        "hash": path.name.rsplit("-", 1)[-1],
        "seconds": SECONDS[key],
        "attempts": 1,
        "seconds_all": SECONDS[key],
        "untimed_before": False,
        "finished": finished(clock[0]),
        "spec": spec,
        "info": info,
    }
    clock[0] += 1
    path.mkdir(parents=True, exist_ok=True)
    (path / "done.json").write_text(json.dumps(record), encoding="utf-8")


def _folder(name: str, variant: str = "") -> str:
    digest = hashlib.sha256(f"{name}/{variant}".encode()).hexdigest()[:12]
    return f"_steps/{name}-{digest}"


def _last_step(path: Path) -> dict:
    rows = (path / "metrics.jsonl").read_text().splitlines()
    last = json.loads(rows[-1])
    return {"steps": last["step"], "train/loss": last.get("train/loss")}


def write_steps(
    root: Path,
    name: str,
    stages: dict,
    clock: list[int],
    *,
    leave_out=None,
    replay=None,
    done=True,
) -> tuple[dict[str, str], dict[str, dict]]:
    """Writes ``name``'s step folders (a shared one once).

    Args:
      stages: run.json's ``stages`` (label -> {"path"}); absolute paths are
        made relative to ``root`` as the driver writes them.
      clock: [done.json files written so far] (their "finished" minutes).
      leave_out: the HSA dimension the run's SFT data leaves out.
      replay: the replay step's folder (relative to ``root``).
      done: False: the eval step has no done.json (the run is still running).

    Returns:
      config.json's ``step_folders`` and ``steps`` (step name -> spec).
    """
    steps = [(s, _folder(s), {"kind": k, "seed": 0}) for s, k in DATA.items()]
    if leave_out:
        step = f"sim_wo_{leave_out}"
        steps.append((step, _folder(step), {"kind": "sim_data", "seed": 0}))
    for label, s in stages.items():
        path = Path(s["path"])
        rel = str(path.relative_to(root)) if path.is_absolute() else s["path"]
        stage = "sft" if label == "base" else label
        steps.append((label, rel, {"kind": "train", "stage": stage}))
    steps.append(("eval", _folder("eval", name), {"kind": "eval"}))
    if replay:
        steps.append(("replay", replay, {"kind": "replay"}))
    for step, rel, spec in steps:
        path = root / rel
        if (path / "done.json").exists() or (step == "eval" and not done):
            path.mkdir(parents=True, exist_ok=True)
            continue
        info = {"stage": spec["stage"], **_last_step(path)} if "stage" in spec else {}
        _done(path, step, spec, info, clock)
    return {s: rel for s, rel, _ in steps}, {s: spec for s, _, spec in steps}
