"""Replays repeated: the median summary, [min, max] intervals, foreign CPU load."""

import itertools
import math
import random
import statistics

import pytest

from serving import cpuload, metrics, repeats
from serving.cases import trace_jobs
from serving.replay import ReplayOptions, replay
from serving.trace import read_trace


def _summary(rng: random.Random) -> dict:
    return {
        "messages": 8,
        "answered": rng.randint(0, 8),
        "reply_rate": rng.random(),
        "goodput": rng.random(),
        "status": {"ok": rng.randint(0, 8)}
        | ({"failed": 2} if rng.random() < 0.5 else {}),
        "latency_s": {"p50": rng.uniform(0, 9), "p95": rng.uniform(9, 20), "p99": 30.0},
        "decode_tok_s": rng.uniform(10, 90),
        "new_tokens": rng.randint(100, 900),
        "mean_batch": rng.uniform(1, 4),
        "mtp_acceptance_per_position": [rng.random(), rng.random()],
        "mtp_acceptance_rate": None,
        "errors_sample": ["boom"],
    }


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_combine_is_the_median_repeat_with_median_shown_numbers(n):
    rng = random.Random(n)
    sums = [_summary(rng) for _ in range(n)]
    foreign = [rng.random() for _ in range(n)]
    out = repeats.combine(sums, foreign)
    # the median repeat by P50 (the lower middle one), found by brute force
    p50 = [s["latency_s"]["p50"] for s in sums]
    below = [sum(q < p for q in p50) for p in p50]
    middle = next(i for i in range(n) if below[i] == (n - 1) // 2)
    assert out["repeats"]["median_repeat"] == middle
    for key in ("answered", "status", "reply_rate", "new_tokens", "mean_batch"):
        assert out[key] == sums[middle][key], key  # counts that belong together
    assert (
        out["mtp_acceptance_per_position"]
        == (sums[middle]["mtp_acceptance_per_position"])
    )
    for key in ("p50", "p95", "p99"):
        want = statistics.median(s["latency_s"][key] for s in sums)
        assert out["latency_s"][key] == pytest.approx(want)
    for key in ("goodput", "decode_tok_s"):
        assert out[key] == pytest.approx(statistics.median(s[key] for s in sums))
    block = out["repeats"]
    assert block["n"] == n and block["values"]["foreign_cpu_cores"] == foreign
    for path, name in repeats.KEYS:
        vals = [s[path[0]] if len(path) == 1 else s[path[0]][path[1]] for s in sums]
        assert block["values"][name] == vals
        assert block["interval"][name] == [min(vals), max(vals)]
        got = repeats.interval(out, name)
        assert got is None if n == 1 else got == [min(vals), max(vals)]
    if n == 1:
        assert block["confidence"] is None and out == {**sums[0], "repeats": block}
    else:
        # P(min <= median <= max) for n draws of a continuous distribution,
        # counted over every above/below pattern of the n draws
        inside = sum(0 < sum(p) < n for p in itertools.product((0, 1), repeat=n))
        assert block["confidence"] == pytest.approx(inside / 2**n)


def test_a_repeat_that_answered_nothing_counts_as_infinitely_slow():
    a, b, c = (_summary(random.Random(i)) for i in range(3))
    a["latency_s"] = dict.fromkeys(("p50", "p95", "p99"), float("nan"))
    out = repeats.combine([a, b, c], [None, 0.1, 0.0])
    p50 = sorted([b["latency_s"]["p50"], c["latency_s"]["p50"]])
    assert out["latency_s"]["p50"] == p50[1]  # median of (x, y, inf)
    assert out["repeats"]["interval"]["p50"] == [p50[0], math.inf]
    assert out["repeats"]["median_repeat"] in (1, 2)
    none = repeats.combine([a, a], [None, None])
    assert math.isnan(none["latency_s"]["p50"])  # no repeat answered: no latency
    assert none["repeats"]["interval"]["p50"] == [math.inf, math.inf]
    assert none["repeats"]["interval"]["foreign_cpu_cores"] is None


@pytest.mark.parametrize(
    "block",
    [
        None,
        "x",
        {"n": "5"},
        {"n": 3, "interval": {"p50": [1]}},
        {"n": 3},
        {"n": 1},
        {"n": True},
        {"n": 3, "interval": [1, 2]},
        {"n": 3, "interval": "x"},
    ],
)
def test_interval_of_a_malformed_or_single_block_is_none(block):
    assert repeats.interval({"repeats": block}, "p50") is None


def test_cpu_ticks_are_read_from_proc_text(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "stat").write_text("cpu  10 1 5 900 7 2 3 4 0 0\ncpu0 1 2 3 4\n")
    # a command name with spaces and a ')' inside: fields counted after the last ')'
    rest = " ".join(str(i) for i in range(3, 20))  # fields 3..19
    (tmp_path / "self" / "stat").write_text(f"42 (a b) c) {rest}\n")
    s = cpuload.snapshot(tmp_path)
    assert s.machine_ticks == 10 + 1 + 5 + 2 + 3 + 4  # idle and iowait left out
    assert s.own_ticks == 14 + 15
    assert cpuload.snapshot(tmp_path / "missing").machine_ticks is None


def test_foreign_cores_subtract_this_process():
    tick = cpuload.os.sysconf("SC_CLK_TCK")
    a = cpuload.CpuSnapshot(0.0, 1000, 100)
    b = cpuload.CpuSnapshot(2.0, 1000 + 3 * tick, 100 + 2 * tick)
    assert cpuload.foreign_cores(a, b) == pytest.approx(0.5)  # 3 - 2 s over 2 s
    assert cpuload.foreign_cores(a, cpuload.CpuSnapshot(2.0, None, 1)) is None


def test_a_repeated_replay_keeps_every_repeat_and_shows_intervals(
    tiny_model, qwen_tokenizer, small_trace, tmp_path
):
    jobs = trace_jobs(read_trace(small_trace))[:2]
    result = replay(
        jobs,
        "embedded",
        (tiny_model, qwen_tokenizer),
        tmp_path,
        concurrency=(2,),
        opts=ReplayOptions(max_new_tokens=6, repeats=3),
    )
    (run,) = result["runs"]
    assert sorted({t["repeat"] for t in run["turns"]}) == [0, 1, 2]
    assert len(run["turns"]) == 3 * len(jobs)
    block = run["summary"]["repeats"]
    assert block["n"] == 3 and len(block["values"]["new_tokens"]) == 3
    busy = block["values"]["foreign_cpu_cores"]
    assert all(x is None or x >= 0 for x in busy)
    for rep in range(3):  # distinct call indices: each batched call once
        calls = {c["call"]: c for t in run["turns"] if t["repeat"] == rep
                 for c in t["calls"]}  # fmt: skip
        assert (
            sum(c["new_tokens"] for c in calls.values())
            == (block["values"]["new_tokens"][rep])
        )
    lo, hi = block["interval"]["decode_tok_s"]
    assert lo <= run["summary"]["decode_tok_s"] <= hi
    table = (tmp_path / "replay.md").read_text()
    assert "the median over the level's repeats" in table
    row = next(line for line in table.splitlines() if line.startswith("| embedded"))
    assert row.count(" [") >= 1  # decode tok/s at least (answered turns may be none)


def test_table_row_flags_a_busy_machine():
    s = repeats.combine([_summary(random.Random(3))] * 2, [0.05, 0.9])
    s |= {"distinct_replies": 1, "errors": 0, "timeouts": 0}
    s |= {"ttft_s": {"p50": 0.1}, "tpot_s": {"p50": 0.01}}
    s |= {"time_split": dict.fromkeys(("model", "tools", "hooks", "queue"), 0.25)}
    s |= {"mtp_mean_accepted_length": None}
    row = metrics.table_row("x", 1, s)
    assert row[0] == "x" + metrics.BUSY
    assert any("other processes kept" in n for n in metrics.table_notes([row]))
