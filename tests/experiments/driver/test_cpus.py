"""CPU pinning of sweep workers (`hat sweep --pin-cores`, `hat run --cpus`)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

import pytest

from experiments.driver import cpus, sweep_cmd

ALLOWED = sorted(os.sched_getaffinity(0))


def test_parse_reads_lists_and_ranges():
    assert cpus.parse("0") == (0,)
    assert cpus.parse("3,0-1") == (0, 1, 3)
    assert cpus.parse(" 2-2 , 2") == (2,)
    for bad in ("", "a", "1-", "-1", "3-1", "0,,1", "0-99999", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            cpus.parse(bad)


def test_slices_are_disjoint_contiguous_and_cover_the_cpus():
    assert cpus.slices([0, 1], 2) == [(0,), (1,)]
    assert cpus.slices([3, 0, 1, 2], 2) == [(0, 1), (2, 3)]
    assert cpus.slices([0, 1, 2, 3, 4], 2) == [(0, 1, 2), (3, 4)]
    assert cpus.slices([5, 7], 1) == [(5, 7)]
    with pytest.raises(ValueError, match="at most one worker per CPU"):
        cpus.slices([0, 1], 3)
    with pytest.raises(ValueError):
        cpus.slices([0, 1], 0)


def test_pin_refuses_cpus_this_process_may_not_use():
    with pytest.raises(ValueError, match="may run only on"):
        cpus.pin([max(ALLOWED) + 1000])
    with pytest.raises(ValueError, match="may run only on"):
        cpus.pin([])


def test_pin_sets_the_affinity_of_a_fresh_process():
    # in a child: pinning the test process would slow the rest of the run
    code = (
        "import os; from experiments.driver import cpus; "
        f"cpus.pin([{ALLOWED[-1]}]); print(sorted(os.sched_getaffinity(0)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"[{ALLOWED[-1]}]"


CONFIG = '''
"""Three runs sharing a data step, each with its own two steps (tests)."""
import ml_collections
from hat_jax.cli.config_flags import parse_arg_string

K = "toy_cpus"

def get_config(arg=None):
    a = parse_arg_string(arg, {"run": "one"})
    c = ml_collections.ConfigDict()
    c.name = a.run
    c.meta = {"name": a.run, "row": a.run, "group": "main", "sft": None,
              "opd": False, "rl": False, "leave_out": None, "scale": "toy"}
    c.steps = {
        "data": {"kind": K, "tag": "data"},
        "model": {"kind": K, "tag": "m-" + a.run, "inputs": ("@data/out.txt",)},
        "eval": {"kind": K, "tag": "e-" + a.run, "inputs": ("@model/out.txt",)},
    }
    c.stages = {"sft": "model"}
    c.eval_step = "eval"
    return c

def sweep(add, arg=None):
    for run in ("one", "two", "three"):
        add(run, run=run)
'''

AFFINITY_STEP = """
import os
from pathlib import Path
from experiments.driver import registry

def _where(p, out, *, progress):
    (Path(out) / "out.txt").write_text(p["tag"])
    (Path(out) / "summary.json").write_text('{"metrics": {}}')
    return {"cpus": sorted(os.sched_getaffinity(0)), "tag": p["tag"]}

if "toy_cpus" not in registry._KINDS:
    registry.register("toy_cpus")(_where)
"""


def _affinity_sweep(tmp_path, *extra):
    tmp_path.mkdir(exist_ok=True)
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(AFFINITY_STEP) + textwrap.dedent(CONFIG))
    root = tmp_path / "root"
    argv = ["--config", str(cfg), "--root", str(root), "--jax-cache", "", *extra]
    assert sweep_cmd.main(argv) == 0
    seen = {}
    for done in (root / "_steps").glob("*/done.json"):
        info = json.loads(done.read_text())["info"]
        seen[info["tag"]] = tuple(info["cpus"])
    return root, seen


@pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning two workers needs 2 CPUs")
def test_pinned_workers_each_run_on_their_own_slice(tmp_path):
    root, seen = _affinity_sweep(tmp_path, "--workers", "2", "--pin-cores")
    halves = set(cpus.slices(ALLOWED, 2))
    # every run's own steps (model, eval) ran on one worker's half of the CPUs
    for run in ("one", "two", "three"):
        assert seen[f"m-{run}"] in halves and seen[f"e-{run}"] == seen[f"m-{run}"]
        log = (root / run / "log.txt").read_text()
        assert f"on CPUs {','.join(map(str, seen[f'm-{run}']))}" in log
    # the third run took the slice a finished run gave back
    assert len({seen[f"m-{r}"] for r in ("one", "two", "three")}) <= 2


def test_pin_cores_needs_workers_and_at_most_one_per_cpu(tmp_path, capsys):
    cfg = tmp_path / "toy_cfg.py"
    cfg.write_text(textwrap.dedent(CONFIG))
    base = ["--config", str(cfg), "--root", str(tmp_path / "r"), "--jax-cache", ""]
    assert sweep_cmd.main([*base, "--pin-cores"]) == 1
    assert "needs --workers" in capsys.readouterr().err
    too_many = str(len(ALLOWED) + 1)
    assert sweep_cmd.main([*base, "--pin-cores", "--workers", too_many]) == 1
    assert "at most one worker per CPU" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before any work
