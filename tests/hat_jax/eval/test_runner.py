"""The generic eval runner: records, resumption, bootstrap CIs, summaries."""

import http.server
import json
import threading

import numpy as np
import pytest

from hat_jax.eval.backends import FIXED_SENTENCE, BackendOptions, make_policy
from hat_jax.eval.records import RecordWriter, check_run, read_records
from hat_jax.eval.runner import (
    EvalCase,
    agent_rollout,
    batches,
    chat_rollout,
    run_cases,
    same_policy,
)
from hat_jax.eval.stats import bootstrap_ci, error_reduction, mean_ci, weighted_mean_ci
from hat_jax.eval.summary import summarize_suite, summary_markdown
from hat_jax.harness import (
    ScriptedPolicy,
    StaticBackend,
    TurnRequest,
    load_harness,
)
from hat_jax.text.chat import render_assistant


class Verdict:
    def __init__(self, value, rationale=""):
        self.value, self.rationale = value, rationale


def _chat_cases(n):
    return [
        EvalCase(
            f"c{i:03d}",
            messages=({"role": "user", "content": f"repeat {i}"},),
            tags={"parity": "even" if i % 2 == 0 else "odd"},
            input={"i": i},
        )
        for i in range(n)
    ]


def _echo(messages):  # right on multiples of 3
    i = int(messages[-1]["content"].split()[-1])
    return f"<think>\nhm\n</think>\n\n{i if i % 3 == 0 else 'no'}"


def _judge(batch, trajs):
    return [
        {
            "right": Verdict(float(t.reply == str(c.input["i"])), f"said {t.reply}"),
            "half": Verdict(0.5),
        }
        for c, t in zip(batch, trajs)
    ]


class Dies:
    """A policy killed (it raises) on its call number ``after + 1``."""

    def __init__(self, inner, after):
        self.inner, self.after, self.calls = inner, after, 0

    def generate(self, conversations, **kw):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("killed")
        return self.inner.generate(conversations, **kw)


def _run(path, cases, policy, batch_size=3):
    with RecordWriter(path) as w:
        return run_cases(
            "toy",
            cases,
            policy_for=same_policy(policy),
            rollout=chat_rollout,
            judge=_judge,
            writer=w,
            batch_size=batch_size,
            progress=False,
        )


def _summary(path, cases):
    by_id = {r["id"]: r for r in read_records(path)}
    recs = [by_id[c.case_id] for c in cases]
    return summarize_suite(recs, metrics=("right", "half"), group_by=("parity",))


def test_chat_records_hold_input_trajectory_scores_and_rationales(tmp_path):
    cases = _chat_cases(4)
    assert _run(tmp_path / "r.jsonl", cases, ScriptedPolicy(_echo)) == 4
    recs = read_records(tmp_path / "r.jsonl")
    assert [r["id"] for r in recs] == ["c000", "c001", "c002", "c003"]
    r = recs[0]
    assert r["suite"] == "toy" and r["harness"] == "chat" and r["input"] == {"i": 0}
    assert r["trajectory"]["reply"] == "0"  # reasoning stripped
    assert r["trajectory"]["messages"][-1]["role"] == "assistant"
    assert r["scores"] == {"right": 1.0, "half": 0.5}
    assert r["rationales"]["right"] == "said 0"
    assert recs[1]["scores"]["right"] == 0.0


def test_killed_run_resumes_to_the_same_records_and_summary(tmp_path):
    cases = _chat_cases(12)
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    assert _run(full, cases, ScriptedPolicy(_echo)) == 12
    with pytest.raises(RuntimeError, match="killed"):
        _run(part, cases, Dies(ScriptedPolicy(_echo), after=2))
    assert len(read_records(part)) == 6  # two whole batches of three
    policy = ScriptedPolicy(_echo)
    assert _run(part, cases, policy) == 6
    assert policy.batches == [3, 3]  # only the missing batches ran
    assert _run(part, cases, policy) == 0  # nothing left to do

    def strip(path):
        out = []
        for r in read_records(path):
            r["trajectory"]["timings"] = {}
            out.append(r)
        return out

    assert strip(part) == strip(full)
    assert _summary(part, cases) == _summary(full, cases)
    s = _summary(full, cases)
    assert s["metrics"]["right"]["mean"] == pytest.approx(4 / 12)
    assert s["by"]["parity"]["even"]["n"] == 6


