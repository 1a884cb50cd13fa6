"""Replay metrics: the time split (shares that sum to 1 whatever the clocks
measured), and answered turns, reply rate, goodput, TPOT and the table's flags
(scripted TurnRecords: no model, no timing)."""

import math

import numpy as np
import pytest

from serving import metrics
from serving.metrics import summarize
from serving.policies import CallStats
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


# --------------------------------------------- answered turns, goodput, flags
def _scripted(statuses_latencies, *, arrival_step=1.0):
    """TurnRecords with the given (status, latency) and one one-row call each:
    no queueing, model time = latency."""
    turns = []
    for i, (status, latency) in enumerate(statuses_latencies):
        arrival = arrival_step * i
        call = CallStats(
            batch=1, wall_s=latency, ttft_s=[0.1 * (i + 1)],
            row_decode_s=0.01 * (i + 1) * 10, new_tokens=11,
        )  # fmt: skip
        turns.append(
            TurnRecord(
                index=i, session="s", arrival=arrival, start=arrival,
                end=arrival + latency, status=status, model_s=latency,
                first_token=arrival + 0.5, calls=[call],
            )
        )  # fmt: skip
    return turns


MIXED = [("ok", 2.0), ("failed", 100.0), ("ok", 4.0), ("turn_limit", 100.0),
         ("ok", 20.0), ("error", 100.0), ("ok", 1.0), ("timeout", 100.0)]  # fmt: skip


def test_failed_turns_are_counted_and_left_out_of_the_latencies():
    turns = _scripted(MIXED)
    s = summarize(turns)
    assert s["messages"] == 8 and s["answered"] == 4 and s["reply_rate"] == 0.5
    assert s["status"] == {"ok": 4, "failed": 1, "turn_limit": 1, "error": 1,
                           "timeout": 1}  # fmt: skip
    assert (s["errors"], s["timeouts"]) == (1, 1)
    lat = [2.0, 4.0, 20.0, 1.0]  # the answered turns only: no 100 s in sight
    for q in (50, 95, 99):
        assert s["latency_s"][f"p{q}"] == pytest.approx(np.percentile(lat, q))
    assert s["latency_s"]["mean"] == pytest.approx(np.mean(lat))
    assert s["latency_s"]["max"] == 20.0
    assert s["first_token_s"]["max"] == pytest.approx(0.5)
    assert s["queue_s"]["mean"] == 0.0
    # goodput: answered within 15 s over ALL messages (failures: not served)
    assert s["goodput"] == 3 / 8 and s["share_under_15s"] == 3 / 8
    span = max(t.end for t in turns)
    assert s["goodput_rps"] == pytest.approx(3 / span)
    assert metrics.answered_latencies(turns) == lat  # what the CDF draws


def test_time_split_covers_answered_turns_only():
    turns = _scripted([("ok", 2.0), ("failed", 100.0)])
    turns[1].tools_s = 50.0
    assert summarize(turns)["time_split"]["tools"] == 0.0


def test_tpot_is_decode_time_over_tokens_after_the_first_per_call():
    turns = _scripted(MIXED)
    s = summarize(turns)
    # every call: 11 tokens on 1 row, decode 0.1 * (i + 1) s over 10 tokens
    tpot = [0.01 * (i + 1) for i in range(8)]  # failed turns' calls count too
    for q in (50, 95, 99):
        assert s["tpot_s"][f"p{q}"] == pytest.approx(np.percentile(tpot, q))
    assert s["ttft_s"]["max"] == pytest.approx(0.8)
    batched = CallStats(batch=2, wall_s=1.0, ttft_s=[0.1, 0.2], row_decode_s=1.5,
                        new_tokens=2 + 10)  # fmt: skip
    # no token after the first: left out
    single = CallStats(batch=1, wall_s=0.1, ttft_s=[0.1], row_decode_s=0.0,
                       new_tokens=1)  # fmt: skip
    turn = TurnRecord(0, "s", 0.0, 0.0, 1.0, "ok", calls=[batched, single])
    assert summarize([turn])["tpot_s"]["max"] == pytest.approx(1.5 / 10)


