"""The LLM judge against a local OpenAI-compatible stand-in on 127.0.0.1."""

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sim.judge_labels import labelled_agreement, load_labels
from sim.judge_llm import (
    Endpoint,
    LLMJudge,
    agreement,
    cohen_kappa,
    success_from_votes,
    vote,
)
from sim.judge_prompt import extract_json, judge_messages, parse_verdict
from sim.rewards import REWARDS, Score

CASES = load_labels()
CASE = next(c for c in CASES if c.id == "price_ok")


def verdict(acc, eff, tool, skill, why="ok"):
    return json.dumps(
        {
            "accuracy": {"score": acc, "rationale": why},
            "effectiveness": {"score": eff, "rationale": why},
            "tool_rationality": {"score": tool, "rationale": why},
            "skill_selection": {"score": skill, "rationale": why},
        },
        ensure_ascii=False,
    )


HANG = "hang"  # a delay that never answers (until the stub closes)


class Stub:
    """A chat-completions server; ``script(path, body, n)`` -> (status, content,
    delay), ``n`` counting requests per path; content None sends a non-JSON body;
    the delay ``HANG`` holds the reply until the stub closes."""

    def __init__(self, script):
        self.script, self.requests, self.counts = script, [], {}
        self.lock = threading.Lock()
        self.closing = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                path = self.path.removesuffix("/v1/chat/completions")
                with stub.lock:
                    n = stub.counts.get(path, 0)
                    stub.counts[path] = n + 1
                    stub.requests.append((path, body, dict(self.headers)))
                status, content, delay = stub.script(path, body, n)
                if delay == HANG:
                    stub.closing.wait(60)
                else:
                    time.sleep(delay)
                if content is None:
                    data = b"<html>oops</html>"
                else:
                    reply = {"choices": [{"message": {"content": content}}]}
                    data = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    servers = []

    def make(script):
        servers.append(Stub(script))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def judge_case(judge, case=CASE):
    return judge.judge(case.traj, case.snapshot, case.msg, case.binding)


def test_three_endpoints_vote_majority_and_median(stub):
    replies = {
        "/a": "Here is my verdict: " + verdict(1, 1, 1, 1) + " Hope it helps.",
        "/b": "```json\n" + verdict(0, 0.5, 0.75, 1) + "\n```",
        "/c": "<think>{scratch}</think>" + verdict(1, 0, 0.5, "1"),
    }
    s = stub(lambda path, body, n: (200, replies[path], 0))
    eps = [
        Endpoint(s.url + p, model=f"m{p[1]}", api_key="k") for p in "/a /b /c".split()
    ]
    v = judge_case(LLMJudge(eps, backoff=0))
    assert v.errors == []
    got = {name: sc.value for name, sc in v.scores.items()}
    assert got == {
        "accuracy": 1.0,
        "effectiveness": 0.5,
        "tool_rationality": 0.75,
        "skill_selection": 1.0,
        "success": 0.0,  # effectiveness 0.5
    }
    assert "votes [1.0, 0.0, 1.0]" in v.scores["accuracy"].rationale
    assert sorted(s.counts.items()) == [("/a", 1), ("/b", 1), ("/c", 1)]
    for path, body, headers in s.requests:
        assert body["model"] == "m" + path[1] and body["temperature"] == 0.0
        assert headers["Authorization"] == "Bearer k"
        assert body["messages"][0]["role"] == "system"


def test_bad_replies_are_retried_then_recorded_without_raising(stub):
    def script(path, body, n):
        if path == "/garbage-once":  # unreadable, then a good answer
            return 200, ("I think it's fine!" if n == 0 else verdict(1, 1, 1, 1)), 0
        if path == "/500-once":
            return (500, "", 0) if n == 0 else (200, verdict(0, 1, 1, 0.5), 0)
        return 200, None, 0  # never JSON

    s = stub(script)
    eps = [s.url + p for p in ("/garbage-once", "/500-once", "/html")]
    v = judge_case(LLMJudge(eps, retries=1, backoff=0))
    assert v.votes[0] is not None and v.votes[1] is not None and v.votes[2] is None
    # The 500 is retried by the client and the garbled verdict asked again; a
    # body that is not JSON is a malformed reply, which ends that vote.
    assert s.counts == {"/garbage-once": 2, "/500-once": 2, "/html": 1}
    assert len(v.errors) == 2  # one per failed attempt the judge saw
    assert any("no JSON object" in e for e in v.errors)
    assert sum("response is not JSON" in e for e in v.errors) == 1
    # Two votes left: a 1-1 accuracy tie goes to 0; the lower median elsewhere.
    assert v.scores["accuracy"].value == 0.0
    assert v.scores["effectiveness"].value == 1.0
    assert v.scores["skill_selection"].value == 0.5


