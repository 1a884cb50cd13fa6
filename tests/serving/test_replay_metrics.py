"""The replay's time split: shares that sum to 1 whatever the clocks measured."""

import math

import pytest

from serving.metrics import summarize
from serving.schedule import TurnRecord


def _turn(i, *, latency, queue, model, tools, hooks, status="ok"):
    return TurnRecord(
        index=i,
        session="s",
        arrival=0.0,
        start=queue,
        end=latency,
        status=status,
        model_s=model,
        tools_s=tools,
        hooks_s=hooks,
    )


def test_time_split_is_the_share_of_each_part_and_the_rest():
    turns = [
        _turn(0, latency=10.0, queue=1.0, model=5.0, tools=2.0, hooks=1.0),
        _turn(1, latency=6.0, queue=0.0, model=3.0, tools=1.0, hooks=0.0),
        _turn(2, latency=9.0, queue=1, model=1, tools=1, hooks=1, status="error"),
    ]
    split = summarize(turns)["time_split"]
    assert split == pytest.approx(
        {"queue": 1 / 16, "model": 8 / 16, "tools": 3 / 16, "hooks": 1 / 16}
        | {"other": 3 / 16}
    )  # the errored turn is not served: not counted


def test_time_split_sums_to_one_when_the_parts_outrun_the_latency():
    # Wall-clock tool and hook time (a loaded machine) beyond the virtual
    # clock's latency: the parts become shares of their own sum.
    turns = [
        _turn(0, latency=1.0, queue=0.25, model=0.5, tools=0.5, hooks=0.25),
        _turn(1, latency=1.0, queue=0.0, model=0.5, tools=0.5, hooks=0.0),
    ]
    split = summarize(turns)["time_split"]
    assert math.isclose(sum(split.values()), 1.0, abs_tol=1e-12)
    assert split["other"] == 0.0
    assert split == pytest.approx(
        {"queue": 0.1, "model": 0.4, "tools": 0.4, "hooks": 0.1, "other": 0.0}
    )


def test_time_split_of_no_served_turn_is_zero():
    turns = [_turn(0, latency=1.0, queue=0, model=0, tools=0, hooks=0, status="error")]
    assert set(summarize(turns)["time_split"].values()) == {0.0}