def test_every_turn_failing_gives_nan_latencies_and_a_flagged_row():
    s = summarize(_scripted([("failed", 100.0), ("turn_limit", 3.0)]))
    assert s["answered"] == 0 and s["reply_rate"] == 0.0 and s["goodput"] == 0.0
    assert s["goodput_rps"] == 0.0 and s["share_under_15s"] == 0.0
    for key in ("latency_s", "first_token_s", "queue_s"):
        assert all(math.isnan(v) for v in s[key].values()), key
    assert set(s["time_split"].values()) == {0.0}
    row = metrics.table_row("embedded", 1, s)
    assert row[3] == "0.0% (!)" and row[4] == "0" and row[5] == "nan"
    assert row[10] == "15.00"  # TPOT P50 in ms: of 0.1 s and 0.2 s over 10 tokens
    table = metrics.markdown_table([row])
    assert "(!) answered fewer than 95% of its messages" in table
    assert "embedded c=1" in table


def test_empty_replay_does_not_crash():
    s = summarize([])
    assert s["messages"] == 0 and s["reply_rate"] == 0.0 and s["goodput"] == 0.0
    assert math.isnan(s["latency_s"]["p50"]) and math.isnan(s["tpot_s"]["p50"])


def test_all_answered_replay_is_not_flagged():
    s = summarize(_scripted([("ok", 2.0), ("ok", 3.0), ("ok", 16.0)]))
    assert s["reply_rate"] == 1.0 and s["goodput"] == 2 / 3
    row = metrics.table_row("embedded", 2, s)
    assert row[3] == "100.0%"
    table = metrics.markdown_table([row])
    assert "(!)" not in table
    assert "Percentiles (P50/P95/P99) cover answered turns only" in table


def test_reply_rate_flag_threshold():
    assert metrics.reply_cell(0.95) == "95.0%"
    assert metrics.reply_cell(0.625) == "62.5% (!)"
    a = summarize(_scripted([("ok", 1.0)] * 19 + [("failed", 1.0)]))
    b = summarize(_scripted([("ok", 1.0)] * 5 + [("failed", 1.0)] * 3))
    rows = [metrics.table_row("a", 1, a), metrics.table_row("b", 4, b)]
    assert [r[3] for r in rows] == ["95.0%", "62.5% (!)"]
    notes = metrics.table_notes(rows)
    assert len(notes) == 2 and notes[1].endswith(": b c=4.")


def test_goodput_with_a_custom_slo():
    turns = _scripted([("ok", 2.0), ("ok", 4.0), ("ok", 20.0), ("failed", 1.0)])
    assert summarize(turns)["goodput"] == 2 / 4
    s = summarize(turns, slo_s=3.0)
    assert s["slo_s"] == 3.0 and s["goodput"] == 1 / 4
    assert s["share_under_15s"] == 2 / 4  # always at 15 s
    assert summarize(turns, slo_s=4.0)["goodput"] == 2 / 4  # within: <= (vLLM)
    assert summarize(turns, slo_s=60.0)["goodput"] == 3 / 4  # never the failed one
    assert "within 3 s" in metrics.markdown_table([], slo_s=3.0)


def test_error_and_timeout_still_count_as_failures():
    s = summarize(_scripted([("error", 0.5), ("timeout", 0.5), ("ok", 10.0)]))
    assert (s["errors"], s["timeouts"], s["answered"]) == (1, 1, 1)
    assert s["latency_s"]["p50"] == 10.0 and s["goodput"] == 1 / 3
    assert metrics.table_row("x", 1, s)[-1] == "2"


def test_fast_failures_cannot_beat_slower_answers_on_goodput():
    fast_failed = summarize(_scripted([("failed", 0.1)] * 10))
    slow_answered = summarize(_scripted([("ok", 12.0)] * 10, arrival_step=15.0))
    assert fast_failed["goodput"] == 0.0 < slow_answered["goodput"] == 1.0
    assert fast_failed["goodput_rps"] == 0.0 < slow_answered["goodput_rps"]
    assert fast_failed["reply_rate"] == 0.0 and slow_answered["reply_rate"] == 1.0


# ------------------------------------------------- MTP acceptance (vLLM's)
def _mtp_call(drafts, per_pos, k=3):
    """A call of `drafts` row verify steps of k drafts, accepting per_pos[i] of
    them at position i (prefix acceptance: the total is their sum)."""
    return CallStats(
        batch=1, wall_s=1.0, ttft_s=[0.1], row_decode_s=0.9, new_tokens=5,
        drafts_proposed=k * drafts, drafts_accepted=sum(per_pos),
        row_verifies=drafts, accepted_per_pos=tuple(per_pos),
    )  # fmt: skip