def test_timeouts_and_bad_scores_are_recorded(stub):
    def script(path, body, n):
        if path == "/slow":  # never answers: a timeout whatever the machine load
            return 200, verdict(1, 1, 1, 1), HANG
        if path == "/range":  # a score outside [0, 1]
            return 200, verdict(1, 1, 1.5, 1), 0
        return 200, verdict(1, 0.5, 1, 1), 0

    s = stub(script)
    eps = [s.url + p for p in ("/slow", "/range", "/fine")]
    # a deadline far above a local reply's milliseconds, so only /slow misses it
    v = judge_case(LLMJudge(eps, timeout=3.0, retries=0, backoff=0))
    assert v.votes[:2] == [None, None]
    assert any("timed out" in e or "Timeout" in e for e in v.errors)
    assert any("tool_rationality: bad or missing score 1.5" in e for e in v.errors)
    assert v.scores["effectiveness"].value == 0.5  # the one valid vote


def test_all_votes_failing_gives_nan_not_an_exception(stub):
    s = stub(lambda path, body, n: (200, "no idea", 0))
    v = judge_case(LLMJudge([s.url], retries=1, backoff=0))
    assert all(math.isnan(sc.value) for sc in v.scores.values())
    assert all("no valid vote" in sc.rationale for sc in v.scores.values())
    assert len(v.errors) == 6
    dead = LLMJudge(["http://127.0.0.1:9"], retries=0, timeout=0.5)
    assert all(math.isnan(sc.value) for sc in judge_case(dead).scores.values())


def test_one_endpoint_gives_three_samples(stub):
    answers = [verdict(1, 1, 1, 1), verdict(0, 0.5, 1, 1), verdict(1, 0.5, 0.5, 1)]
    s = stub(lambda path, body, n: (200, answers[body["seed"]], 0))
    scores = LLMJudge([s.url + "/v1"], backoff=0)(
        CASE.traj, CASE.snapshot, CASE.msg, CASE.binding
    )
    assert len(s.requests) == 3
    assert sorted(b["seed"] for _, b, _ in s.requests) == [0, 1, 2]
    assert {b["temperature"] for _, b, _ in s.requests} == {0.7}
    assert [scores[n].value for n in REWARDS] == [1.0, 0.5, 1.0, 1.0]


def test_extract_json_and_parse_verdict():
    assert extract_json("nothing here") is None and extract_json(None) is None
    text = 'note {"x": "}"} then {"Accuracy": 1, "Tool Rationality": "0.5"}'
    obj = extract_json(text)
    scores, problems = parse_verdict(obj)
    assert scores["accuracy"] == (1.0, "") and scores["tool_rationality"][0] == 0.5
    assert problems == [
        "effectiveness: bad or missing score None",
        "skill_selection: bad or missing score None",
    ]
    wrapped = {"scores": {"accuracy": {"value": True, "reason": "fine"}}}
    assert parse_verdict(extract_json(json.dumps(wrapped)))[0]["accuracy"] == (
        1.0,
        "fine",
    )
    snapped, _ = parse_verdict({"accuracy": 0.2, "effectiveness": 0.6})
    assert snapped["accuracy"][0] == 0.0 and snapped["effectiveness"][0] == 0.5
    bad, problems = parse_verdict({"accuracy": "yes", "effectiveness": float("nan")})
    assert bad == {} and len(problems) == 4
    assert parse_verdict(["not", "a", "dict"]) == ({}, ["no JSON object with scores"])


def test_vote_rules():
    assert vote([1, 1, 0], "accuracy") == 1.0 and vote([1, 0], "accuracy") == 0.0
    assert vote([1, 0.5, 0], "effectiveness") == 0.5
    assert vote([1, 0], "effectiveness") == 0.0  # the lower median
    assert vote([0.25, 1, 0.75], "tool_rationality") == 0.75
    assert math.isnan(vote([], "skill_selection"))


def test_the_prompt_holds_the_room_facts_and_the_rubric():
    system, user = judge_messages(CASE.traj, CASE.snapshot, CASE.msg, CASE.binding)
    assert "accuracy (0 or 1)" in system["content"] and "JSON" in system["content"]
    text = user["content"]
    for needle in (
        '"current_price": 159.0',
        '"expected_reply_skill": "item_qa"',
        '"expected_strategy_skill": "promotion_push"',
        "get_product_info_by_link_id",
        "永不变形",
        "1号链接现在159元",
        '"reply_max_chars": 120',
    ):
        assert needle in text, needle


