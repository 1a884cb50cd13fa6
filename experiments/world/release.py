"""The base as a release: a HF folder, its model card and premise table.

:func:`write_release` turns the base stage's workdir into what a downloaded base
is (``hat export``'s folder: safetensors, config, generation config, tokenizer,
chat template), adds ``premise.json`` (:mod:`experiments.world.premise` over the
base's evaluation) and ``README.md`` (the model card: data sizes, steps, wall
time, CPU, the premise table) and ends with ``SHA256SUMS`` over every other
file. The folder appears whole or not at all (written under a temporary name,
then renamed). :func:`verify_release` checks a folder against its sums.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from experiments.world.premise import premise_checks, premise_markdown
from hat_jax.assets import sha256_file

SUMS = "SHA256SUMS"
CARD = "README.md"


def _done(step: Path) -> dict[str, Any]:
    path = step / "done.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _devices(d: Any) -> str:
    if not isinstance(d, dict):
        return "devices unknown"
    return f"{d.get('count')} {d.get('platform')} device(s), {d.get('kind')}"


def _trained_tokens(workdir: Path) -> int:
    """Tokens the loss was taken on, summed over the run's logged steps."""
    path = workdir / "metrics.jsonl"
    if not path.is_file():
        return 0
    total = 0.0
    for line in path.read_text().splitlines():
        row = json.loads(line)
        total += float(row.get("train/loss_tokens", 0.0))
    return int(total)


def _card(info: dict[str, Any], table: str) -> str:
    data = "; ".join(
        f"{step}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items())
        for step, counts in info["data"].items()
    )
    held = sum(c["passed"] for c in info["premise"])
    return f"""# {info["name"]}: the generalist base of the tiny world

A {info["model"]} trained from scratch on the generalist base world
(`experiments/world/apps`: episodes in generated apps of 38 domains, none of
them live-stream e-commerce, every identifier drawn fresh per episode; plus
IFEval-style constrained instructions and chit-chat). It never saw taolive:
neither its data nor its tokenizer. The paper's runs start from it as the paper
starts from a downloaded base (`experiments/configs/hat_tiny.py`).

- Data (examples): {data}.
- Training: {info["steps"]:,} steps of {info["batch"]} ({info["slots"]:,} token
  slots, {info["trained_tokens"]:,} of them trained), {info["wall"]}.
- Built on: {info["cpu"]} ({info["devices"]}).
- Rebuild: `make world-base` (docs/results/world_base.md has the run).

## Premise (before any taolive training): {held} of {len(info["premise"])} hold

{table}
Values in %, 95 % Wilson intervals for success shares; n = evaluated cases.
Files and their sha256: `{SUMS}`.
"""


def write_release(
    *,
    model: Path,
    evaluation: Path,
    data_steps: dict[str, Path],
    out: Path,
    name: str = "world_base",
) -> dict[str, Any]:
    """Writes the release folder ``out`` (replacing a finished one only when
    the new one is complete); returns its info (what ``premise.json`` holds)."""
    from hat_jax.cli.env_cmd import cpu_model
    from serving.export import export

    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    export(str(model), tmp)
    summary = json.loads((evaluation / "summary.json").read_text())
    checks = premise_checks(summary)
    base = _done(model)
    cfg = json.loads((model / "config.json").read_text())
    data = {
        name: {k: int(v) for k, v in _done(step).get("info", {}).items()}
        for name, step in data_steps.items()
    }
    seconds = float(base.get("seconds_all", base.get("seconds", 0.0)))
    mc = cfg.get("model", cfg)  # a train workdir's config, or a HF config
    steps = int(cfg.get("train", {}).get("steps", 0))
    info = {
        "name": name,
        "model": (
            f"{mc.get('num_hidden_layers')}-layer {mc.get('model_type')} (hidden "
            f"{mc.get('hidden_size')}, vocab {mc.get('vocab_size')}, MTP layers "
            f"{mc.get('mtp_num_hidden_layers', 0)})"
        ),
        "data": data,
        "steps": steps,
        "slots": steps * int(cfg.get("batch_size", 0)) * int(cfg.get("seq_len", 0)),
        "trained_tokens": _trained_tokens(model),
        "batch": f"{cfg.get('batch_size')} x {cfg.get('seq_len')} tokens",
        "wall": f"{seconds / 3600:.2f} h of step compute",
        "cpu": cpu_model(),
        "devices": _devices((base.get("provenance") or {}).get("devices")),
        "premise": [c.__dict__ for c in checks],
        "premise_holds": all(c.passed for c in checks),
    }
    (tmp / "premise.json").write_text(json.dumps(info, indent=1) + "\n")
    (tmp / CARD).write_text(_card(info, premise_markdown(checks)))
    files = sorted(p for p in tmp.rglob("*") if p.is_file())
    sums = "".join(f"{sha256_file(p)}  {p.relative_to(tmp)}\n" for p in files)
    (tmp / SUMS).write_text(sums)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return info


def verify_release(folder: Path) -> list[str]:
    """Problems of a release folder against its ``SHA256SUMS`` (empty: none)."""
    sums = folder / SUMS
    if not sums.is_file():
        return [f"{sums}: missing"]
    out, listed = [], set()
    for i, line in enumerate(sums.read_text().splitlines(), 1):
        digest, _, rel = line.partition("  ")
        listed.add(rel)
        path = folder / rel
        if not path.is_file():
            out.append(f"{sums}:{i}: {rel} is missing")
        elif sha256_file(path) != digest:
            out.append(f"{sums}:{i}: {rel} does not match its sha256")
    extra = [
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and p.name != SUMS and str(p.relative_to(folder)) not in listed
    ]
    return out + [f"{folder / e}: not in {SUMS}" for e in sorted(extra)]


def copy_release(root: Path, run: str, out: Path) -> dict[str, Any]:
    """Copies run ``run``'s release folder under ``root`` to ``out`` (verified
    first; ``out`` replaced whole); returns its ``premise.json``."""
    config = root / run / "config.json"
    if not config.is_file():
        raise ValueError(f"{config}: no such run (run `make world-base` first)")
    folders = json.loads(config.read_text()).get("step_folders", {})
    if "release" not in folders:
        raise ValueError(f"{config}: the run has no release step")
    src = root / folders["release"] / "release"
    problems = verify_release(src)
    if problems:
        raise ValueError("; ".join(problems[:3]))
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return json.loads((out / "premise.json").read_text())
