"""Code-aware step keys: an edited source re-runs the steps that run it, and
their dependents, and no others; `--dry-run` says so and writes nothing.

The step kinds here are toys whose code entries point into a tmp copy of a
few source files (`codehash.CODE_ROOT` monkeypatched), so the test edits no
file of the repo and a sweep takes well under a second.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from experiments.driver import codehash, dryrun, pipeline, registry, run_cmd, sweep_cmd
from experiments.driver.progress import Progress, left_share, resume_point
from experiments.driver.registry import StepKind
from experiments.driver.runs import load_runs
from tests.provenance_checks import check_provenance

CALLS: list[str] = []
SOURCES = {
    "pkg/__init__.py": "",
    "pkg/shared.py": "SHARED = 1\n",
    "pkg/a.py": "A = 1\n",
    "pkg/b.py": "def loss(x):\n    return x\n",
    "pkg/c.py": "C = 1\n",
    "pkg/d.py": "D = 1\n",
    "pkg/data/labels.jsonl": '{"label": 1}\n',
    "pkg/notes.txt": "not hashed under a folder\n",
}
# kind -> its code entries: A -> B -> C, and D beside them. D hashes all of
# pkg/ (its data file included) but b.py; C only its own file.
KIND_CODE = {
    "cc_a": ("pkg/a.py", "pkg/shared.py"),
    "cc_b": ("pkg/b.py", "pkg/shared.py"),
    "cc_c": ("pkg/c.py",),
    "cc_d": ("pkg", "!pkg/b.py"),
}
CONFIG = '''
"""A micro sweep of toy steps (tests): a -> b -> c, and d."""
import ml_collections

def get_config(arg=None):
    c = ml_collections.ConfigDict()
    c.name = "micro"
    c.meta = {"name": "micro", "row": "micro", "group": "main", "sft": None,
              "opd": False, "rl": False, "leave_out": None, "scale": "toy"}
    c.steps = {
        "a": {"kind": "cc_a", "tag": "a", "est_s": 30.0},
        "b": {"kind": "cc_b", "tag": "b", "inputs": ("@a/out.txt",), "est_s": 60.0},
        "c": {"kind": "cc_c", "tag": "c", "inputs": ("@b/out.txt",),
              "summary": True, "est_s": 30.0},
        "d": {"kind": "cc_d", "tag": "d", "est_s": 30.0},
    }
    c.stages = {"sft": "b"}
    c.eval_step = "c"
    return c

def sweep(add, arg=None):
    add("micro")
'''


def _toy(p, out: Path, *, progress: bool):
    CALLS.append(p["tag"])
    text = "".join(Path(f).read_text() for f in p.get("inputs", ()))
    (out / "out.txt").write_text(text + p["tag"] + ";")
    if p.get("summary"):
        (out / "summary.json").write_text(json.dumps({"metrics": {"x": 1.0}}))
    return {"tag": p["tag"]}


@pytest.fixture
def src(tmp_path, monkeypatch):
    """The tmp source tree the toy kinds hash; the kinds registered on it."""
    root = tmp_path / "src"
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(codehash, "CODE_ROOT", root)
    registry.get("train")  # the built-in kinds first
    for name, code in KIND_CODE.items():
        monkeypatch.setitem(registry._KINDS, name, StepKind(name, _toy, code=code))
    codehash.clear_cache()
    CALLS.clear()
    yield root
    codehash.clear_cache()


def _edit(root: Path, rel: str, text: str) -> None:
    (root / rel).write_text(text)
    codehash.clear_cache()  # a new process would read the files again


def _config(tmp_path: Path) -> str:
    path = tmp_path / "micro_cfg.py"  # outside the output root
    path.write_text(textwrap.dedent(CONFIG))
    return str(path)


def _sweep(cfg: str, root: Path, *extra: str) -> int:
    argv = ["--config", cfg, "--root", str(root), "--jax-cache", "", "--no-bars"]
    return sweep_cmd.main([*argv, *extra])


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root``: its type, bytes (or link target) and mtime."""
    out = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(top) / name
            st = p.lstat()
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p), st.st_mtime_ns)
            elif p.is_dir():
                out[str(p)] = ("dir", None, st.st_mtime_ns)
            else:
                out[str(p)] = ("file", p.read_bytes(), st.st_mtime_ns)
    return out


def _folders(root: Path, name: str) -> list[Path]:
    return sorted((root / "_steps").glob(f"{name}-*"))


def _lines(out: str) -> dict[str, str]:
    """The dry run's step lines, by step name."""
    found = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) > 3 and words[1].startswith("cc_"):
            found[words[0]] = line
    return found


