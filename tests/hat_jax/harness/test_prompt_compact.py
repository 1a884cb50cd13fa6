"""The compact prompt format: short titles, one line per skill, one signature
line per tool that still shows names, nesting, enums, types and optionality."""

import dataclasses

import pytest

from hat_jax.harness import SECTION_NAMES, Tool, load_harness, render_system_prompt
from hat_jax.harness.prompt import (
    first_sentence,
    section_title,
    tool_signature,
    type_text,
)
from hat_jax.text.toolcall import get_format

ROOM = {"on_screen": "link 3: wool coat", "viewers": 1200}


def compact(h, **kw):
    return h.replace(layout=dataclasses.replace(h.layout, format="compact", **kw))


V1 = compact(load_harness("taolive_v1"))
V2 = compact(load_harness("taolive_v2"))


def tool_lines(prompt: str) -> list[str]:
    body = prompt.split("Functions (arg? is optional):\n", 1)[1]
    return body.split("\n\n", 1)[0].split("\n")


def test_sections_have_short_titles_in_layout_order():
    p = render_system_prompt(V1, ROOM)
    assert p.startswith("# Who you are\nYou are Xiaotao")
    marks = [p.index(f"\n# {section_title(V1, n)}\n") for n in SECTION_NAMES[1:]]
    assert marks == sorted(marks)
    assert "## " not in p and "<tools>" not in p and '{"type": "function"' not in p
    order = ("tool_list", "constraints", "persona", "skill_index", "rules")
    h = compact(V2, order=order, titles={"rules": "规则"})
    p2 = render_system_prompt(h)
    marks = [p2.index(f"# {section_title(h, n)}\n") for n in order]
    assert marks == sorted(marks) and marks[0] == 0 and "\n# 规则\n- " in p2


def test_tool_lines_v1():
    p = render_system_prompt(V1)
    assert tool_lines(p) == [
        "load_skill(name: str) - Load a skill's instructions.",
        "get_product_info_by_link_id(link_id: int>=1) - Look up a product on the "
        "live-room shelf by its link number: title, price (CNY), specs, material, "
        "size chart and selling points.",
        "check_stock(link_id: int>=1, sku?: str) - Check stock for a link, "
        "optionally for one size or colour (SKU).",
        "get_promotions(link_id?: int>=1) - Current coupons, discounts and gifts: "
        "for one link, or shop-wide when link_id is omitted.",
        "get_shipping_policy(region?: str) - The shop's shipping, return and refund "
        "policy, with regional exceptions.",
    ]
    assert get_format("qwen_xml").compact_instructions in p
    assert get_format("qwen_xml").instructions not in p  # the long form is left out


def test_tool_lines_v2_show_nesting_and_enums():
    line = tool_lines(render_system_prompt(V2))[1]
    assert line == (
        'query_item(item: {link_id: int>=1, fields?: ["title"|"price"|'
        '"campaign_price"|"specs"|"material"|"size_chart"|"selling_points"]}) - '
        "Look up an item on the live-room shelf."
    )


def test_call_format_follows_the_harness():
    p = render_system_prompt(V1.replace(tool_call_format="hermes"))
    assert get_format("hermes").compact_instructions in p
    assert get_format("qwen_xml").compact_instructions not in p


@pytest.mark.parametrize("h", [V1, V2], ids=["v1", "v2"])
def test_skill_index_is_one_line_per_skill(h):
    p = render_system_prompt(h)
    body = p.split(f"# {section_title(h, 'skill_index')}\n", 1)[1].split("\n\n")[0]
    intro, *lines = body.split("\n")
    assert intro == (
        "Call load_skill(name) to read a skill; load at least one reply skill "
        "before replying."
    )
    assert lines == [f"{s.name} ({s.kind}): {s.description}" for s in h.skills]
    body_lines = [x.strip() for s in h.skills for x in s.body.splitlines()]
    assert not [x for x in body_lines if len(x) > 25 and x in p]


def test_skill_intro_without_required_kinds():
    h = V1.replace(hooks=tuple(x for x in V1.hooks if x.name != "require_skill"))
    p = render_system_prompt(h)
    assert "Call load_skill(name) to read a skill.\nitem_qa (reply)" in p


def test_rules_and_constraints_stay_bullets():
    p = render_system_prompt(V1)
    assert "\n# House rules\n- Answer from tool results" in p
    assert "- You have at most 6 model calls for one viewer message." in p


def test_compact_is_shorter_and_pure():
    md = render_system_prompt(load_harness("taolive_v1"), ROOM)
    c = render_system_prompt(V1, dict(ROOM))
    assert len(c) < 0.75 * len(md)
    assert c == render_system_prompt(V1, dict(ROOM))


def _sig(params, desc="Do it. Then more."):
    return tool_signature(Tool("t", desc, params).spec())


@pytest.mark.parametrize(
    "node, want",
    [
        ({"type": "integer"}, "int"),
        ({"type": "number", "minimum": 0, "maximum": 5}, "float[0..5]"),
        ({"type": "integer", "maximum": 20}, "int<=20"),
        ({"type": ["string", "null"]}, "str|null"),
        ({"type": "boolean", "default": False}, "bool=false"),
        ({"type": "string", "enum": ["red", "蓝色"]}, '"red"|"蓝色"'),
        ({"type": "string", "enum": ["a", "b"], "default": "b"}, '"a"|"b"="b"'),
        ({"type": "array", "items": {"type": "integer"}}, "[int]"),
        ({"type": "array"}, "[any]"),
        ({"type": "object"}, "object"),
        ({}, "any"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": True,
            },
            "{a?: str, ...}",
        ),
    ],
)
def test_type_text(node, want):
    assert type_text(node) == want


def test_signature_marks_optional_and_nesting():
    params = {
        "type": "object",
        "properties": {
            "q": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "n": {"type": "integer"}},
                "required": ["id"],
            },
            "x": {"type": "string"},
        },
        "required": ["q"],
    }
    assert _sig(params) == "t(q: {id: int, n?: int}, x?: str) - Do it."
    assert _sig({"type": "object", "properties": {}}, "") == "t()"


@pytest.mark.parametrize(
    "text, want",
    [
        ("Look it up. Then reply.", "Look it up."),
        ("The link, e.g. 3 for 3号链接. More.", "The link, e.g. 3 for 3号链接."),
        ("查询商品。返回价格。", "查询商品。"),
        ("One sentence only", "One sentence only"),
        ('Ends. "Quoted" next.', "Ends."),
    ],
)
def test_first_sentence(text, want):
    assert first_sentence(text) == want


def test_a_schema_edit_changes_the_line():
    """Renamed, nested, respelt and optional parameters each show."""
    base = {
        "type": "object",
        "properties": {"color": {"type": "string", "enum": ["red", "blue"]}},
        "required": ["color"],
    }
    line = _sig(base)
    renamed = {**base, "properties": {"colour": base["properties"]["color"]}}
    renamed["required"] = ["colour"]
    nested = {
        "type": "object",
        "properties": {"args": {**base, "description": "All inputs."}},
        "required": ["args"],
    }
    respelt = {
        **base,
        "properties": {"color": {"type": "string", "enum": ["RED", "BLUE"]}},
    }
    optional = {**base, "required": []}
    lines = [_sig(s) for s in (renamed, nested, respelt, optional)]
    assert len({line, *lines}) == 5
    assert lines[1] == 't(args: {color: "red"|"blue"}) - Do it.'
    assert lines[3] == 't(color?: "red"|"blue") - Do it.'