def test_a_partly_written_batch_reruns_whole_and_writes_only_the_rest(tmp_path):
    cases = _chat_cases(5)
    path = tmp_path / "r.jsonl"
    _run(path, cases[:1], ScriptedPolicy(_echo))  # c000 only: batch 0 is partial
    policy = ScriptedPolicy(_echo)
    assert _run(path, cases, policy) == 4
    assert policy.batches == [3, 2]  # batch 0 ran with all its cases
    assert [r["id"] for r in read_records(path)] == [c.case_id for c in cases]


def test_torn_last_line_is_dropped_and_ids_are_unique(tmp_path):
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        w.write({"id": "a", "x": 1})
        with pytest.raises(ValueError, match="already written"):
            w.write({"id": "a"})
    with open(path, "a") as f:
        f.write('{"id": "b", "x"')  # killed mid-line
    with RecordWriter(path) as w:
        assert set(w.done) == {"a"}
        w.write({"id": "b", "x": 2})
    assert [r["id"] for r in read_records(path)] == ["a", "b"]
    path.write_text('{"id": "a"}\nnot json\n{"id": "c"}\n')
    with pytest.raises(ValueError, match=r"r.jsonl:2"):
        read_records(path)


def test_check_run_refuses_other_settings(tmp_path):
    check_run(tmp_path, {"model": "m", "seed": 0})
    check_run(tmp_path, {"model": "m", "seed": 0})  # same: fine
    with pytest.raises(ValueError, match="seed: 0 -> 1"):
        check_run(tmp_path, {"model": "m", "seed": 1})


def test_bootstrap_matches_a_brute_force_loop():
    x = np.random.default_rng(5).integers(0, 2, 57).astype(float)
    rng = np.random.default_rng(0)
    means = [x[rng.integers(0, len(x), len(x))].mean() for _ in range(1000)]
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert bootstrap_ci(x) == pytest.approx((lo, hi), abs=1e-12)
    s = mean_ci(x)
    assert s["mean"] == pytest.approx(x.mean()) and s["n"] == 57
    assert s["ci"][0] < s["mean"] < s["ci"][1]
    assert mean_ci([]) == {"mean": None, "ci": None, "n": 0}
    assert mean_ci([1.0, 1.0])["ci"] == [1.0, 1.0]


def test_weighted_mean_pools_units_and_error_reduction_pairs_cases():
    w = weighted_mean_ci([1.0, 0.5, 0.0], [1, 2, 1])
    assert w["mean"] == pytest.approx(2 / 4) and w["n"] == 3
    before = [1, 1, 1, 0, 1, 0, 0, 1, 0, 0] * 4  # 20 wrong, 12 fixed
    after = [0, 1, 0, 0, 0, 0, 0, 1, 0, 0] * 4
    r = error_reduction(before, after)
    assert r["before"]["mean"] == 0.5 and r["after"]["mean"] == 0.2
    assert r["reduction"]["value"] == pytest.approx(0.6)
    lo, hi = r["reduction"]["ci"]
    assert lo <= 0.6 <= hi <= 1.0
    # brute force: the same resampled indices for both arrays
    rng = np.random.default_rng(0)
    b, a = np.array(before, float), np.array(after, float)
    vals = []
    idx = rng.integers(0, 40, size=(1000, 40))
    for i in idx:
        if b[i].mean():
            vals.append((b[i].mean() - a[i].mean()) / b[i].mean())
    assert [lo, hi] == pytest.approx(list(np.percentile(vals, [2.5, 97.5])))
    assert error_reduction([0, 0], [0, 1])["reduction"]["value"] is None
    # 5 cases wrong before (< MIN_WRONG = 10): the value, no interval
    few = error_reduction(before[:10], after[:10])["reduction"]
    assert few["value"] == pytest.approx(0.6) and few["ci"] is None
    # 15 wrong, 9 fixed by the edit (< MIN_DIFFERING = 10): no interval either;
    # all 150 wrong before and after: 0.0, not [0, 0]
    nine = error_reduction(before[:30], after[:30])["reduction"]
    assert nine["value"] == pytest.approx(0.6) and nine["ci"] is None
    same = error_reduction([1] * 150, [1] * 150)["reduction"]
    assert same["value"] == 0.0 and same["ci"] is None


