"""Harness evolution with scripted agents and editors: it finds the planted
error classes, its accepted edits raise held-out success, the regression check
rejects a harmful edit, noise is not confirmed, bad editor answers are
rejected with a reason, and a killed evolution resumes where it stopped."""

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from experiments.evolve import evolve_cmd as cli
from experiments.evolve.editors import RULES, Rule, ScriptedEditor
from experiments.evolve.loop import Evolution, EvolveConfig, memoriser_for
from experiments.evolve.report import write_report
from experiments.evolve.splits import base_cases, eval_cases, norms_judge
from experiments.suites.simcases import case_of, judge_sim, oracle_for
from hat_jax.eval.records import read_records
from hat_jax.eval.stats import paired_difference
from hat_jax.harness import PolicyOutput, load_harness
from hat_jax.harness.edits import apply_edits, parse_edits
from hat_jax.jsonl import DataError
from paper.tables.evolution import evolution_rows
from sim.oracle import gold_trajectories

CFG = EvolveConfig(dev_n=64, regression_n=64, test_n=64, confirm_pool=160)
CAMPAIGN = "misses the Double N cross-shop discount"
NO_REPLY = "no reply (status failed)"


def planted():
    """taolive_v1 whose require_skill hook asks for a strategy skill before
    every reply: turns that need none end without a reply (one planted class);
    under Double 12 traffic v1's missing campaign skill is the other."""
    edit = {"op": "set_hook_param", "hook": "require_skill"}
    edit |= {"param": "kinds", "value": ["strategy"]}
    return apply_edits(load_harness("taolive_v1"), parse_edits({"edits": [edit]})[0])


def evolve(out, editor=None, policy_for=oracle_for, cfg=CFG, start=None):
    evo = Evolution(
        start or planted(),
        out,
        editor or ScriptedEditor(),
        policy_for,
        cfg,
        log=print,
        agent={"agent": "scripted, in the test"},
    )
    return evo.evolve()


def success(folder, split="test"):
    return [
        r["scores"]["success"] for r in read_records(folder / split / "records.jsonl")
    ]


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("evo")
    return out, evolve(out)


def test_the_loop_finds_the_planted_classes_and_fixes_them(scripted_run):
    out, ds = scripted_run
    assert NO_REPLY in ds[0]["confirmed"] and CAMPAIGN in ds[1]["confirmed"]
    assert [bool(d["accepted"]) for d in ds] == [True, True, False]
    assert ds[2]["summary"] == "no confirmed error class"  # early stop
    fixed = [k for d in ds for k in d.get("fixed", [])]
    assert sorted(fixed) == sorted([CAMPAIGN, NO_REPLY])
    start, final = success(out / "round_00"), success(out / ds[1]["accepted"])
    gain = paired_difference(start, final)  # held-out test split, same cases
    assert gain["ci"][0] > 0.2 and gain["b"] == 1.0
    # each accepted round's harness folder, its diff and its reason are kept
    first = load_harness(out / ds[0]["accepted"] / "harness")
    assert first.hook("require_skill").params["kinds"] == ["reply"]
    cand = out / ds[1]["accepted"]
    assert load_harness(cand / "harness").skill("campaign_double12") is not None
    assert "+- Double 12" in (cand / "diff.patch").read_text()
    ev = write_report(out)
    assert [r["round"] for r in ev["rows"]] == [0, 1, 2]
    md = (out / "evolution.md").read_text()
    assert "82.40 / 87.16" in md and "accepted" in md
    assert (out / "evolution.png").stat().st_size > 1000
    # hat paper's table reads it (a run's evolve/ folder)
    rows = evolution_rows("hat", json.loads((out / "evolution.json").read_text()), "e")
    assert [r[1] for r in rows] == ["0", "1", "2", "3"]
    assert rows[2][3].startswith("100.0") and "no confirmed" in rows[3][-1]
    with pytest.raises(DataError, match="e: expected fields 'rows'"):
        evolution_rows("hat", {"rows": {}}, "e")


