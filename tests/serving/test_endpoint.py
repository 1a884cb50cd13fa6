"""The endpoint replay against a fake OpenAI server, killed midway."""

import json

import pytest

from serving.cases import trace_jobs
from serving.prom import parse_by_label, parse_metrics, spec_counters, spec_delta
from serving.replay import ReplayOptions, replay
from serving.trace import make_trace, write_trace
from tests.serving.fake_openai import FakeServer


def _jobs(tmp_path, n):
    trace = make_trace(n_messages=n, rooms=2, arrivals="bursty", rate=50.0, seed=1)
    from serving.trace import read_trace

    return trace_jobs(read_trace(write_trace(trace, tmp_path / "t.jsonl")))


def test_endpoint_replay_reads_spec_counters(tmp_path):
    jobs = _jobs(tmp_path, 4)
    with FakeServer() as server:
        result = replay(
            jobs,
            "endpoint",
            server.url,
            tmp_path / "out",
            concurrency=(2,),
            opts=ReplayOptions(timeout_s=5.0),
        )
    s = result["runs"][0]["summary"]
    assert s["errors"] == 0 and s["messages"] == 4
    assert s["ttft_s"]["p50"] > 0 and s["decode_tok_s"] > 0
    assert s["mtp_acceptance_rate"] == 0.75  # 6 of 8 draft tokens per request
    assert s["mtp_mean_accepted_length"] == 1 + 6 / 4
    assert s["mtp_acceptance_per_position"] == [1.0, 0.5]  # 4 and 2 of 4 drafts
    (counts,) = result["runs"][0]["spec_counters"]  # one repeat; 4 drafts per request
    assert counts["accepted_per_pos"] == [counts["drafts"], counts["drafts"] / 2]
    table = (tmp_path / "out" / "replay.md").read_text()
    assert "| 0.750 | 2.50 | 1.00/0.50 |" in table


def test_server_killed_midway_counts_failed_turns(tmp_path):
    jobs = _jobs(tmp_path, 8)
    with FakeServer(kill_after=6) as server:
        result = replay(
            jobs,
            "endpoint",
            server.url,
            tmp_path / "out",
            concurrency=(1,),
            opts=ReplayOptions(timeout_s=2.0),
        )
    s = result["runs"][0]["summary"]
    assert s["messages"] == 8
    failed = s["errors"] + s["timeouts"]
    assert 1 <= failed <= 7, s["status"]  # some turns served before the kill
    assert s["status"].get("error", 0) == s["errors"]
    assert any("PolicyError" in e for e in s["errors_sample"])
    saved = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert sum(t["status"] == "error" for t in saved["runs"][0]["turns"]) == s["errors"]
    assert (tmp_path / "out" / "replay.md").exists()