def test_agent_rollout_records_the_harness_and_drops_live_meta(tmp_path):
    h = load_harness("taolive_v1")
    load = {"role": "assistant", "content": "", "tool_calls": []}
    load["tool_calls"] = [{"name": "load_skill", "arguments": {"name": "chit_chat"}}]
    policy = ScriptedPolicy([render_assistant(load), "Hi there!"])
    cases = [
        EvalCase(
            f"a{i}",
            request=TurnRequest(
                f"hello {i}", meta={"live": object(), "k": i}, harness=h
            ),
        )
        for i in range(3)
    ]
    with RecordWriter(tmp_path / "r.jsonl") as w:
        run_cases(
            "agent",
            cases,
            policy_for=same_policy(policy),
            rollout=agent_rollout(StaticBackend({})),
            judge=lambda b, ts: [{"ok": Verdict(t.status == "ok")} for t in ts],
            writer=w,
            progress=False,
        )
    recs = read_records(tmp_path / "r.jsonl")
    assert policy.batches == [3, 3]  # all three conversations per model call
    assert {r["harness"] for r in recs} == {h.id}
    assert all(r["scores"]["ok"] == 1.0 for r in recs)
    meta = recs[0]["trajectory"]["meta"]
    assert meta["k"] == 0 and "live" not in meta
    json.dumps(recs)


def test_fixed_backend_and_batches():
    (out,) = make_policy("fixed", FIXED_SENTENCE).generate([[{"role": "user"}]])
    assert out.text == FIXED_SENTENCE
    with pytest.raises(ValueError, match="unknown backend"):
        make_policy("nope", "x")
    assert [list(b) for b in batches(5, 2)] == [[0, 1], [2, 3], [4]]


def test_summary_markdown_has_overview_breakdowns_and_extras(tmp_path):
    cases = _chat_cases(6)
    _run(tmp_path / "r.jsonl", cases, ScriptedPolicy(_echo))
    s = _summary(tmp_path / "r.jsonl", cases)
    s["extra"] = {"pairs": {"before": {"mean": 0.5}, "after": {"mean": 0.25}}}
    md = summary_markdown({"run": {"model": "toy"}, "suites": {"toy": s}})
    assert "| toy | 6 | 33.3 [" in md  # right: 2 of 6
    assert "By parity:" in md and "| even | 3 |" in md
    assert "| measure | before | after |" in md and "| pairs | 50.0 | 25.0 |" in md


def test_openai_backend_asks_the_server_for_its_model():
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({"data": [{"id": "served-7b"}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            self._send({"choices": [{"text": "hi", "finish_reason": "stop"}]})

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        policy = make_policy("openai", url, BackendOptions(max_new_tokens=7))
        outs = chat_rollout(_chat_cases(3), policy, seed=0)
    finally:
        httpd.shutdown()
    assert [t.reply for t in outs] == ["hi"] * 3
    assert {b["model"] for b in seen} == {"served-7b"}
    assert {b["max_tokens"] for b in seen} == {7}
    assert {b["temperature"] for b in seen} == {0.0}


def test_summary_counts_cases_cut_at_the_token_budget(tmp_path):
    cases = _chat_cases(4)
    _run(tmp_path / "r.jsonl", cases, ScriptedPolicy(_echo))
    recs = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert summarize_suite(recs, metrics=("right",))["at_budget"] == 0
    recs[0]["trajectory"]["meta"]["finish_reason"] = "length"  # a chat case
    recs[1]["trajectory"]["meta"]["calls_at_budget"] = 2  # an agent turn
    s = summarize_suite(recs, metrics=("right",))
    assert s["at_budget"] == 2
    md = summary_markdown({"run": {}, "suites": {"toy": s}})
    assert "Cut at the token budget: 2 of 4 cases" in md
