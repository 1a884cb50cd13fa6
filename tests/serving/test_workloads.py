"""Replay workloads: closed-loop clients and modelled tool latency, on the virtual
clock with a scripted policy whose calls cost a fixed, known time."""

import math

import numpy as np
import pytest

from hat_jax.harness import ScriptedPolicy
from hat_jax.text.toolcall import render_tool_calls
from serving import schedule
from serving.cases import trace_jobs
from serving.policies import CallStats
from serving.schedule import run_virtual
from serving.toollatency import ToolLatency
from serving.trace import read_trace
from sim.tools import SimBackend

CALL_S = 0.25  # every model call's wall time on the virtual clock
CALLS = render_tool_calls(
    [
        {"name": "get_product_info_by_link_id", "arguments": {"link_id": 1}},
        {"name": "get_promotions", "arguments": {"link_id": 1}},
    ]
)


class FixedCost:
    """Two tool calls, then a short reply; each batched call takes CALL_S."""

    def __init__(self):
        self.inner = ScriptedPolicy(
            lambda m: "Link 1, see you!" if m[-1]["role"] == "tool" else CALLS
        )

    def generate_measured(self, conversations, *, fmt="qwen_xml", seed=None):
        outs = self.inner.generate(conversations, fmt=fmt)
        n = len(conversations)
        stats = CallStats(n, CALL_S, [0.05] * n, 0.2 * n, 8 * n)
        return outs, stats


@pytest.fixture(scope="module")
def jobs(small_trace):
    return trace_jobs(read_trace(small_trace))[:4]


def test_closed_loop_clients_send_when_answered(jobs):
    recs = run_virtual(jobs, FixedCost(), SimBackend(None, seed=0), concurrency=2)
    closed = run_virtual(
        jobs, FixedCost(), SimBackend(None, seed=0), concurrency=2, closed=True
    )
    assert all(r.queue_s == 0 and r.arrival == r.start for r in closed)
    starts = sorted(r.start for r in closed)
    assert starts[:2] == [0.0, 0.0]  # both clients send at once
    ends = sorted(r.end for r in closed)
    for s in starts[2:]:  # later messages go out as earlier ones are answered
        assert any(math.isclose(s, e) for e in ends)
    # open loop keeps the trace's arrival times
    assert [r.arrival for r in recs] == [j.t for j in jobs]


def test_tool_latency_advances_the_turns_clock(jobs, monkeypatch):
    monkeypatch.setattr(schedule.time, "thread_time", lambda: 0.0)  # no host time
    lat = ToolLatency(median_s=0.5)
    base = run_virtual(jobs, FixedCost(), SimBackend(None, seed=0), concurrency=1)
    slow = run_virtual(
        jobs, FixedCost(), SimBackend(None, seed=0), concurrency=1, tool_latency=lat
    )
    for a, b in zip(base, slow, strict=True):
        assert a.status == b.status and a.status != "error"
        assert b.tool_calls >= 2 and b.tool_calls % 2 == 0  # two per model call
        assert b.tool_delay_s == pytest.approx(0.5 * b.tool_calls)
        assert b.tools_s >= b.tool_delay_s
        # the same model calls, and the delay on the turn's clock beside them,
        # charged once (host CPU time is frozen at 0 here)
        assert b.model_s == pytest.approx(a.model_s)
        assert b.end - b.start == pytest.approx(b.model_s + b.tool_delay_s)
        assert a.end - a.start == pytest.approx(a.model_s)
    assert all(r.tool_calls == 0 and r.tool_delay_s == 0 for r in base)


def test_wall_clock_sleeps_each_delay_and_counts_it_once(jobs, monkeypatch):
    """run_real sleeps the delays inside the tool call, which the harness times:
    its tools_s holds them already (here the sleep is recorded, not slept)."""
    slept = []
    monkeypatch.setattr(schedule.time, "sleep", slept.append)
    recs = schedule.run_real(
        jobs[:2],
        FixedCost(),
        SimBackend(None, seed=0),
        concurrency=1,
        closed=True,
        tool_latency=ToolLatency(median_s=0.3),
    )
    assert slept == [0.3] * sum(r.tool_calls for r in recs) and slept
    for r in recs:
        assert r.tool_delay_s == pytest.approx(0.3 * r.tool_calls)
        assert r.tools_s < r.tool_delay_s  # the harness's timing, not + delay
        assert r.queue_s == 0


def test_tool_latency_draws_are_lognormal_and_repeatable():
    lat = ToolLatency(median_s=0.08, sigma=0.5, seed=3)
    draws = np.array([lat.delay(t, c) for t in range(400) for c in range(5)])
    assert np.median(draws) == pytest.approx(0.08, rel=0.08)
    assert np.std(np.log(draws)) == pytest.approx(0.5, rel=0.08)
    assert lat.delay(7, 2) == ToolLatency(0.08, 0.5, seed=3).delay(7, 2)
    assert ToolLatency().delay(0, 0) == 0.0
    with pytest.raises(ValueError, match="sigma"):
        ToolLatency(0.1, sigma=float("nan"))