def test_acceptance_per_position_is_accepted_at_each_position_over_drafts():
    calls = [_mtp_call(10, (8, 5, 1)), _mtp_call(6, (6, 3, 3)), _mtp_call(4, (0,) * 3)]
    turn = TurnRecord(0, "s", 0.0, 0.0, 1.0, "ok", calls=calls)
    s = summarize([turn])
    # 20 drafts, 60 draft tokens; accepted 14, 8 and 4 at positions 0, 1, 2
    assert s["mtp_acceptance_per_position"] == [14 / 20, 8 / 20, 4 / 20]
    assert s["mtp_acceptance_rate"] == 26 / 60
    assert s["mtp_mean_accepted_length"] == 1 + 26 / 20
    row = metrics.table_row("embedded mtp3", 1, s)
    assert row[13:16] == ["0.433", "2.30", "0.70/0.40/0.20"]
    assert "acc. per pos. the share of drafts" in metrics.markdown_table([row])
    # the endpoint's counters (serving.prom.spec_delta) instead of the calls'
    spec = {"drafts": 4, "draft_tokens": 8, "accepted_tokens": 5,
            "accepted_per_pos": [3, 2]}  # fmt: skip
    s = summarize([turn], spec)
    assert s["mtp_acceptance_per_position"] == [0.75, 0.5]
    assert s["mtp_mean_accepted_length"] == 1 + 5 / 4
    del spec["accepted_per_pos"]  # a vLLM without the per-position counter
    assert summarize([turn], spec)["mtp_acceptance_per_position"] == []


def test_no_mtp_gives_no_acceptance_per_position():
    s = summarize(_scripted([("ok", 2.0)]))
    assert s["mtp_acceptance_per_position"] == []
    assert s["mtp_acceptance_rate"] is None and s["mtp_mean_accepted_length"] is None
    row = metrics.table_row("embedded", 1, s)
    assert row[13:16] == ["-", "-", "-"]
    assert "vLLM's definitions" not in metrics.markdown_table([row])


def test_distinct_replies_count_different_answers_of_answered_turns_only():
    turns = _scripted([("ok", 1.0), ("ok", 1.0), ("ok", 1.0), ("failed", 1.0)])
    for t, reply in zip(turns, ["a", "a", "b", "c"]):
        t.reply = reply  # the failed turn's last rejected reply is not counted
    s = summarize(turns)
    assert s["distinct_replies"] == 2
    assert metrics.table_row("x", 1, s)[4] == "2"
    for t in turns:
        t.reply = "the same sentence"  # a constant policy: one reply for all
    assert summarize(turns)["distinct_replies"] == 1


def test_a_batched_call_shared_by_its_turns_counts_once():
    """`serving.schedule` appends one `CallStats` to every turn whose rows it
    carried: the summary counts each call once (tokens, TTFTs, drafts, batch)."""
    shared = CallStats(batch=3, wall_s=2.0, ttft_s=[0.2, 0.2, 0.2], row_decode_s=5.4,
                       new_tokens=60, prompt_tokens=300, drafts_proposed=30,
                       drafts_accepted=12, row_verifies=30, accepted_per_pos=(12,),
                       cached_tokens=90)  # fmt: skip
    alone = CallStats(batch=1, wall_s=1.0, ttft_s=[0.5], row_decode_s=0.5,
                      new_tokens=11, prompt_tokens=100)  # fmt: skip
    turns = [TurnRecord(i, "s", 0.0, 0.0, 3.0, "ok", calls=[shared]) for i in range(3)]
    turns[0].calls.append(alone)
    s = summarize(turns)
    assert s["new_tokens"] == 71 and s["prompt_tokens"] == 400
    assert s["cached_tokens"] == 90 and s["prefix_cache_hit_rate"] == 90 / 400
    assert s["mean_batch"] == 2.0  # (3 + 1) / 2 calls
    assert s["ttft_s"]["p50"] == pytest.approx(np.percentile([0.2] * 3 + [0.5], 50))
    assert s["decode_tok_s"] == pytest.approx((57 + 10) / (5.4 + 0.5))
    assert s["mtp_acceptance_rate"] == pytest.approx(12 / 30)
    assert s["model_calls_per_turn"] == pytest.approx(4 / 3)  # each turn's own
    # the same records, each call its own object: counted as separate calls
    copies = [
        TurnRecord(i, "s", 0.0, 0.0, 3.0, "ok", calls=[CallStats(**vars(shared))])
        for i in range(3)
    ]
    assert summarize(copies)["new_tokens"] == 180
