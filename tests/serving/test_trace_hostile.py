"""Traces from strangers: every header, session and message value that would
overflow, hang a replay, load a harness from elsewhere or replay nonsense is a
TraceError naming the file and line, through `hat trace check` and `hat replay`."""

import json

import pytest

from hat_jax.cli.main import main
from serving.trace import TraceError, read_trace

BIG = int("9" * 400)  # json reads it; float() overflows


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _edit(lines, n, **fields):
    """The lines with line ``n`` (1-based) updated."""
    out = [dict(x) for x in lines]
    out[n - 1].update(fields)
    return out


def _write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


CASES = [
    # (line, fields, expected in the message)
    (1, {"rate": -1}, '"rate" > 0'),
    (1, {"rate": 0}, '"rate" > 0'),
    (1, {"rate": BIG}, '"rate" a finite number'),
    (1, {"seed": -1}, '"seed" in 0..4294967295'),
    (1, {"seed": 2**40}, '"seed" in 0..4294967295'),
    (1, {"rooms": -2}, '"rooms" >= 1'),
    (1, {"n_messages": 0}, '"n_messages" >= 1'),
    (1, {"messages_per_room": 10**12}, '"messages_per_room" 2'),
    (1, {"rooms": 1}, '"messages_per_room" 4'),
    (1, {"split": "../../etc"}, '"split" in'),
    (2, {"harness": "/etc"}, '"harness" in'),
    (2, {"harness": "../taolive_v1"}, '"harness" in'),
    (3, {"room_index": 10**9}, '"room_index" 1 (sessions in order)'),
    (2, {"room_index": -1}, '"room_index" 0'),
    (4, {"t": BIG}, '"t" a finite number'),
    (4, {"t": -5.0}, "arrival t >= 0.0"),
    (5, {"case": "test-0-0-0"}, "a case not already replayed"),
]


@pytest.mark.parametrize("line, fields, expected", CASES)
def test_bad_values_are_located(tmp_path, small_trace, capsys, line, fields, expected):
    bad = _write(tmp_path / "bad.jsonl", _edit(_lines(small_trace), line, **fields))
    with pytest.raises(TraceError) as err:
        read_trace(bad)
    assert str(err.value).startswith(f"{bad}:{line}: expected ")
    assert expected in str(err.value)
    assert main(["trace", "check", str(bad)]) == 1
    out, errs = capsys.readouterr()
    assert f"invalid trace: {bad}:{line}: expected " in errs and expected in errs
    assert "Traceback" not in out + errs


def test_fewer_sessions_than_rooms(tmp_path, small_trace):
    lines = _lines(small_trace)
    # one room's session and messages dropped, the header still says 2 rooms
    kept = [x for x in lines if x.get("session") != "s1"]
    kept[0] = {**kept[0], "n_messages": 2, "messages_per_room": 1}
    bad = _write(tmp_path / "bad.jsonl", kept)
    with pytest.raises(TraceError, match=r"bad.jsonl:4: expected 2 sessions or more"):
        read_trace(bad)


def test_replay_refuses_a_bad_trace_before_building_rooms(
    tmp_path, small_trace, capsys
):
    bad = _edit(_lines(small_trace), 1, messages_per_room=10**12)
    path = _write(tmp_path / "bad.jsonl", bad)
    argv = ["replay", "--trace", str(path), "--endpoint", "http://127.0.0.1:9"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 1
    out, errs = capsys.readouterr()
    assert f"invalid trace: {path}:1: expected" in errs and "Traceback" not in errs
    assert not (tmp_path / "out").exists()


def test_a_good_trace_still_reads(small_trace, capsys):
    assert main(["trace", "check", str(small_trace)]) == 0
    assert "4 messages in 2 sessions" in capsys.readouterr().out