def test_a_code_change_reruns_its_steps_and_their_dependents_only(
    src, tmp_path, capsys
):
    cfg, root = _config(tmp_path), tmp_path / "runs"
    assert _sweep(cfg, root) == 0
    assert CALLS == ["a", "b", "c", "d"]
    first = {n: _folders(root, n) for n in "abcd"}
    assert all(len(f) == 1 for f in first.values())
    CALLS.clear()
    assert _sweep(cfg, root) == 0 and CALLS == []  # unchanged: all reused

    _edit(src, "pkg/notes.txt", "a file no kind hashes\n")
    assert _sweep(cfg, root) == 0 and CALLS == []

    _edit(src, "pkg/b.py", "def loss(x):\n    return 2 * x\n")  # only B runs it
    capsys.readouterr()
    assert _sweep(cfg, root) == 0
    assert CALLS == ["b", "c"]  # B, and C that reads B's output
    for n in "ad":  # reused: still one folder each, the same one
        assert _folders(root, n) == first[n]
    for n in "bc":
        assert len(_folders(root, n)) == 2
    rec = json.loads((root / "micro" / "run.json").read_text())
    assert rec["steps"]["a"]["cached"] and rec["steps"]["d"]["cached"]
    assert not rec["steps"]["b"]["cached"] and not rec["steps"]["c"]["cached"]

    CALLS.clear()  # D's data file: D alone (A, B, C do not hash pkg/data)
    _edit(src, "pkg/data/labels.jsonl", '{"label": 2}\n')
    assert _sweep(cfg, root) == 0 and CALLS == ["d"]


def test_records_hold_provenance_and_code(src, tmp_path):
    cfg, root = _config(tmp_path), tmp_path / "runs"
    assert _sweep(cfg, root) == 0
    (run,), _ = load_runs(cfg, root)
    steps = run.by_name
    for step in steps.values():
        done = json.loads((step.path / "done.json").read_text())
        check_provenance(done["provenance"], config=True)
        # the resolved params: references replaced by the input folders
        assert done["provenance"]["config"] == json.loads(
            json.dumps(pipeline.resolved(step, steps))
        )
        assert done["key"] == step.parts and done["code"]["hash"] == step.parts["code"]
        assert done["code"]["files"] == step.code
    assert set(steps["a"].code) == {"pkg/a.py", "pkg/shared.py"}
    d_files = set(steps["d"].code)
    assert "pkg/data/labels.jsonl" in d_files and "pkg/__init__.py" in d_files
    assert "pkg/b.py" not in d_files and "pkg/notes.txt" not in d_files
    assert steps["c"].parts["inputs"] == {"b": steps["b"].hash}
    for name in ("config.json", "run.json"):
        check_provenance(json.loads((root / "micro" / name).read_text())["provenance"])


def test_dry_run_prints_the_plan_and_writes_nothing(src, tmp_path, capsys):
    cfg, root = _config(tmp_path), tmp_path / "runs"
    assert _sweep(cfg, root, "--dry-run") == 0
    assert not root.exists() and CALLS == []
    out = capsys.readouterr().out
    lines = _lines(out)
    assert set(lines) == set("abcd")
    for n in "abcd":
        assert "run: not run before" in lines[n]
    assert "to compute: 4 of 4 steps, ETA 0:02:30" in out  # 30 + 60 + 30 + 30 s
    assert run_cmd.main(["--config", cfg, "--root", str(root), "--dry-run"]) == 0
    assert not root.exists()

    assert _sweep(cfg, root) == 0
    before = _snapshot(root)
    capsys.readouterr()
    assert _sweep(cfg, root, "--dry-run") == 0
    out = capsys.readouterr().out
    assert all("cached" in line for line in _lines(out).values())
    assert "micro: finished earlier; skipped" in out

    _edit(src, "pkg/b.py", "def loss(x):\n    return 3 * x\n")
    _edit(src, "pkg/shared.py", "SHARED = 2\n")  # A and B hash it
    _edit(src, "pkg/shared.py", "SHARED = 1\n")  # ... back as it was
    assert _sweep(cfg, root, "--dry-run") == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert "cached" in lines["a"] and "cached" in lines["d"]
    assert "run: code changed in pkg/b.py" in lines["b"]
    assert "run: inputs changed (b)" in lines["c"]
    assert "code changed" not in lines["c"]
    assert "micro: 2 of 4 steps to compute" in out
    assert "to compute: 2 of 4 steps, ETA 0:01:30" in out
    assert _snapshot(root) == before  # nothing written, not even a lock
    assert CALLS == ["a", "b", "c", "d"]  # the one real sweep


