"""Generic tool use and look-ups: every call parses back to what was meant."""

import json

import numpy as np

from experiments.world.tooluse import make_tooluse, system_prompt
from hat_jax.harness import read_jsonl
from hat_jax.text.chat import render_assistant, render_chat
from hat_jax.text.toolcall import parse_reply


def test_every_tool_call_parses_back(world_files):
    kinds = ("tool_use", "lookup")
    trajs = [t for t in read_jsonl(world_files["base"]) if t.meta["kind"] in kinds]
    assert len(trajs) > 50
    calls = direct = 0
    for t in trajs:
        tools = t.meta["tools"]
        system = t.messages[0]["content"]
        for tool in tools:  # the schemas are listed in the system prompt
            spec = {"type": "function", "function": tool}
            assert json.dumps(spec, ensure_ascii=False) in system
        for m in t.messages:
            if m["role"] != "assistant" or not m.get("tool_calls"):
                continue
            parsed = parse_reply(render_assistant(m), tools=tools)
            assert parsed.errors == [] and parsed.content == ""
            want = [(c["name"], c["arguments"]) for c in m["tool_calls"]]
            assert [(c.name, c.arguments) for c in parsed.tool_calls] == want
            assert want[0][0] in {tool["name"] for tool in tools}
            calls += 1
        if t.tool_calls:
            assert t.messages[-2]["role"] == "tool"
            assert t.messages[-2]["content"] == t.tool_calls[0].result
        else:
            direct += 1
            assert [m["role"] for m in t.messages] == ["system", "user", "assistant"]
        assert t.messages[-1] == {"role": "assistant", "content": t.reply}
    assert calls > 30 and direct > 5


def test_schemas_vary_and_the_reply_uses_the_result():
    names, params = set(), set()
    for i in range(200):
        ex = make_tooluse(np.random.default_rng([3, i]))
        for tool in ex["tools"]:
            names.add(tool["name"])
            params |= set(tool["parameters"]["properties"])
        for x in ex["exchanges"]:
            result = json.loads(x.result)
            shown = [str(v) for v in result.values()]
            assert any(s in ex["reply"] for s in shown), (ex["reply"], result)
    assert len(names) > 30 and len(params) > 20


def test_system_prompt_is_the_renderers_tools_block():
    tools = make_tooluse(np.random.default_rng([0, 1]))["tools"]
    head = "You are a helpful assistant."
    msgs = [{"role": "system", "content": system_prompt(head, tools)}]
    want = render_chat([{"role": "system", "content": head}], tools=tools)
    assert render_chat(msgs) == want