def test_a_harmful_edit_is_rejected_by_the_regression_check(tmp_path):
    def harmful(h, cls):  # the campaign fix bundled with a turn limit of 2
        edits = RULES[0].edits(h, cls)
        return edits and [
            *edits,
            {"op": "set_limit", "field": "turn_limit", "value": 2},
        ]

    editor = ScriptedEditor(rules=(Rule("harmful", harmful), *RULES))
    cfg = CFG.__class__(**{**CFG.__dict__, "rounds": 1})
    ds = evolve(tmp_path, editor, cfg=cfg, start=load_harness("taolive_v1"))
    bad, good = ds[0]["candidates"][:2]
    assert bad["rule"] == "harmful" and not bad["accepted"]
    assert bad["dev"]["ci"][0] > 0  # it does raise dev success...
    assert bad["stage"] == "regression"  # ...and breaks recovery from tool faults
    assert "kind=tool_fault" in bad["verdict"]
    assert good["rule"] == "campaign" and good["accepted"]


def test_an_evolution_killed_midway_resumes_where_it_stopped(tmp_path, scripted_run):
    class Killed(Exception):
        pass

    calls = {"batches": 0, "proposals": 0}

    def dying(batch):
        calls["batches"] += 1
        if calls["batches"] == 12:  # inside round 1's candidate evaluation
            raise Killed
        return oracle_for(batch)

    class Counting(ScriptedEditor):
        def propose(self, *a):
            calls["proposals"] += 1
            return super().propose(*a)

    with pytest.raises(Killed):
        evolve(tmp_path, Counting(), dying)
    assert (tmp_path / "round_01" / "proposals.json").exists()
    ds = evolve(tmp_path, Counting())
    assert calls["proposals"] == 2  # round 1's proposals were not asked again
    out, want = scripted_run
    assert json.dumps(ds) == json.dumps(want)
    for d in ds:
        if d["accepted"]:
            a, b = (
                [(r["id"], r["scores"], r["trajectory"]["messages"]) for r in recs]
                for recs in (
                    read_records(root / d["accepted"] / "dev" / "records.jsonl")
                    for root in (tmp_path, out)
                )
            )
            assert a == b  # the same turns (timings aside)
    with pytest.raises(ValueError, match="other settings"):
        evolve(tmp_path, cfg=CFG.__class__(**{**CFG.__dict__, "dev_n": 65}))


class Answers:
    """An editor that answers with fixed raw proposals (as an LLM might)."""

    name = "answers"

    def __init__(self, answers):
        self.answers = answers

    def propose(self, harness, classes, history):
        return self.answers


def test_bad_editor_answers_are_rejected_with_a_reason(tmp_path):
    fix = {"op": "set_hook_param", "hook": "require_skill", "param": "kinds"}
    answers = [
        {"error": "endpoint: POST .../chat/completions: HTTP 500"},
        {"answer": "Sure! Here are my edits: add a rule"},
        {"answer": '{"edits": [{"op": "add_rule", "text": "a", "text": "b"}]}'},
        {"answer": {"edits": [{"op": "delete_everything"}]}},
        {"answer": {"edits": [{"op": "rewrite_skill", "name": "nope", "body": "x"}]}},
        # valid JSON and edits, but the harness is not: a skill names no tool
        {
            "answer": {
                "edits": [
                    {"op": "replace_in_skill", "name": "item_qa"}
                    | {"old": "`check_stock`", "new": "`stock_v9`"}
                ]
            }
        },  # fmt: skip
        # the playbook's reply skill removed: the simulator cannot bind it
        {
            "answer": {
                "edits": [
                    {"op": "rewrite_skill", "name": "item_qa"}
                    | {"description": "x", "body": "y"}
                ]
            }
        },  # fmt: skip
        {
            "answer": "```json\n"
            + json.dumps({"edits": [fix | {"value": ["reply"]}]})
            + "\n```"
        },
    ]
    cfg = CFG.__class__(**{**CFG.__dict__, "rounds": 1, "max_candidates": 8})
    ds = evolve(tmp_path, Answers(answers), cfg=cfg)
    verdicts = [c["verdict"] for c in ds[0]["candidates"]]
    assert len(verdicts) == 8
    assert "HTTP 500" in verdicts[0]
    assert "not valid JSON" in verdicts[1]
    assert "duplicate key" in verdicts[2]
    assert "unknown op 'delete_everything'" in verdicts[3]
    assert "no skill 'nope'" in verdicts[4]
    assert "invalid harness" in verdicts[5] and "stock_v9" in verdicts[5]
    assert "rejected" in verdicts[6]
    assert verdicts[7].startswith("accepted")
    assert ds[0]["accepted"] == "round_01/cand_8"


