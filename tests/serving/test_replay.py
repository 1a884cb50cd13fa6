"""The embedded replay on a tiny random Qwen3: every metric, concurrency 1 and 2."""

import json
import math

import pytest

from serving.cases import trace_jobs
from serving.replay import ReplayOptions, replay
from serving.trace import read_trace


@pytest.mark.parametrize("mtp_k", [0, 2])
def test_embedded_replay_reports_every_metric(
    tiny_model, qwen_tokenizer, small_trace, tmp_path, mtp_k
):
    jobs = trace_jobs(read_trace(small_trace))[:3]
    opts = ReplayOptions(max_new_tokens=8, mtp_k=mtp_k)
    result = replay(
        jobs,
        "embedded",
        (tiny_model, qwen_tokenizer),
        tmp_path,
        concurrency=(1, 2),
        opts=opts,
    )
    assert {p.name for p in tmp_path.iterdir()} >= {
        "replay.json",
        "replay.md",
        "latency_cdf.png",
    }
    assert json.loads((tmp_path / "replay.json").read_text())["clock"] == "virtual"
    for run in result["runs"]:
        s = run["summary"]
        assert s["messages"] == 3 and s["errors"] == 0
        for key in ("latency_s", "ttft_s", "first_token_s"):
            assert 0 < s[key]["p50"] <= s[key]["p95"] <= s[key]["p99"]
        assert 0 <= s["share_under_15s"] <= 1
        assert s["decode_tok_s"] > 0 and s["new_tokens"] > 0
        # by construction (serving.metrics), not by how the clocks ran
        assert math.isclose(sum(s["time_split"].values()), 1.0, abs_tol=1e-12)
        if mtp_k:
            assert 0 <= s["mtp_acceptance_rate"] <= 1
            assert s["mtp_mean_accepted_length"] >= 1
        else:
            assert s["mtp_acceptance_rate"] is None
        for turn in run["turns"]:
            assert turn["end"] >= turn["start"] >= turn["arrival"]
            assert turn["calls"], "every turn makes at least one model call"
    one, two = result["runs"]
    assert one["summary"]["mean_batch"] == 1.0  # concurrency 1 never batches
    assert two["summary"]["mean_batch"] >= 1.0
    assert "| embedded" in (tmp_path / "replay.md").read_text()
