"""Mapping: forward/inverse of calls, composition, JSON."""

from augment import Mapping, apply_spec
from augment.ops import gold_calls
from hat_jax.harness.spec import Harness, PromptLayout, Skill, Tool
from hat_jax.text.toolcall import ToolCall


def _harness():
    item = {
        "type": "object",
        "properties": {
            "link_id": {"type": "integer"},
            "fields": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b"]},
            },
        },
        "required": ["link_id"],
    }
    return Harness(
        name="t",
        version="1",
        persona="p",
        rules=(),
        constraints=(),
        layout=PromptLayout(),
        turn_limit=4,
        retry_limit=1,
        skills=(Skill("qa", "reply", "d", "Call `q`."),),
        tools=(
            Tool("q", "d", {"type": "object", "properties": {"item": item}}),
            Tool(
                "s", "d", {"type": "object", "properties": {"sku": {"type": "string"}}}
            ),
        ),
        hooks=(),
    )


def test_identity_and_leaves():
    m = Mapping.identity(_harness())
    assert m.params["q"] == {
        ("item", "link_id"): ("item", "link_id"),
        ("item", "fields"): ("item", "fields"),
    }
    call = ToolCall("q", {"item": {"link_id": 3, "fields": ["a"]}})
    assert m.forward_call(call) == call == m.inverse_call(call)


def test_hand_built_composition():
    first = Mapping.identity(_harness())
    first.tools["q"] = "lookup"
    first.params["q"] = {("item", "link_id"): ("link_id",), ("item", "fields"): ("f",)}
    first.values["q"] = {("item", "fields"): {"a": "A"}}
    first.skills["qa"] = "answers"
    second = Mapping(
        tools={"lookup": "fetch", "s": "stock"},
        params={"lookup": {("link_id",): ("args", "link"), ("f",): ("args", "f")}},
        values={"lookup": {("f",): {"A": "a_info", "b": "B"}}},
        skills={"answers": "faq"},
        added_tools=["extra"],
    )
    m = first.compose(second)
    call = ToolCall("q", {"item": {"link_id": 3, "fields": ["a", "b"]}})
    out = ToolCall("fetch", {"args": {"link": 3, "f": ["a_info", "B"]}})
    assert m.forward_call(call) == out and m.inverse_call(out) == call
    assert m.forward_call(ToolCall("load_skill", {"name": "qa"})).arguments == {
        "name": "faq"
    }
    assert m.inverse_skill("faq") == "qa" and m.tool("s") == "stock"
    assert m.added_tools == ["extra"]
    assert Mapping.from_json(m.to_json()) == m
    # Arguments outside the schema travel unchanged (and come back).
    odd = ToolCall("s", {"sku": "M", "extra": {"x": 1}})
    assert m.inverse_call(m.forward_call(odd)) == odd


def test_composition_of_many_ops_equals_stepwise(harnesses, golds):
    h, t = harnesses["taolive_v2"], golds["taolive_v2"]["stock_deal"]
    ops = [
        "rename_params(frac=1.0)",
        "nest_args(frac=1.0)",
        "rename_tools",
        "flatten_args",
        "enum_spelling",
        "nest_args(frac=1.0)",
        "rename_params",
    ]
    h_all, t_all, m_all = apply_spec(h, t, "|".join(ops), 11)
    cur_h, cur_t = h, t
    calls = gold_calls(t)
    for op in ops:
        cur_h, cur_t, m = apply_spec(cur_h, cur_t, op, 0)
        calls = [m.forward_call(c) for c in calls]
    assert calls == gold_calls(cur_t)
    back = [m_all.inverse_call(c) for c in gold_calls(t_all)]
    assert back == gold_calls(t)
