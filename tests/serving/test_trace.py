"""Trace generation is deterministic; bad files fail with file, line and what."""

import json

import numpy as np
import pytest

from serving.metrics import percentile
from serving.trace import (
    ARRIVALS,
    TraceError,
    bursty_times,
    make_trace,
    read_trace,
    write_trace,
)


def test_make_trace_is_deterministic(tmp_path, small_trace):
    again = make_trace(n_messages=4, rooms=2, arrivals="poisson", rate=2.0, seed=0)
    path = write_trace(again, tmp_path / "again.jsonl")
    assert path.read_bytes() == small_trace.read_bytes()
    trace = read_trace(small_trace)
    assert trace == again
    assert [m.t for m in trace.messages] == sorted(m.t for m in trace.messages)
    assert {m.session for m in trace.messages} == {"s0", "s1"}
    other = make_trace(n_messages=4, rooms=2, arrivals="poisson", rate=2.0, seed=1)
    assert other.messages != trace.messages


@pytest.mark.parametrize("name", sorted(ARRIVALS))
def test_arrival_rates(name):
    rng = np.random.default_rng(0)
    t = ARRIVALS[name](rng, 2.0, 4000)
    assert np.all(np.diff(t) >= 0) and len(t) == 4000
    assert 1.6 < len(t) / t[-1] < 2.4  # mean rate close to the asked one


def test_bursty_is_burstier_than_poisson():
    rng = np.random.default_rng(0)
    gaps_b = np.diff(bursty_times(rng, 1.0, 4000))
    gaps_p = np.diff(ARRIVALS["poisson"](rng, 1.0, 4000))
    cv = lambda g: g.std() / g.mean()  # noqa: E731
    assert cv(gaps_b) > 1.5 * cv(gaps_p)


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


@pytest.mark.parametrize(
    "edit, line, expected",
    [
        (lambda x: x[1:], 1, "the header"),
        (lambda x: [{**x[0], "version": 9}] + x[1:], 1, "version 1"),
        (lambda x: x[:3] + [{**x[3], "t": "soon"}] + x[4:], 4, '"t" of type'),
        (lambda x: x[:3] + [{**x[3], "session": "s9"}] + x[4:], 4, "a session in"),
        (lambda x: x[:3] + [x[4], x[3]] + x[5:], 5, "arrival t >="),
        (lambda x: x[:3] + [{**x[3], "kind": "note"}] + x[4:], 4, 'kind "session"'),
        (lambda x: x[:-1], 6, "4 messages"),
        (lambda x: x[:3] + [{k: v for k, v in x[3].items() if k != "text"}] + x[4:],
         4, 'key "text"'),
    ],
)  # fmt: skip
def test_validation_errors_say_file_line_expected(
    tmp_path, small_trace, edit, line, expected
):
    bad = _write(tmp_path / "bad.jsonl", edit(_lines(small_trace)))
    with pytest.raises(TraceError) as err:
        read_trace(bad)
    assert err.value.line == line
    assert str(err.value).startswith(f"{bad}:{line}: expected ")
    assert expected in str(err.value)


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(TraceError, match=r"bad.jsonl:1: expected a JSON object"):
        read_trace(bad)
    with pytest.raises(TraceError, match="none found"):
        read_trace(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    "raw, why",
    [(b"\xff\xfe\n", "not UTF-8"), (b"[" * 500 + b"]" * 500 + b"\n", "nested deeper"),
     (b'{"t": NaN}\n', "NaN"), (b"[1]\n", "a JSON object")],
)  # fmt: skip
def test_undecodable_lines_are_located(tmp_path, small_trace, raw, why):
    good = _write(tmp_path / "good.jsonl", _lines(small_trace))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(good.read_bytes().splitlines(keepends=True)[0] + raw)
    with pytest.raises(TraceError, match=f"bad.jsonl:2: expected .*{why}"):
        read_trace(bad)


@pytest.mark.parametrize("n", [1, 2, 5, 100])
def test_percentile_matches_numpy(n):
    xs = np.random.default_rng(n).exponential(3.0, n).tolist()
    for q in (0, 1, 50, 95, 99, 100):
        assert percentile(xs, q) == pytest.approx(np.percentile(xs, q), rel=1e-12)
