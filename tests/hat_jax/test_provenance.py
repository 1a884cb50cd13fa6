"""hat_jax.provenance: the fields every record gets; git optional and bounded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hat_jax import provenance
from hat_jax.train.workdir import config_diff, open_run
from tests.provenance_checks import check_provenance

HAS_GIT = shutil.which("git") is not None


def test_collect_fields_and_types(monkeypatch):
    monkeypatch.setenv("HAT_TEST_TOKEN", "s3cr3t-t0ken")
    p = provenance.collect(config={"seed": 3})
    check_provenance(p, config=True)
    assert p["config"] == {"seed": 3} and p["argv"] == sys.argv
    assert "s3cr3t-t0ken" not in json.dumps(p)  # nothing from the environment
    check_provenance(provenance.collect())


def test_git_is_null_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "REPO_ROOT", tmp_path)
    assert provenance.collect()["git"] is None
    assert provenance.git_info(tmp_path / "missing") is None
    # a folder inside a checkout is not the checkout's top level
    if HAS_GIT and provenance.git_info(Path(__file__).parents[2]):
        assert provenance.git_info(Path(__file__).parent) is None


def test_git_is_null_without_a_git_binary(monkeypatch):
    monkeypatch.setattr(provenance, "GIT", "/nonexistent/bin/git")
    assert provenance.git_info() is None


def test_a_hanging_git_is_cut_off(tmp_path, monkeypatch):
    slow = tmp_path / "git"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(provenance, "GIT", str(slow))
    monkeypatch.setattr(provenance, "GIT_TIMEOUT_S", 0.2)
    t0 = time.perf_counter()
    assert provenance.git_info(tmp_path) is None
    assert time.perf_counter() - t0 < 10


@pytest.mark.skipif(not HAS_GIT, reason="no git binary")
def test_git_sha_and_dirty_flag(tmp_path):
    def git(*args):
        cmd = ["git", "-C", str(tmp_path), "-c", "user.name=t"]
        cmd += ["-c", "user.email=t@example.com", *args]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    assert provenance.git_info(tmp_path) is None  # no commit yet
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-q", "-m", "one")
    sha = git("rev-parse", "HEAD").strip()
    assert provenance.git_info(tmp_path) == {"sha": sha, "dirty": False}
    (tmp_path / "new.py").write_text("")  # untracked: not dirty (git describe)
    assert provenance.git_info(tmp_path)["dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert provenance.git_info(tmp_path) == {"sha": sha, "dirty": True}


def test_workdir_config_json_records_provenance(tmp_path):
    workdir = tmp_path / "w"
    run = open_run(workdir, {"seed": 1, "train": {"steps": 4}})
    run.commit(0)
    written = json.loads((workdir / "config.json").read_text())
    check_provenance(written.pop("provenance"))
    assert written == {"seed": 1, "train": {"steps": 4}}


def test_provenance_never_blocks_a_resume(tmp_path):
    """Another machine, command line or commit is no config change."""
    workdir = tmp_path / "w"
    (workdir / "ckpt" / "4").mkdir(parents=True)
    record = {"seed": 1, "train": {"steps": 4}}
    other = {"git": {"sha": "0" * 40, "dirty": True}, "argv": ["elsewhere"]}
    (workdir / "config.json").write_text(json.dumps({**record, "provenance": other}))
    assert config_diff({**record, "provenance": other}, record) == {}
    run = open_run(workdir, record)  # no ConfigChangeError
    assert run.changes == {}
    run.commit(4)
    assert not (workdir / "metrics.jsonl").exists()  # nothing recorded as changed
    new = json.loads((workdir / "config.json").read_text())["provenance"]
    assert new["argv"] == sys.argv
