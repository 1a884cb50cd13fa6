"""serving/toolcheck.py against a local stub (no vLLM): request bodies, the
comparison of vLLM's parsed tool calls with ours on the same raw text, the
direct check's cases and its subprocess protocol."""

import json
import sys
from pathlib import Path

import pytest

from serving import toolcheck
from serving.chat_template import TOOL_PARSERS
from serving.toolcheck import (
    EDGE_TOOL,
    calls_equal,
    chat_body,
    check_served,
    completion_body,
    direct_cases,
    json_equal,
    our_calls,
    vllm_chat,
)
from tests.local_http import Local, send

REPO = Path(__file__).resolve().parents[2]
TOOLS = [EDGE_TOOL]
CALL_TEXT = (
    "<tool_call>\n<function=edge_case>\n<parameter=text>\nred M\n</parameter>\n"
    "<parameter=count>\n3\n</parameter>\n</function>\n</tool_call>"
)


def test_json_equal_numbers_by_value_booleans_apart():
    assert json_equal(3, 3.0) and json_equal(
        {"a": [1, {"b": 2.0}]}, {"a": [1, {"b": 2}]}
    )
    assert not json_equal(True, 1) and not json_equal(0, False)
    assert not json_equal("3", 3) and not json_equal(None, "null")
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1], [1, 1])
    assert json_equal({"x": None}, {"x": None})


def test_calls_equal_order_and_arguments():
    a = [{"name": "f", "arguments": {"n": 3}}, {"name": "g", "arguments": {}}]
    assert calls_equal(a, [{"name": "f", "arguments": {"n": 3.0}}, a[1]])
    assert not calls_equal(a, a[::-1]) and not calls_equal(a, a[:1])
    assert not calls_equal(a[:1], [{"name": "f", "arguments": '{"n": 3'}])


def test_bodies():
    msgs = [{"role": "user", "content": "hi"}]
    body = chat_body(msgs, TOOLS, max_tokens=7)
    assert body["tools"] == TOOLS and body["tool_choice"] == "auto"
    assert body["temperature"] == 0.0 and body["return_token_ids"] is True
    assert "structured_outputs" not in body and "chat_template_kwargs" not in body
    forced = chat_body(msgs, TOOLS, max_tokens=7, enable_thinking=False, force="T")
    assert forced["structured_outputs"] == {"choice": ["T"]}
    assert forced["chat_template_kwargs"] == {"enable_thinking": False}
    comp = completion_body([1, 2], max_tokens=7, force="T")
    assert comp["prompt"] == [1, 2] and comp["structured_outputs"] == {"choice": ["T"]}
    assert comp["skip_special_tokens"] is body["skip_special_tokens"] is False


