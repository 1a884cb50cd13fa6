"""The driver's mechanics on toy step kinds: hashing, dedup, resume, layout."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import pytest

from experiments.driver import pipeline, registry, run_cmd, sweep_cmd
from experiments.driver.runs import execute_run, load_runs

CALLS: list[str] = []


def _toy(p, out: Path, *, progress: bool):
    CALLS.append(p["tag"])
    if p.get("fail"):
        raise RuntimeError(f"toy step {p['tag']} fails")
    text = "".join(Path(f).read_text() for f in p.get("inputs", ()))
    (out / "out.txt").write_text(text + p["tag"] + ";")
    if p.get("summary"):
        (out / "summary.json").write_text(json.dumps({"metrics": {"x": 1.0}}))
    return {"tag": p["tag"]}


if "toy" not in registry._KINDS:
    registry.register("toy")(_toy)


def toy(tag: str, *inputs: str, **kw) -> dict:
    return {"kind": "toy", "tag": tag, "inputs": inputs, **kw}


CHAIN = {
    "data": toy("data"),
    "model": toy("model", "@data/out.txt"),
    "eval": toy("eval", "@model/out.txt", summary=True),
}


def test_hash_depends_on_params_and_inputs(tmp_path):
    a = {s.name: s for s in pipeline.plan(CHAIN, tmp_path)}
    b = {s.name: s for s in pipeline.plan({**CHAIN, "data": toy("other")}, tmp_path)}
    c = {s.name: s for s in pipeline.plan({**CHAIN, "eval": toy("e2")}, tmp_path)}
    assert a["data"].hash != b["data"].hash
    assert a["model"].hash != b["model"].hash  # an input changed
    assert a["model"].hash == c["model"].hash and a["eval"].hash != c["eval"].hash
    assert a["model"].deps == ("data",)
    assert a["model"].path == tmp_path / "_steps" / f"model-{a['model'].hash}"
    # est_s describes a step; it does not change what it computes
    d = pipeline.plan({**CHAIN, "data": toy("data", est_s=99.0)}, tmp_path)
    assert d[0].hash == a["data"].hash


def test_plan_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown step kind"):
        pipeline.plan({"x": {"kind": "nope"}}, tmp_path)
    with pytest.raises(ValueError, match="unknown steps"):
        pipeline.plan({"x": toy("x", "@missing/f")}, tmp_path)
    with pytest.raises(ValueError, match="cycle"):
        pipeline.plan({"x": toy("x", "@y/f"), "y": toy("y", "@x/f")}, tmp_path)


def test_references_resolve_to_folders(tmp_path):
    steps = {s.name: s for s in pipeline.plan(CHAIN, tmp_path)}
    p = pipeline.resolved(steps["model"], steps)
    assert p["inputs"] == [str(steps["data"].path.resolve() / "out.txt")]
    assert pipeline.references({"o": ["data.train=@sim/x.jsonl", "init=@base"]}) == (
        "sim",
        "base",
    )


def test_resume_recomputes_only_unfinished_steps(tmp_path):
    steps = pipeline.plan(CHAIN, tmp_path)
    by_name = {s.name: s for s in steps}
    CALLS.clear()

    def interrupt(step):
        if step.name == "eval":
            raise KeyboardInterrupt  # a kill between steps

    with pytest.raises(KeyboardInterrupt):
        for s in steps:
            pipeline.execute(s, by_name, before=interrupt)
    assert CALLS == ["data", "model"]
    assert not (by_name["eval"].path / "done.json").exists()
    CALLS.clear()
    outcomes = [pipeline.execute(s, by_name) for s in steps]
    assert CALLS == ["eval"]
    assert [o.cached for o in outcomes] == [True, True, False]
    assert (by_name["eval"].path / "out.txt").read_text() == "data;model;eval;"


CONFIG = '''
"""A toy pipeline config (tests)."""
import ml_collections
from hat_jax.cli.config_flags import parse_arg_string

def get_config(arg=None):
    a = parse_arg_string(arg, {"run": "one", "fail": False})
    tail = a.run
    c = ml_collections.ConfigDict()
    c.name = a.run
    c.meta = {"name": a.run, "row": a.run, "group": "main", "sft": None,
              "opd": False, "rl": False, "leave_out": None, "scale": "toy"}
    c.steps = {
        "data": {"kind": "toy", "tag": "data"},
        "model": {"kind": "toy", "tag": "m-" + tail, "inputs": ("@data/out.txt",),
                  "fail": a.fail},
        "eval": {"kind": "toy", "tag": "e-" + tail, "inputs": ("@model/out.txt",),
                 "summary": True},
    }
    c.stages = {"sft": "model"}
    c.eval_step = "eval"
    return c

def sweep(add, arg=None):
    add("one", run="one")
    add("two", run="two", fail=True)
    add("three", run="three")
'''


def test_sweep_continues_after_a_failure_and_shares_steps(tmp_path, capsys):
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    root = tmp_path / "root"
    parser = argparse.ArgumentParser()
    sweep_cmd.add_arguments(parser)
    args = parser.parse_args(["--config", str(cfg), "--root", str(root)])
    args.jax_cache = ""
    CALLS.clear()
    assert sweep_cmd.run(args) == 1  # run "two" failed
    assert CALLS.count("data") == 1  # one data step for three runs
    assert json.loads((root / "sweep.json").read_text())["runs"] == [
        "one",
        "two",
        "three",
    ]
    assert json.loads((root / "two" / "run.json").read_text())["status"] == "failed"
    for run in ("one", "three"):
        rec = json.loads((root / run / "run.json").read_text())
        assert rec["status"] == "done"
        assert (root / rec["stages"]["sft"]["path"] / "out.txt").exists()
        assert json.loads((root / run / "eval" / "summary.json").read_text())
        assert json.loads((root / run / "config.json").read_text())["meta"]["row"]
    out = capsys.readouterr()
    assert "run two failed" in out.err and "summary" in out.out
    CALLS.clear()
    assert sweep_cmd.run(args) == 1
    assert CALLS == ["m-two"]  # finished runs skipped; the failed one retried


def test_execute_run_records_a_failure(tmp_path, monkeypatch):
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    runs, has_sweep = load_runs(f"{cfg}:run=solo,fail=true", tmp_path, use_sweep=False)
    assert has_sweep and [r.name for r in runs] == ["solo"]
    with pytest.raises(RuntimeError):
        execute_run(runs[0], tmp_path)
    rec = json.loads((tmp_path / "solo" / "run.json").read_text())
    assert rec["status"] == "failed" and "toy step" in rec["error"]


def test_run_cmd_runs_one_run_of_the_sweep(tmp_path, capsys):
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    root = tmp_path / "root"
    argv = ["--config", str(cfg), "--root", str(root), "--jax-cache", ""]
    assert run_cmd.main([*argv, "--run", "three"]) == 0
    assert json.loads((root / "three" / "run.json").read_text())["status"] == "done"
    assert not (root / "one").exists()
    assert run_cmd.main([*argv, "--run", "two"]) == 1  # fails, reported
    assert "run two failed" in capsys.readouterr().err
    assert run_cmd.main([f"--config={cfg}:run=solo", "--root", str(root)]) == 0
    assert (root / "solo" / "eval" / "summary.json").exists()
    assert run_cmd.main([*argv, "--run", "nope"]) == 1  # one line, no traceback
    assert "hat run: error: " in (err := capsys.readouterr().err)
    assert "declares no run" in err and "Traceback" not in err


SELF_REGISTERING = """
import os
from pathlib import Path
from experiments.driver import registry