def test_cohen_kappa_and_agreement():
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa([1, 1], [1, 1]) == 1.0 and math.isnan(cohen_kappa([], []))
    a = [{"accuracy": Score(1.0), "tool_rationality": 0.75}, {"accuracy": 0.0}]
    b = [{"accuracy": 1.0, "tool_rationality": 0.5}, {"accuracy": Score(math.nan)}]
    out = agreement(a, b, rewards=("accuracy", "tool_rationality"))
    assert out["accuracy"] == {
        "n": 1,
        "agreement": 1.0,
        "mean_abs_diff": 0.0,
        "kappa": 1.0,
    }
    assert out["tool_rationality"]["agreement"] == 0.0
    assert out["tool_rationality"]["mean_abs_diff"] == 0.25
    assert "kappa" not in out["tool_rationality"]
    assert out["overall"] == 0.5
    with pytest.raises(ValueError):
        agreement(a, b[:1])


def test_llm_judge_agreement_on_the_labelled_set(stub):
    """Endpoints that know the labels; one of three always flips accuracy."""
    labels = {}
    for c in CASES:
        user = judge_messages(c.traj, c.snapshot, c.msg, c.binding)[1]["content"]
        labels[user] = c.expect

    def script(path, body, n):
        e = dict(labels[body["messages"][1]["content"]])
        if path in flipped:
            e["accuracy"] = 1 - e["accuracy"]
        return 200, verdict(*(e[k] for k in REWARDS)), 0

    s = stub(script)
    eps = [s.url + p for p in ("/a", "/b", "/c")]
    flipped = {"/c"}
    report = labelled_agreement(LLMJudge(eps, backoff=0), CASES)
    assert report["mismatches"] == [] and report["overall"] == 1.0
    assert report["accuracy"]["kappa"] == 1.0
    assert report["vs_rule_judge"]["overall"] == 1.0
    flipped = {"/b", "/c"}  # the majority is now wrong on accuracy
    report = labelled_agreement(LLMJudge(eps, backoff=0), CASES)
    assert report["accuracy"]["agreement"] == 0.0
    assert report["accuracy"]["kappa"] < 0
    assert report["effectiveness"]["agreement"] == 1.0
    wrong = [m for m in report["mismatches"] if m[1] == "accuracy"]
    assert len(wrong) == len(CASES)
    # success follows the (wrong) accuracy votes wherever the rest would pass
    flips = [m[0] for m in report["mismatches"] if m[1] == "success"]

    def passes_but_accuracy(e):
        rest = e["effectiveness"] == e["skill_selection"] == 1
        return rest and e["tool_rationality"] > 0.5

    want = [c.id for c in CASES if passes_but_accuracy(c.expect)]
    assert flips == want and len(want) > 10
    assert report["vs_rule_judge"]["accuracy"]["agreement"] == 0.0


def test_success_from_votes_is_the_rule_judges_definition():
    def scores(acc, eff, tool, skill):
        vals = dict(zip(REWARDS, (acc, eff, tool, skill)))
        return {k: Score(v) for k, v in vals.items()}

    assert success_from_votes(scores(1, 1, 1, 1)).value == 1.0
    assert success_from_votes(scores(1, 1, 0.75, 1)).value == 1.0  # one redundancy
    for bad in [(0, 1, 1, 1), (1, 0.5, 1, 1), (1, 1, 0.5, 1), (1, 1, 1, 0.5)]:
        assert success_from_votes(scores(*bad)).value == 0.0, bad
    assert math.isnan(success_from_votes(scores(1, math.nan, 1, 1)).value)


def test_the_judge_prompt_shows_sign_off_and_campaign():
    import dataclasses

    from augment import apply_spec
    from hat_jax.harness import Trajectory, load_harness
    from sim.binding import bind, canonical_mapping
    from sim.datasets import make_cases
    from sim.judge_prompt import playbook

    base = load_harness("taolive_v1")
    h2, _, m = apply_spec(base, None, "add_sign_off(tag=#CozyCart)", 0)
    case = make_cases("test", 0, 1)[0]
    signed = bind(h2, canonical_mapping(base).compose(m))
    assert playbook(case.snapshot, case.message, signed)["required_sign_off"] == [
        "#CozyCart"
    ]
    assert playbook(case.snapshot, case.message, bind(base))["required_sign_off"] == []
    snap = dataclasses.replace(case.snapshot, campaign=True)
    before = playbook(snap, case.message, bind(base))
    after = playbook(snap, case.message, bind(load_harness("taolive_d12")))
    assert before["double12_campaign_in_room"] and after["double12_campaign_in_room"]
    assert before["cross_shop_discount"] is None  # v1's tools never return it
    assert after["cross_shop_discount"] == {"every": 300.0, "off": 30.0}
    assert (
        "cross-shop discount"
        in judge_messages(
            Trajectory("h", case.message.text, [], reply="hi", status="ok"),
            snap,
            case.message,
            bind(base),
        )[0]["content"]
    )