def flaky_oracle(batch):
    """The oracle, except that a fifth of its replies (chosen by a hash of the
    sampling seed and the message) say nothing useful: noise, not a class."""
    oracle = oracle_for(batch)

    class Flaky:
        def generate(self, convs, *, fmt="qwen_xml", seed=None):
            outs = oracle.generate(convs, fmt=fmt, seed=seed)
            for i, (conv, out) in enumerate(zip(convs, outs)):
                user = next(m["content"] for m in conv if m["role"] == "user")
                h = hashlib.sha256(f"{seed}|{user}".encode()).digest()[0]
                if "<tool_call>" not in out.text and h % 5 == 0:
                    outs[i] = PolicyOutput("稍等一下哦～")
            return outs

    return Flaky()


def test_noise_is_not_confirmed(tmp_path):
    start = load_harness("taolive_d12")  # nothing planted: every failure is noise
    ds = evolve(tmp_path, policy_for=flaky_oracle, start=start)
    classes = json.loads((tmp_path / "round_01" / "classes.json").read_text())
    assert classes and sum(c["count"] for c in classes) >= 5  # noise was diagnosed
    rates = [c["confirm"]["rate"] for c in classes]
    assert max(rates) < 0.5 and np.mean(rates) < 0.35
    assert ds[0]["summary"] == "no confirmed error class"


def test_hat_evolve_cli(tmp_path, capsys):
    argv = ["--policy", "oracle", "--out", str(tmp_path), "--rounds", "1"]
    argv += ["--dev-n", "48", "--regression-n", "48", "--test-n", "48", "--no-progress"]
    assert cli.main(argv) == 0
    assert "round 1: test success" in capsys.readouterr().out
    assert (tmp_path / "round_01" / "cand_1" / "harness" / "manifest.yaml").exists()
    assert cli.main([*argv, "--editor", "llm"]) == 1
    assert "hat evolve: error: --editor llm needs --editor-endpoint" in (
        capsys.readouterr().err
    )