def _write(p, out, *, progress):
    (Path(out) / "summary.json").write_text('{"metrics": {}}')
    return {"pid": os.getpid()}

if "toy_file" not in registry._KINDS:
    registry.register("toy_file")(_write)
"""


def test_sweep_with_workers_runs_runs_in_processes(tmp_path):
    cfg = tmp_path / "toy_cfg.py"
    text = textwrap.dedent(CONFIG).replace('"kind": "toy"', '"kind": "toy_file"')
    cfg.write_text(textwrap.dedent(SELF_REGISTERING) + text.replace("fail=True", ""))
    root = tmp_path / "root"
    argv = ["--config", str(cfg), "--root", str(root), "--workers", "2"]
    assert sweep_cmd.main([*argv, "--jax-cache", ""]) == 0
    for run in ("one", "two", "three"):
        rec = json.loads((root / run / "run.json").read_text())
        assert rec["status"] == "done" and (root / run / "log.txt").exists()
    assert len(list((root / "_steps").glob("data-*"))) == 1


def test_sweep_only_adds_to_the_listed_runs(tmp_path):
    """`--only` adds its runs to ROOT/sweep.json in the config's order; another
    config's (or an unreadable) sweep.json is replaced, not merged."""
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    root = tmp_path / "root"
    parser = argparse.ArgumentParser()
    sweep_cmd.add_arguments(parser)

    def sweep(only):
        args = parser.parse_args(
            ["--config", str(cfg), "--root", str(root), "--only", only]
        )
        args.jax_cache = ""
        sweep_cmd.run(args)
        return json.loads((root / "sweep.json").read_text())["runs"]

    assert sweep("three") == ["three"]
    assert sweep("one") == ["one", "three"]
    assert sweep("three") == ["one", "three"]
    info = json.loads((root / "sweep.json").read_text())
    (root / "sweep.json").write_text(json.dumps(info | {"arg": "other"}))
    assert sweep("one") == ["one"]
    (root / "sweep.json").write_text("{not json")
    assert sweep("three") == ["three"]
