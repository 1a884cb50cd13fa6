"""A step's time over its attempts: killed, resumed, damaged records."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from experiments.driver import attempts, pipeline, registry

TRIES: dict[str, int] = {}


def _flaky(p, out: Path, *, progress: bool):
    """Fails its first ``p["fail"]`` attempts (a kill), then finishes."""
    TRIES[p["tag"]] = TRIES.get(p["tag"], 0) + 1
    (out / f"part{TRIES[p['tag']]}.txt").write_text("work")  # what a resume keeps
    if TRIES[p["tag"]] <= p["fail"]:
        raise KeyboardInterrupt
    return {}


def _beating(p, out: Path, *, progress: bool):
    """Waits (up to a minute) until the clock has rewritten its running time
    after the write on entry: a time of at least 5 beats."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        record = attempts.read(out)
        if record and record["attempts"][-1]["seconds"] >= 5 * attempts.BEAT_S:
            return {"seen": record["attempts"][-1]["seconds"]}
        time.sleep(0.01)
    raise AssertionError("the clock never rewrote attempts.json")


for name, fn in (("flaky", _flaky), ("beating", _beating)):
    if name not in registry._KINDS:
        registry.register(name)(fn)


def _step(tmp_path, kind="flaky", **params):
    steps = pipeline.plan(
        {"s": {"kind": kind, "tag": str(tmp_path), **params}}, tmp_path
    )
    return steps[0], {s.name: s for s in steps}


def test_killed_attempts_are_counted_in_done_json(tmp_path):
    step, planned = _step(tmp_path, fail=2)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            pipeline.execute(step, planned)
    rec = attempts.read(step.path)
    assert len(rec["attempts"]) == 2 and rec["untimed_before"] is False
    killed = sum(a["seconds"] for a in rec["attempts"])
    pipeline.execute(step, planned)
    done = json.loads((step.path / "done.json").read_text())
    assert done["attempts"] == 3 and done["untimed_before"] is False
    rec = attempts.read(step.path)
    assert sum(a["seconds"] for a in rec["attempts"][:2]) == killed  # kept as written
    assert done["seconds_all"] == sum(a["seconds"] for a in rec["attempts"])
    assert rec["attempts"][2]["seconds"] >= done["seconds"]  # the clock holds the step
    assert [p.name for p in sorted(step.path.glob("part*"))] == [
        "part1.txt",
        "part2.txt",
        "part3.txt",
    ]
    again = pipeline.execute(step, planned)  # done: nothing more is timed
    assert again.cached and len(attempts.read(step.path)["attempts"]) == 3


def test_work_from_an_untimed_attempt_is_flagged(tmp_path):
    step, planned = _step(tmp_path, fail=0)
    step.path.mkdir(parents=True)
    (step.path / "ckpt").mkdir()  # left by a driver that did not time attempts
    pipeline.execute(step, planned)
    done = json.loads((step.path / "done.json").read_text())
    assert done["attempts"] == 1 and done["untimed_before"] is True
    empty, planned2 = _step(tmp_path / "b", fail=0)
    empty.path.mkdir(parents=True)  # an empty folder holds no work
    pipeline.execute(empty, planned2)
    assert json.loads((empty.path / "done.json").read_text())["untimed_before"] is False


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        json.dumps([1]),
        json.dumps({"attempts": [{"seconds": -3.0}], "untimed_before": False}),
        json.dumps({"attempts": [{"seconds": "5"}], "untimed_before": False}),
        json.dumps({"attempts": [{"seconds": True}]}),
        json.dumps({"attempts": [{"seconds": 1.0}], "untimed_before": "no"}),
        '{"attempts": [{"seconds": NaN}], "untimed_before": false}',
        json.dumps({"attempts": []}),  # no untimed_before
        '{"attempts": [{"seconds": 1' + "0" * 400 + '}], "untimed_before": false}',
        "[" * 100_000,
        json.dumps({"attempts": [3], "untimed_before": False}),
        " " * (attempts.MAX_BYTES + 1),
        json.dumps({"attempts": [{"seconds": 1e308}] * 2, "untimed_before": False}),
    ],
)
def test_a_damaged_record_is_set_aside(tmp_path, bad):
    step, planned = _step(tmp_path, fail=0)
    step.path.mkdir(parents=True)
    (step.path / attempts.FILE).write_text(bad)
    pipeline.execute(step, planned)
    done = json.loads((step.path / "done.json").read_text())
    assert done["attempts"] == 1 and done["untimed_before"] is True
    assert (step.path / (attempts.FILE + ".bad")).read_text() == bad


def test_the_clock_rewrites_a_running_attempt(tmp_path, monkeypatch):
    monkeypatch.setattr(attempts, "BEAT_S", 0.01)
    step, planned = _step(tmp_path, kind="beating")
    out = pipeline.execute(step, planned)
    assert out.info["seen"] > 0.0  # written while the step ran, not only at its end
    assert not [t for t in threading.enumerate() if t.name.startswith("clock")]
    assert not list(step.path.glob(".*tmp*"))


def test_leftovers_of_a_killed_write_are_not_work(tmp_path):
    step, planned = _step(tmp_path, fail=0)
    step.path.mkdir(parents=True)
    (step.path / (attempts.TMP_PREFIX + "1a2b3c4d")).write_text('{"attem')
    pipeline.execute(step, planned)
    done = json.loads((step.path / "done.json").read_text())
    assert done["untimed_before"] is False and not list(step.path.glob(".*tmp*"))


def test_a_linked_record_is_never_followed(tmp_path):
    outside = tmp_path / "outside.json"
    text = json.dumps({"attempts": [{"seconds": 1e6}], "untimed_before": False})
    outside.write_text(text)
    step, planned = _step(tmp_path / "run", fail=0)
    step.path.mkdir(parents=True)
    (step.path / attempts.FILE).symlink_to(outside)
    pipeline.execute(step, planned)
    done = json.loads((step.path / "done.json").read_text())
    assert done["attempts"] == 1 and done["seconds_all"] < 1e6
    assert outside.read_text() == text  # neither read as ours nor written through
    assert (step.path / (attempts.FILE + ".bad")).is_symlink()
