"""The embedded replay on a tiny random Qwen3: every metric, concurrency 1 and 2."""

import json
import math

import pytest

from paper.tables.acceptance import turn_drafts
from paper.tables.latency import check_replay
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
        assert sum(s["status"].values()) == 3
        assert s["answered"] == s["status"].get("ok", 0)
        assert s["reply_rate"] == s["answered"] / 3
        # Latency statistics cover answered turns only (a random tiny model's
        # replies seldom pass the reply hooks): nan when none was answered.
        per_turn = ("latency_s", "first_token_s")
        for key in ("ttft_s", "tpot_s", *(per_turn if s["answered"] else ())):
            assert 0 < s[key]["p50"] <= s[key]["p95"] <= s[key]["p99"], key
        if not s["answered"]:
            assert all(math.isnan(s[k]["p50"]) for k in per_turn)
        assert 0 <= s["goodput"] == s["share_under_15s"] <= s["reply_rate"]
        assert s["decode_tok_s"] > 0 and s["new_tokens"] > 0
        # by construction (serving.metrics), not by how the clocks ran; shares
        # of the answered turns' time, all 0 when there is none
        split = sum(s["time_split"].values())
        assert math.isclose(split, 1.0 if s["answered"] else 0.0, abs_tol=1e-12)
        if mtp_k:
            assert 0 <= s["mtp_acceptance_rate"] <= 1
            assert s["mtp_mean_accepted_length"] >= 1
            per_pos = s["mtp_acceptance_per_position"]  # vLLM's, from the sampler
            assert len(per_pos) == mtp_k and per_pos == sorted(per_pos, reverse=True)
            assert 1 + sum(per_pos) == pytest.approx(s["mtp_mean_accepted_length"])
            calls = [c for t in run["turns"] for c in t["calls"]]
            assert all(len(c["accepted_per_pos"]) == mtp_k for c in calls)
            # the paper's per-message reader gives the summary's rate (its
            # batched-call rule: tests/paper/test_claims_table.py)
            path = tmp_path / "replay.json"
            read = check_replay(json.loads(path.read_text()), path)
            counts = turn_drafts(read, path, run["concurrency"]).values()
            assert len(counts) == 3 and sum(p for _, p, _ in counts) > 0
            rate = sum(a for _, _, a in counts) / sum(p for _, p, _ in counts)
            assert rate == pytest.approx(s["mtp_acceptance_rate"])
        else:
            assert s["mtp_acceptance_rate"] is None
            assert s["mtp_acceptance_per_position"] == []
        for turn in run["turns"]:
            assert turn["end"] >= turn["start"] >= turn["arrival"]
            assert turn["latency"] > 0
            assert turn["calls"], "every turn makes at least one model call"
    one, two = result["runs"]
    assert one["summary"]["mean_batch"] == 1.0  # concurrency 1 never batches
    assert two["summary"]["mean_batch"] >= 1.0
    table = (tmp_path / "replay.md").read_text()
    assert "| embedded" in table and "cover answered turns only" in table
    low = any(r["summary"]["reply_rate"] < 0.95 for r in result["runs"])
    assert ("(!)" in table) == low


def test_prefix_reuse_serves_later_calls_from_the_cache_with_the_same_turns(
    tiny_model, qwen_tokenizer, small_trace, tmp_path
):
    jobs = trace_jobs(read_trace(small_trace))[:3]
    runs = {}
    for reuse in (True, False):
        opts = ReplayOptions(max_new_tokens=8, prefix_reuse=reuse)
        out = replay(
            jobs,
            "embedded",
            (tiny_model, qwen_tokenizer),
            tmp_path / str(reuse),
            concurrency=(1,),
            opts=opts,
        )
        runs[reuse] = out["runs"][0]
    on, off = runs[True], runs[False]
    assert off["summary"]["cached_tokens"] == 0
    assert off["summary"]["prefix_cache_hit_rate"] == 0.0
    s = on["summary"]
    assert s["prompt_tokens"] == off["summary"]["prompt_tokens"] > 0
    assert 0.5 < s["prefix_cache_hit_rate"] == s["cached_tokens"] / s["prompt_tokens"]
    assert on["turns"][0]["calls"][0]["cached_tokens"] == 0  # nothing kept yet
    # a turn's later calls continue its earlier ones: all served from the cache
    assert all(c["cached_tokens"] > 0 for t in on["turns"] for c in t["calls"][1:])
    # same turns: statuses, replies and every call's output tokens
    for a, b in zip(on["turns"], off["turns"], strict=True):
        assert (a["status"], a.get("reply")) == (b["status"], b.get("reply"))
        assert [c["new_tokens"] for c in a["calls"]] == [
            c["new_tokens"] for c in b["calls"]
        ]
