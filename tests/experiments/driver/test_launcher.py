"""`hat sweep --launcher local`: steps as submitit jobs, in dependency order.

The toy config below registers its own step kind (the jobs are fresh
processes), which records its process, rank and start/end times. Runs `one`,
`two` (whose model step fails) and `three` share the data step; `hosts` has a
step planned on two hosts, which runs as two tasks joined into one JAX runtime.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("submitit")

from experiments.driver import launch, pipeline, sweep_cmd  # noqa: E402
from experiments.driver.runs import load_runs  # noqa: E402

CONFIG = """
import json, os, time
from pathlib import Path
import ml_collections
from experiments.driver import registry
from hat_jax.cli.config_flags import parse_arg_string

def _toy(p, out, *, progress):
    t0 = time.time()
    if p.get("fail"):
        raise RuntimeError("toy step fails on purpose")
    rank, n = 0, 1
    if p.get("hosts"):
        import jax
        rank, n = jax.process_index(), jax.process_count()
    text = "".join(Path(f).read_text() for f in p.get("inputs", ()))
    time.sleep(0.3)
    (Path(out) / f"rank{rank}.json").write_text(json.dumps({"n": n}))
    if rank == 0:
        (Path(out) / "out.txt").write_text(text + p["tag"] + ";")
        (Path(out) / "summary.json").write_text('{"metrics": {}}')
    return {"pid": os.getpid(), "start": t0, "end": time.time(), "tasks": n}

if "toy_job" not in registry._KINDS:
    registry.register("toy_job")(_toy)

def get_config(arg=None):
    a = parse_arg_string(arg, {"run": "one", "fail": False, "hosts": 1})
    c = ml_collections.ConfigDict()
    c.name = a.run
    c.meta = {"name": a.run, "row": a.run, "group": "main", "sft": None,
              "opd": False, "rl": False, "leave_out": None, "scale": "toy"}
    model = {"kind": "toy_job", "tag": "m-" + a.run, "fail": a.fail,
             "inputs": ("@data/out.txt",)}
    if a.hosts > 1:
        model |= {"nodes": a.hosts, "hosts": True}
    c.steps = {
        "data": {"kind": "toy_job", "tag": "data"},
        "model": model,
        "eval": {"kind": "toy_job", "tag": "e-" + a.run,
                 "inputs": ("@model/out.txt",)},
    }
    c.stages = {"sft": "model"}
    c.eval_step = "eval"
    return c

def sweep(add, arg=None):
    add("one", run="one")
    add("two", run="two", fail=True)
    add("three", run="three")
    add("hosts", run="hosts", hosts=2)
"""


def _info(root: Path, run: str, step: str) -> dict:
    folder = json.loads((root / run / "config.json").read_text())["step_folders"]
    return json.loads((root / folder[step] / "done.json").read_text())["info"]


def test_job_shape_gives_multi_host_steps_one_task_per_host(tmp_path):
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    runs, _ = load_runs(str(cfg), tmp_path)
    by_run = {r.name: r.by_name for r in runs}
    multi, single = by_run["hosts"]["model"], by_run["one"]["model"]
    assert launch.job_shape(multi, "slurm") == {"nodes": 2, "tasks_per_node": 1}
    assert launch.job_shape(multi, "local") == {"tasks_per_node": 2}
    assert launch.job_shape(single, "slurm") == {"nodes": 1, "tasks_per_node": 1}
    # where a step runs is not what it computes: nodes is not hashed
    data = by_run["hosts"]["data"].spec
    spec = {k: v for k, v in multi.spec.items() if k != "nodes"}
    again = pipeline.plan({"data": data, "model": spec}, tmp_path)[1]
    assert again.hash == multi.hash


def test_parse_params():
    got = launch.parse_params(["timeout_min=60", "slurm_partition=gpu", "x=1.5"])
    assert got == {"timeout_min": 60, "slurm_partition": "gpu", "x": 1.5}
    assert launch.parse_params(["flag=True"]) == {"flag": True}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        launch.parse_params(["nokey"])


def test_local_launcher_runs_the_sweep_as_jobs_in_dependency_order(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(Path(__file__).resolve().parents[3])  # jobs import experiments
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    root = tmp_path / "root"
    argv = ["--config", str(cfg), "--root", str(root), "--jax-cache", ""]
    argv += ["--launcher", "local", "--launcher-arg", "timeout_min=10"]
    assert sweep_cmd.main(argv) == 1  # run two fails; the others finish
    out, err = capsys.readouterr()
    for run in ("one", "three", "hosts"):
        rec = json.loads((root / run / "run.json").read_text())
        assert rec["status"] == "done", run
        assert (root / run / "eval" / "summary.json").exists()
        data, model, ev = (_info(root, run, s) for s in ("data", "model", "eval"))
        assert data["end"] <= model["start"] and model["end"] <= ev["start"]
        assert len({data["pid"], model["pid"], ev["pid"]}) == 3  # one job each
    # the data step is shared: one folder, computed once
    assert len(list((root / "_steps").glob("data-*"))) == 1
    assert out.count("data (toy_job, 1 task(s)): job") == 1
    # run two: its model step failed, its eval was never submitted
    two = json.loads((root / "two" / "run.json").read_text())
    assert two["status"] == "failed" and "model failed" in two["error"]
    assert "toy step fails on purpose" in out and "not run (an input failed)" in out
    assert "run two failed" in err
    assert len(list((root / "_steps").glob("eval-*"))) == 3
    # the two-host step: one job of two tasks in one JAX runtime; task 0 records
    assert "model (toy_job, 2 task(s))" in out
    hosts = (
        root
        / json.loads((root / "hosts" / "config.json").read_text())["step_folders"][
            "model"
        ]
    )
    assert json.loads((hosts / "rank0.json").read_text()) == {"n": 2}
    assert json.loads((hosts / "rank1.json").read_text()) == {"n": 2}
    assert _info(root, "hosts", "model")["tasks"] == 2
    assert list((root / "_submitit").glob("*_log.out"))  # the job logs
    # again: finished runs are skipped, the failed one is retried (and fails)
    assert sweep_cmd.main(argv) == 1
    out = capsys.readouterr().out
    assert "[one] finished earlier; skipped" in out and "data (toy_job" not in out


def test_step_cmd_refuses_a_step_the_plan_no_longer_has(tmp_path, capsys):
    from experiments.driver import step_cmd

    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    argv = ["--config", str(cfg), "--root", str(tmp_path), "--jax-cache", ""]
    assert step_cmd.main([*argv, "--step", "model-000000000000"]) == 2
    assert "plans no step 'model-000000000000'" in capsys.readouterr().err
    runs, _ = load_runs(str(cfg), tmp_path)
    model = runs[0].by_name["model"]
    assert step_cmd.main([*argv, "--step", model.path.name]) == 2  # data not done
    assert "inputs not done: ['data']" in capsys.readouterr().err
    assert not model.path.exists()


def test_task_reads_slurm_then_local_variables():
    from experiments.driver.step_cmd import task

    assert task({}) == (0, 1)
    assert task({"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}) == (3, 4)
    local = {"SUBMITIT_LOCAL_GLOBALID": "1", "SUBMITIT_LOCAL_NTASKS": "2"}
    assert task(local) == (1, 2)
