"""Replay workloads: closed-loop clients and modelled tool latency, on the virtual
clock with a scripted policy whose calls cost a fixed, known time."""

import math

import numpy as np
import pytest

from hat_jax.harness import ScriptedPolicy
from hat_jax.text.toolcall import render_tool_calls
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


def test_tool_latency_advances_the_turns_clock(jobs):
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
        # the same model calls, and the delay on the turn's own clock beside them
        # (the rest is the host's CPU time: harness, hooks, tools)
        assert b.model_s == pytest.approx(a.model_s)
        assert b.end - b.start >= b.model_s + b.tool_delay_s
    assert all(r.tool_calls == 0 and r.tool_delay_s == 0 for r in base)


def test_tool_latency_draws_are_lognormal_and_repeatable():
    lat = ToolLatency(median_s=0.08, sigma=0.5, seed=3)
    draws = np.array([lat.delay(t, c) for t in range(400) for c in range(5)])
    assert np.median(draws) == pytest.approx(0.08, rel=0.08)
    assert np.std(np.log(draws)) == pytest.approx(0.5, rel=0.08)
    assert lat.delay(7, 2) == ToolLatency(0.08, 0.5, seed=3).delay(7, 2)
    assert ToolLatency().delay(0, 0) == 0.0
    with pytest.raises(ValueError, match="sigma"):
        ToolLatency(0.1, sigma=float("nan"))