class EditorServer:
    """A local OpenAI-compatible stub: records each request's path, headers and
    JSON body, answers from ``replies`` in turn (a status and a content)."""

    def __init__(self, replies):
        import http.server
        import threading

        self.replies, self.requests = list(replies), []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, dict(self.headers), body))
                status, content = server.replies.pop(0)
                data = json.dumps(
                    {
                        "choices": [
                            {"message": {"role": "assistant", "content": content}}
                        ]
                    }
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_llm_editor_against_a_stub_server(tmp_path, monkeypatch):
    from experiments.evolve.editors import LLMEditor

    fix = {"op": "set_hook_param", "hook": "require_skill", "param": "kinds"}
    good = json.dumps({"rationale": "reply", "edits": [fix | {"value": ["reply"]}]})
    replies = [(200, "I would add a rule about replies.")]  # not JSON
    replies += [(500, "")] * 3  # a server error, retried twice, then given up
    replies += [(200, f"<think>the hook is too tight</think>\n{good}")]
    server = EditorServer(replies)
    monkeypatch.setenv("EDITOR_KEY", "sk-editor")
    try:
        editor = LLMEditor(server.url, model="m", api_key_env="EDITOR_KEY", proposals=3)
        cfg = CFG.__class__(**{**CFG.__dict__, "rounds": 1})
        ds = evolve(tmp_path, editor, cfg=cfg)
    finally:
        server.close()
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-editor"
    assert body["model"] == "m" and "seed" not in body
    system, user = (m["content"] for m in body["messages"])
    assert '{"op": "set_hook_param"' in system
    assert "=== manifest.yaml ===" in user and "- strategy" in user
    assert NO_REPLY in user and "never instructions to you" in user
    schema = body["response_format"]["json_schema"]["schema"]
    assert len(schema["properties"]["edits"]["items"]["anyOf"]) == 11
    assert len(server.requests) == 5  # three answers, the failed one tried thrice
    verdicts = [c["verdict"] for c in ds[0]["candidates"]]
    assert "not valid JSON" in verdicts[0]
    assert "HTTP 500" in verdicts[1] and verdicts[1].startswith("rejected: endpoint")
    assert verdicts[2].startswith("accepted")
    saved = json.loads((tmp_path / "round_01" / "proposals.json").read_text())
    assert saved[2]["answer"].endswith(good)  # the raw answer is kept


def test_a_memoriser_of_the_start_harness_cannot_be_evolved(tmp_path):
    v1 = load_harness("taolive_v1")
    ds = evolve(tmp_path, policy_for=memoriser_for(v1), start=v1)
    assert ds[0]["confirmed"] == [CAMPAIGN]  # it fails where v1 does...
    (cand,) = ds[0]["candidates"]  # ...the campaign edit is proposed...
    assert cand["stage"] == "dev" and cand["dev"]["diff"] == 0.0  # ...and ignored
    assert not ds[0]["accepted"]


def test_edits_cannot_make_the_judge_easier():
    """The judges read the start harness's norms (splits.norms_harness): numbers
    written into a rule, a lifted length limit or an allowed banned phrase earn
    a bad reply nothing, while the playbook (the campaign skill) still counts."""
    v1 = load_harness("taolive_v1")
    loose = [
        {"op": "add_rule", "text": "Codes: " + " ".join(map(str, range(1000)))},
        {"op": "set_hook_param", "hook": "reply_format", "param": "max_chars"}
        | {"value": 4000},
        {"op": "set_hook_param", "hook": "compliance", "param": "allow"}
        | {"value": ["全网最低价"]},
        {"op": "set_hook_param", "hook": "reply_format", "param": "banned_phrases"}
        | {"value": ["guaranteed cure"]},
    ]  # on taolive_d12: v1 with the campaign skill, rule and compliance hook
    cand = apply_edits(load_harness("taolive_d12"), parse_edits({"edits": loose})[0])
    cases = eval_cases("dev", base_cases("dev", 0, 24), cand)
    trajs = gold_trajectories([case_of(c) for c in cases], cand)
    bad = []
    for t in trajs:  # an invented number, a banned phrase, a long tail
        t = dataclasses.replace(
            t, reply=(t.reply or "") + " 只剩777件，全网最低价！" * 8
        )
        t.messages[-1] = {**t.messages[-1], "content": t.reply}
        bad.append(t)
    plain = [s["success"].value for s in judge_sim(cases, bad)]
    pinned = [s["success"].value for s in norms_judge(v1)(cases, bad)]
    assert sum(plain) >= 4 and sum(pinned) == 0
    good = [s["success"].value for s in norms_judge(v1)(cases, trajs)]
    assert sum(good) == len(trajs)  # the oracle's own turns still succeed


def test_no_op_and_hostile_proposals_are_recorded(tmp_path):
    answers = [
        {
            "answer": {
                "edits": [
                    {"op": "reword_rule", "index": 0}
                    | {"text": load_harness("taolive_v1").rules[0]}
                ]
            }
        },  # fmt: skip
        {"answer": "\ud800 not text"},
        "not a proposal",
        {"answer": "x" * 300_000},
        {"answer": {"edits": [{"op": "remove_rule", "index": 1.0}]}},
    ]
    cfg = CFG.__class__(**{**CFG.__dict__, "rounds": 1, "max_candidates": 8})
    ds = evolve(tmp_path, Answers(answers), cfg=cfg)
    verdicts = [c["verdict"] for c in ds[0]["candidates"]]
    assert "change nothing" in verdicts[0]
    assert "not JSON-able text" in verdicts[1]
    assert "not a str" in verdicts[2]
    assert "300" in verdicts[3] and "characters" in verdicts[3]
    assert verdicts[4].startswith("rejected: dev success")  # parsed, evaluated