def test_endpoint_replay_sends_the_key_it_is_told_to(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_REPLAY_KEY", "sk-replay-123")
    monkeypatch.setenv("HAT_API_KEY", "sk-default-456")
    jobs = _jobs(tmp_path, 2)
    with FakeServer() as server:
        opts = ReplayOptions(timeout_s=5.0, api_key_env="MY_REPLAY_KEY")
        replay(
            jobs, "endpoint", server.url, tmp_path / "a", concurrency=(1,), opts=opts
        )
        assert server.auth == {"Bearer sk-replay-123"}
        server.auth.clear()
        replay(jobs, "endpoint", server.url, tmp_path / "b", opts=ReplayOptions())
        assert server.auth == {"Bearer sk-default-456"}
    saved = (tmp_path / "a" / "replay.json").read_text()
    assert "sk-replay-123" not in saved and "sk-default" not in saved


def test_parse_prometheus_text():
    text = (
        "# HELP x\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 3.0\n'
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 2.0\n'
        "vllm:spec_decode_num_draft_tokens_total 10\n"
        "vllm:spec_decode_num_accepted_tokens_total 7\n"
    )
    m = parse_metrics(text)
    assert spec_counters(m) == {
        "drafts": 5.0,
        "draft_tokens": 10.0,
        "accepted_tokens": 7.0,
    }
    assert spec_counters({"other": 1.0}) is None


PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
VLLM_PAGE = (
    "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
    "# TYPE vllm:spec_decode_num_drafts_total counter\n"
    'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0\n'
    'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 30.0\n'
    'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9\n'
    'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 120.0\n'
    'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 61.0\n'
    "# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens "
    "per draft position.\n"
    f'{PER_POS}{{engine="0",model_name="m",position="0"}} 8.0\n'
    f'{PER_POS}{{engine="0",model_name="m",position="1"}} 5.0\n'
    f'{PER_POS}{{engine="0",model_name="m",position="2"}} 2.0\n'
    f'{PER_POS}{{engine="1",position="2",model_name="m, \\"x\\"}}"}} 10.0\n'
    f'{PER_POS}{{engine="1",model_name="m",position="0"}} 26.0\n'
    f'{PER_POS}{{engine="1",model_name="m",position="1"}} 10.0\n'
    'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
)


def test_per_position_counters_are_kept_by_position():
    """Summed over engines and model names, kept apart by position (label
    order and a value holding a comma, quotes and a brace do not matter)."""
    by = parse_by_label(VLLM_PAGE, "position")
    assert by == {PER_POS: {"0": 34.0, "1": 15.0, "2": 12.0}}
    m = parse_metrics(VLLM_PAGE)
    assert m[PER_POS] == 61.0  # the per-name sum still drops the labels
    assert spec_counters(m, by) == {
        "drafts": 40.0,
        "draft_tokens": 120.0,
        "accepted_tokens": 61.0,
        "accepted_per_pos": [34.0, 15.0, 12.0],
    }
    # no per-position counter (an older vLLM): the totals alone
    assert "accepted_per_pos" not in spec_counters(m, {})


@pytest.mark.parametrize(
    "positions, why",
    [
        (("0", "2"), r"positions \['0', '2'\], not 0..k-1"),
        (("1",), r"positions \['1'\]"),
        (("0", "00"), "not 0..k-1"),
        (("0", "x"), "not 0..k-1"),
    ],
)
def test_per_position_series_must_be_positions_0_to_k(positions, why):
    page = "".join(f'{PER_POS}{{position="{p}"}} 1\n' for p in positions)
    with pytest.raises(ValueError, match=why):
        spec_counters(parse_metrics(VLLM_PAGE), parse_by_label(page, "position"))
    bad = VLLM_PAGE.replace("} 5.0", "} NaN")
    with pytest.raises(ValueError, match=r'position="1"\} is nan'):
        spec_counters(parse_metrics(bad), parse_by_label(bad, "position"))


def _page(drafts, tokens, accepted, per_pos):
    """A vLLM page with the three totals and the per-position counter."""
    names = ("drafts", "draft_tokens", "accepted_tokens")
    text = "".join(
        f'vllm:spec_decode_num_{n}_total{{engine="0"}} {v}\n'
        for n, v in zip(names, (drafts, tokens, accepted))
    )
    return text + "".join(
        f'{PER_POS}{{engine="0",position="{i}"}} {v}\n' for i, v in enumerate(per_pos)
    )


def _read(text):
    return spec_counters(parse_metrics(text), parse_by_label(text, "position"))


@pytest.mark.parametrize(
    "per_pos, why",
    [
        (
            [7, 8, 3],
            r"per_pos: position 1 accepted 6 times, more than position 0 \(4\)",
        ),
        ([9, 6, 4], "per_pos sums to 13 over positions, not the 12 of"),
        ([16, 3, 1], r"positions \[0\] accepted more often than the 10 drafts"),
    ],
)
def test_per_position_deltas_vllm_cannot_make_are_refused(per_pos, why):
    """Between two reads 10 drafts, 30 draft tokens and 12 accepted tokens:
    vLLM adds a step's accepted prefix to positions 0..n-1 and to the total, so
    the per-position delta falls with position, sums to 12, starts at <= 10."""
    before = _read(_page(5, 15, 6, [3, 2, 1]))
    assert spec_delta(before, _read(_page(15, 45, 18, [9, 6, 3]))) == {
        "drafts": 10.0, "draft_tokens": 30.0, "accepted_tokens": 12.0,
        "accepted_per_pos": [6.0, 4.0, 2.0],
    }  # fmt: skip
    with pytest.raises(ValueError, match=why):
        spec_delta(before, _read(_page(15, 45, 18, per_pos)))