def chat_reply(calls, token_ids=(5, 6), prompt=(1, 2, 3), content=None):
    tool_calls = [
        {"id": f"c{i}", "type": "function",
         "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]  # fmt: skip
    return {
        "prompt_token_ids": list(prompt),
        "choices": [{
            "message": {"role": "assistant", "content": content,
                        "tool_calls": tool_calls},
            "finish_reason": "tool_calls" if calls else "stop",
            "token_ids": list(token_ids),
        }],
    }  # fmt: skip


def completion_reply(text, token_ids=(5, 6)):
    return {"choices": [{"text": text, "token_ids": list(token_ids)}]}


def served(replies, **kw):
    def respond(h, n):
        send(h, 200, replies[n])

    from hat_jax.endpoint import EndpointClient

    with Local(respond) as srv, EndpointClient(srv.url, retries=0) as client:
        rec = check_served(
            client, [{"role": "user", "content": "x"}], TOOLS, fmt="qwen_xml",
            max_tokens=8, **kw,
        )  # fmt: skip
    return rec, srv.paths


def test_served_equal_calls_pass():
    good = [("edge_case", {"text": "red M", "count": 3})]
    rec, paths = served(
        [chat_reply(good), completion_reply(CALL_TEXT)],
        expect_prompt=[1, 2, 3], force=CALL_TEXT,
    )  # fmt: skip
    assert paths == ["/v1/chat/completions", "/v1/completions"]
    assert rec["ok"] and rec["calls_equal"] and rec["same_tokens"]
    assert rec["prompt_equal"] and rec["forced_text_equal"] and rec["n_calls"] == 1


def test_forced_text_may_split_into_other_tokens():
    good = [("edge_case", {"text": "red M", "count": 3})]
    rec, _ = served(
        [chat_reply(good, token_ids=(5, 6)), completion_reply(CALL_TEXT, (7, 8, 9))],
        force=CALL_TEXT,
    )  # fmt: skip
    assert rec["ok"] and not rec["same_tokens"]
    truncated = chat_reply(good)
    truncated["choices"][0]["finish_reason"] = "length"
    rec, _ = served([truncated, completion_reply(CALL_TEXT)], force=CALL_TEXT)
    assert not rec["ok"]


@pytest.mark.parametrize("what", ["arguments", "type", "tokens", "prompt", "text"])
def test_served_differences_fail(what):
    calls = [("edge_case", {"text": "red M", "count": 3})]
    text, tokens, prompt = CALL_TEXT, (5, 6), [1, 2, 3]
    if what == "arguments":
        calls = [("edge_case", {"text": "red M", "count": 4})]
    elif what == "type":  # vLLM left the integer a string
        calls = [("edge_case", {"text": "red M", "count": "3"})]
    elif what == "tokens":
        tokens = (5, 7)
    elif what == "prompt":
        prompt = [1, 2, 4]
    force = {"text": "other", "tokens": None}.get(what, CALL_TEXT)
    rec, _ = served(
        [chat_reply(calls, prompt=prompt), completion_reply(text, tokens)],
        expect_prompt=[1, 2, 3], force=force,
    )  # fmt: skip
    assert not rec["ok"]
    if what == "prompt":
        assert rec["prompt_first_difference"] == {
            "index": 2, "ours": [3], "vllm": [4]
        }  # fmt: skip


def test_served_no_call_equals_no_call():
    rec, _ = served([chat_reply([], content="blah"), completion_reply("blah")])
    assert rec["ok"] and rec["n_calls"] == 0 and rec["ours"]["tool_calls"] == []
    rec, _ = served([chat_reply([]), completion_reply(CALL_TEXT)])
    assert not rec["ok"]  # vLLM missed a call our parser reads


def test_vllm_chat_rejects_bad_replies():
    from hat_jax.endpoint import PolicyError

    bad_call = {"message": {"tool_calls": [{"function": 1}]}}
    for bad in (
        {},
        {"choices": []},
        {"choices": [{"message": 3}]},
        {"choices": [bad_call]},
    ):
        with pytest.raises(PolicyError):
            vllm_chat(bad, "POST x")
    got = vllm_chat(chat_reply([("f", {"a": 1})]), "POST x")
    assert got["tool_calls"] == [{"name": "f", "arguments": {"a": 1}}]
    garbled = chat_reply([("f", {})])
    garbled["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{"
    assert vllm_chat(garbled, "x")["tool_calls"][0]["arguments"] == "{"


def test_direct_cases_round_trip_through_our_parser():
    cases = direct_cases(TOOL_PARSERS)
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    assert {c["tool_parser"] for c in cases} == set(TOOL_PARSERS.values())
    for known in [*toolcheck.KNOWN_DIFFERENCES, *toolcheck.NO_ROUND_TRIP]:
        assert known in ids
    by_id = {cid: calls for cid, _, calls, _ in toolcheck.EDGE_CALLS}
    for c in cases:
        base = c["id"].removesuffix("+think")
        want = by_id[base.split("/")[1]]
        want = [{"name": w.name, "arguments": w.arguments} for w in want]
        if base in toolcheck.NO_ROUND_TRIP:
            want[0]["arguments"] = toolcheck.NO_ROUND_TRIP[base]
        got = our_calls(c["text"], c["fmt"], c["tools"])
        assert got["errors"] == [], c["id"]
        assert calls_equal(got["tool_calls"], want), c["id"]


def test_qwen_xml_strings_that_read_as_json_are_written_raw():
    cases = {c["id"]: c["text"] for c in direct_cases(TOOL_PARSERS)}
    assert "<parameter=text>\n3\n</parameter>" in cases["qwen_xml/string_like_number"]
    assert '<parameter=text>\n"hi"\n</parameter>' in cases["qwen_xml/string_quoted"]
    tag = cases["qwen_xml/string_with_tag"]
    assert '<parameter=text>\n"\\u003c/parameter>"\n</parameter>' in tag


def test_run_direct_through_a_fake_serve_python(tmp_path, monkeypatch):
    """The subprocess protocol, with a stand-in for vllm_toolparse.py that answers
    our own parse (quoting the value of a case declared a known difference) and
    fails one case."""
    known = {"qwen_xml/string_like_number": "a reason"}
    monkeypatch.setattr(toolcheck, "KNOWN_DIFFERENCES", known)
    stub = tmp_path / "stub.py"
    stub.write_text(
        "import json, sys\n"
        "from serving.toolcheck import our_calls\n"
        f"KNOWN_DIFFERENCES = {known!r}\n"
        "spec = json.load(sys.stdin)\n"
        "fmt = {'qwen3_xml': 'qwen_xml', 'hermes': 'hermes'}\n"
        "rows = []\n"
        "for c in spec['cases']:\n"
        "    calls = our_calls(c['text'], fmt[c['tool_parser']], c['tools'])\n"
        "    calls = calls['tool_calls']\n"
        "    if c['id'].removesuffix('+think') in KNOWN_DIFFERENCES:\n"
        "        args = calls[0]['arguments']\n"
        "        args['text'] = json.dumps(args['text'])\n"
        "    if c['id'] == 'hermes/chinese':\n"
        "        calls = []\n"
        "    rows.append({'id': c['id'], 'error': None, 'content': None,\n"
        "                 'reasoning': None, 'tool_calls': [\n"
        "        {'name': x['name'], 'arguments': json.dumps(x['arguments'])}\n"
        "        for x in calls]})\n"
        "json.dump(rows, sys.stdout)\n"
    )
    monkeypatch.setattr(toolcheck, "TOOLPARSE", stub)
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the stub imports serving
    out = toolcheck.run_direct(sys.executable, tmp_path, TOOL_PARSERS)
    s = toolcheck.summary(out)
    assert s["failed"] == ["hermes/chinese"]
    assert sorted(s["known_differences"]) == sorted(
        list(known) + [k + "+think" for k in known]
    )
    assert all(r["known"] == "a reason" for r in out if "known" in r)
    assert s["with_calls"] == s["n"] - 1


def test_run_vllm_parsers_reports_a_crash(tmp_path, monkeypatch):
    stub = tmp_path / "crash.py"
    stub.write_text("import sys\nsys.stderr.write('no vllm here')\nsys.exit(3)\n")
    monkeypatch.setattr(toolcheck, "TOOLPARSE", stub)
    with pytest.raises(RuntimeError, match="(?s)exited with 3.*no vllm here"):
        toolcheck.run_vllm_parsers(sys.executable, tmp_path, direct_cases(TOOL_PARSERS))


def test_run_served_forces_the_oracles_gold_calls(small_trace):
    """The request sequence (free chats, then forced ones), the gold text and the
    expected prompts, against a stub that answers as a faithful vLLM would."""
    from hat_jax.text.chat import render_assistant, render_chat
    from serving.cases import trace_cases, trace_jobs
    from serving.toolcheck import gold_first_message, job_messages, run_served
    from serving.trace import read_trace

    class Tok:  # the "token ids" of a prompt: its length
        @staticmethod
        def encode(text):
            return [len(text)]

    def prompt(job, thinking):
        msgs, tools = job_messages(job), job.harness.tool_specs()
        return Tok.encode(render_chat(msgs, tools=tools, enable_thinking=thinking))

    trace = read_trace(small_trace)
    jobs, cases = trace_jobs(trace), trace_cases(trace)
    golds = [(j, gold_first_message(j, cases[j.message.case])) for j in jobs]
    job, gold = next((j, g) for j, g in golds if g.get("tool_calls"))
    text = render_assistant(gold, "qwen_xml")
    calls = [(c["name"], c["arguments"]) for c in gold["tool_calls"]]
    replies = [
        chat_reply([], prompt=prompt(jobs[0], None)),
        completion_reply("no call here"),
        chat_reply(calls, prompt=prompt(job, False)),
        completion_reply(text),
    ]
    with Local(lambda h, n: send(h, 200, replies[n])) as srv:
        out = run_served(
            srv.url, jobs, cases, Tok, fmt="qwen_xml", n_free=1, n_forced=1
        )
    assert len(srv.paths) == 4
    (free,), (forced,) = out["served"], out["forced"]
    assert free["ok"] and free["n_calls"] == 0 and free["prompt_equal"]
    assert forced["ok"] and forced["gold_equal"] and forced["forced_text_equal"]
    assert forced["text"] == text and "<tool_call>" in text
    assert forced["id"] == f"job{job.index}" and forced["n_calls"] == len(calls)


SERVE_PYTHON = REPO / ".venv-serve" / "bin" / "python"


def _vllm_tokenizer_folder() -> Path:
    """The serve env and tokenizer the real-vLLM test needs, or a skip."""
    import subprocess

    from hat_jax import assets

    if not SERVE_PYTHON.exists():
        pytest.skip("no .venv-serve (make serve-env)")
    probe = "import importlib.util, sys; sys.exit(not importlib.util.find_spec('vllm'))"
    if subprocess.run([str(SERVE_PYTHON), "-c", probe]).returncode != 0:
        pytest.skip("vllm is not installed in .venv-serve")
    try:
        folder = assets.path("qwen3_6-tokenizer").parent
    except Exception as e:  # not fetched
        pytest.skip(f"no Qwen3.6 tokenizer: {e}")
    if not (folder / "tokenizer.json").exists():
        pytest.skip("no Qwen3.6 tokenizer.json")
    return folder


@pytest.mark.slow
def test_real_vllm_parser_agrees_with_ours():
    """vLLM's own qwen3_xml/hermes parsers (serving/vllm_toolparse.py in the serve
    env, CPU) on the direct cases and on the string and conversion tables of
    tests/hat_jax/text/test_toolcall.py: the same calls as our parser."""
    from hat_jax.text.toolcall import ToolCall, render_tool_calls
    from tests.hat_jax.text import test_toolcall as t

    folder = _vllm_tokenizer_folder()
    out = toolcheck.run_direct(str(SERVE_PYTHON), folder, TOOL_PARSERS)
    s = toolcheck.summary(out)
    assert (s["failed"], s["known_differences"]) == ([], []), s
    assert s["with_calls"] == s["n"]

    def case(cid, text, tool):
        tool = {"type": "function", "function": tool}
        return {"id": cid, "fmt": "qwen_xml", "tool_parser": "qwen3_xml",
                "text": text, "tools": [tool], "enable_thinking": False}  # fmt: skip

    cases = []
    for i, value in enumerate([*t.PLAIN_STRINGS, *t.TAGGED]):
        text = render_tool_calls([ToolCall("f", {"v": value})])
        cases.append(case(f"string{i}", text, t.STRING_TOOL))
    for i, (types, value, _) in enumerate(t.CONVERSIONS):
        text = f"<tool_call><function=f><parameter=v>{value}</parameter></function>"
        cases.append(case(f"convert{i}", text + "</tool_call>", t._string_tool(*types)))
    rows = toolcheck.run_vllm_parsers(str(SERVE_PYTHON), folder, cases)
    diff = [r for r in toolcheck.compare_direct(cases, rows) if not r["calls_equal"]]
    assert diff == []