def test_why_a_step_would_run(src, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    spec = {"x": {"kind": "cc_a", "tag": "x", "n": 1}}
    (step,) = pipeline.plan(spec, root)
    assert dryrun.why_run(step, root) == "not run before (no finished 'x' step)"
    pipeline.execute(step, {"x": step})

    (new,) = pipeline.plan({"x": {**spec["x"], "n": 2}}, root)
    assert dryrun.why_run(new, root) == "config changed (n)"
    bumped = StepKind("cc_a", _toy, version=2, code=KIND_CODE["cc_a"])
    monkeypatch.setitem(registry._KINDS, "cc_a", bumped)
    (new,) = pipeline.plan(spec, root)
    assert dryrun.why_run(new, root) == "kind version 1 -> 2"
    monkeypatch.setitem(registry._KINDS, "cc_a", StepKind("cc_a", _toy))
    (new,) = pipeline.plan(spec, root)  # a kind that declares no code now
    assert dryrun.why_run(new, root) == "code changed in pkg/a.py, pkg/shared.py"

    new.path.mkdir(parents=True)  # an interrupted attempt
    (planned,) = dryrun.plan_of([_Run("r", [new])], root)
    assert (planned.status, planned.why) == ("resume", "an unfinished attempt")
    assert Progress([new], n_runs=1).pending[new.path] == new.est_s

    # a training step's attempt: its newest checkpoint, and the ETA of the rest
    (new.path / "config.json").write_text(json.dumps({"train": {"steps": 400}}))
    for name in ("100", "300", "tmp-400", "notes"):
        (new.path / "ckpt" / name).mkdir(parents=True)
    (planned,) = dryrun.plan_of([_Run("r", [new])], root)
    assert planned.why == "an unfinished attempt (checkpoint at step 300 of 400)"
    assert Progress([new], n_runs=1).pending[new.path] == pytest.approx(new.est_s / 4)
    for bad in ("{", '{"train": {"steps": "400"}}', '{"train": {"steps": 0}}', "[]"):
        (new.path / "config.json").write_text(bad)  # not a step's config: no point
        assert resume_point(new.path) is None and left_share(new) == 1.0
    (new.path / "config.json").write_text(json.dumps({"train": {"steps": 200}}))
    assert resume_point(new.path) == (200, 200)  # a checkpoint past the steps
    # the attempts' clock: the time they took so far
    record = {"attempts": [{"seconds": 3000.4}, {"seconds": 1000.0}]}
    (new.path / "attempts.json").write_text(
        json.dumps(record | {"untimed_before": True})
    )
    (planned,) = dryrun.plan_of([_Run("r", [new])], root)
    assert planned.why == (
        "an unfinished attempt (checkpoint at step 200 of 200; "
        "1:06:40 over 2 timed attempts, earlier ones untimed)"
    )
    shutil.rmtree(new.path / "ckpt")
    (new.path / "attempts.json").write_text(
        json.dumps({"attempts": [{"seconds": 59.6}], "untimed_before": False})
    )
    (planned,) = dryrun.plan_of([_Run("r", [new])], root)
    assert planned.why == "an unfinished attempt (0:01:00 over 1 timed attempt)"

    old = root / "_steps" / "y-000000000000"  # a folder from before recorded keys
    old.mkdir(parents=True)
    (old / "done.json").write_text(json.dumps({"kind": "cc_a", "seconds": 1.0}))
    (y,) = pipeline.plan({"y": spec["x"]}, root)
    assert "predate recorded keys" in dryrun.why_run(y, root)


class _Run:
    def __init__(self, name, steps):
        self.name, self.steps = name, steps


def test_builtin_kinds_hash_the_code_they_run():
    """Real checkout: each built-in kind's entries resolve; a judge is in the
    evaluation's and RL's code, not in data generation's or SFT's."""
    codehash.clear_cache()

    def files(kind: str, spec: dict | None = None) -> set[str]:
        return set(codehash.code_files(registry.get(kind).code_entries(spec or {})))

    sim, ev = files("sim_data"), files("eval")
    sft, rl = files("train", {"stage": "sft"}), files("train", {"stage": "rl"})
    world, tok, replay = files("world_base"), files("tokenizer"), files("replay")
    judge = "sim/judge_rules.py"
    assert judge in ev and judge in rl and judge not in sim and judge not in sft
    assert "hat_jax/losses/sft.py" in sft and "hat_jax/losses/sft.py" not in sim
    assert "experiments/sim_task.py" in rl and "experiments/sim_task.py" not in sft
    assert "hat_jax/eval/runner.py" in ev and "hat_jax/eval/runner.py" not in sft
    assert "hat_jax/harness/builtin/taolive_v1/manifest.yaml" in sim
    assert "experiments/suites/t1.py" in ev and "experiments/world/tokenizer.py" in tok
    assert "serving/replay.py" in replay and "experiments/world/base_data.py" in world
    for found in (sim, ev, sft, rl, world, tok, replay):
        assert not any(
            f.startswith(("hat_jax/cli/", "experiments/driver/")) for f in found
        )
        assert not any("__pycache__" in f for f in found)
