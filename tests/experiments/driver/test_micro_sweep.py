"""The whole HAT pipeline at micro scale through `hat sweep` (hat_tiny.py:scale=micro).

Two runs: `hat` (world data, tokenizer, base, HSA-SFT, OPD, HSA-RL, eval, a
standalone MTP head, the latency replay) and `hsa_sft`, which shares its prefix.
The first sweep is interrupted inside the OPD step; the second resumes without
recomputing anything finished. XLA executables go to pytest's cache folder, so
a second session compiles little. Measured on the 2-core machine: 77 s with an
empty XLA cache before the MTP head and the replay (4.7 min while a tiny sweep
ran beside it); 111 s with them while an RL run and a CI run shared the cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from experiments.driver import registry, sweep_cmd

CONFIG = "experiments/configs/hat_tiny.py:scale=micro"
SUITES = ("t1", "t2", "t3", "edit", "ifeval", "ifeval_proxy")
META = {"name", "row", "group", "sft", "opd", "rl", "leave_out", "scale"}


@pytest.fixture
def xla_cache(request):
    """The sweep's XLA cache folder (tests/conftest.py restores the settings)."""
    return str(request.config.cache.mkdir("hat_driver_xla"))


@pytest.fixture
def computed(monkeypatch):
    """Every step computed (name, kind); OPD raises the first time it runs."""
    log: list[tuple[str, str]] = []
    state = {"interrupted": False}
    registry.get("train")  # imports the built-in kinds
    for name in list(registry._KINDS):
        kind = registry._KINDS[name]

        def run(p, out, *, progress, _kind=kind):
            log.append((Path(out).name.rsplit("-", 1)[0], _kind.name))
            if p.get("stage") == "opd" and not state["interrupted"]:
                state["interrupted"] = True
                raise RuntimeError("interrupted inside OPD (test)")
            return _kind.run(p, out, progress=progress)

        monkeypatch.setitem(registry._KINDS, name, dataclasses.replace(kind, run=run))
    return log


def _sweep(root: Path, cache: str) -> int:
    parser = argparse.ArgumentParser()
    sweep_cmd.add_arguments(parser)
    argv = ["--config", CONFIG, "--root", str(root), "--only", "hat,hsa_sft"]
    return sweep_cmd.run(parser.parse_args([*argv, "--jax-cache", cache, "--no-bars"]))


def test_micro_sweep_layout_resume_and_dedup(tmp_path, xla_cache, computed):
    root = tmp_path / "runs"
    assert _sweep(root, xla_cache) == 1  # `hat` stopped in OPD; hsa_sft finished
    first = list(computed)
    assert ("opd", "train") in first and ("rl", "train") not in first
    hat = json.loads((root / "hat" / "run.json").read_text())
    assert hat["status"] == "failed" and "interrupted inside OPD" in hat["error"]
    assert json.loads((root / "hsa_sft" / "run.json").read_text())["status"] == "done"

    computed.clear()
    assert _sweep(root, xla_cache) == 0
    # finished steps are not recomputed: only OPD (resumed) and what follows it
    assert computed == [
        ("opd", "train"),
        ("rl", "train"),
        ("eval", "eval"),
        ("mtp", "train"),
        ("replay", "replay"),
    ]
    assert len(list((root / "_steps").glob("base-*"))) == 1
    assert len(list((root / "_steps").glob("sft-*"))) == 1

    sweep = json.loads((root / "sweep.json").read_text())
    assert sweep["runs"] == ["hsa_sft", "hat"] and sweep["scale"] == "micro"
    assert sweep["config"].endswith("hat_tiny.py") and sweep["arg"] == "scale=micro"
    folders = {}
    for name, stages in (
        ("hsa_sft", {"base", "sft"}),
        ("hat", {"base", "sft", "opd", "rl", "mtp"}),
    ):
        run_dir = root / name
        cfg = json.loads((run_dir / "config.json").read_text())
        assert set(cfg["meta"]) >= META and cfg["meta"]["name"] == name
        rec = json.loads((run_dir / "run.json").read_text())
        assert rec["status"] == "done" and isinstance(rec["seconds"], float)
        assert set(rec["stages"]) == stages
        for stage in rec["stages"].values():
            assert (root / stage["path"] / "config.json").exists()
            assert stage["seconds"] > 0
        folders[name] = {k: v["path"] for k, v in rec["stages"].items()}
        summary = json.loads((run_dir / "eval" / "summary.json").read_text())
        assert set(summary["suites"]) == set(SUITES)
        for suite in SUITES:
            assert (run_dir / "eval" / suite / "records.jsonl").exists()
    meta = json.loads((root / "hat" / "config.json").read_text())["meta"]
    assert meta["row"].startswith("HAT") and meta["opd"] and meta["rl"]
    assert meta["sft"] == "hsa" and meta["leave_out"] is None
    # shared prefix: both runs point at the same base and HSA-SFT folders
    assert folders["hat"]["base"] == folders["hsa_sft"]["base"]
    assert folders["hat"]["sft"] == folders["hsa_sft"]["sft"]
    # OPD's teacher is the base model; RL starts from OPD
    opd = json.loads((root / folders["hat"]["opd"] / "config.json").read_text())
    assert Path(opd["init_teacher_from"]).name == Path(folders["hat"]["base"]).name
    assert Path(opd["init_from"]).name == Path(folders["hat"]["sft"]).name
    # the interrupted OPD step's time counts both its attempts; the others one
    done = json.loads((root / folders["hat"]["opd"] / "done.json").read_text())
    assert done["attempts"] == 2 and done["seconds_all"] > done["seconds"] > 0
    rl = json.loads((root / folders["hat"]["rl"] / "done.json").read_text())
    assert rl["attempts"] == 1 and rl["untimed_before"] is False
    steps = json.loads((root / "hat" / "config.json").read_text())["step_folders"]
    _check_replay(root, {**folders["hat"], "replay": steps["replay"]})
    link = root / "hat" / "replay"  # the run folder links its replay, like eval/
    assert link.is_symlink() and (link / "trace.jsonl").exists()


def _check_replay(root: Path, stages: dict[str, str]) -> None:
    """The standalone MTP head on the RL model, and the replay of both."""
    mtp = json.loads((root / stages["mtp"] / "config.json").read_text())
    assert mtp["mtp_only"] and mtp["model"]["mtp_num_hidden_layers"] == 1
    assert Path(mtp["init_from"]).name == Path(stages["rl"]).name
    replay = root / stages["replay"]
    assert (replay / "trace.jsonl").exists()
    heads = json.loads((replay / "config.json").read_text())["heads"]
    assert heads["co_trained"]["status"].startswith("skipped")  # no head in RL
    assert heads["base_head"]["status"].startswith("skipped")  # nor in the base
    assert Path(heads["base_head"]["head"]).name == Path(stages["base"]).name
    for head, k in (("mtp_off", 0), ("standalone", 1)):
        assert heads[head]["status"] == "done"
        out = json.loads((replay / head / "replay.json").read_text())
        assert out["options"]["mtp_k"] == k and out["clock"] == "virtual"
        assert [r["concurrency"] for r in out["runs"]] == [1, 2]
        for r in out["runs"]:
            assert r["summary"]["messages"] == 4 and r["summary"]["errors"] == 0
            assert (r["summary"]["mtp_acceptance_rate"] is None) == (k == 0)
        assert (replay / head / "latency_cdf.png").exists()
