"""The endpoint replay against a fake OpenAI server, killed midway."""

import json

from fake_openai import FakeServer

from serving.cases import trace_jobs
from serving.prom import parse_metrics, spec_counters
from serving.replay import ReplayOptions, replay
from serving.trace import make_trace, write_trace


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
