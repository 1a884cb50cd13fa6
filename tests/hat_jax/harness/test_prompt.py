"""The system prompt: sections in the manifest's order and format, skill
descriptions without bodies, tools as parseable JSON lines."""

import dataclasses
import json
import re

import pytest

from hat_jax.harness import (
    SECTION_NAMES,
    HookSpec,
    load_harness,
    render_system_prompt,
)
from hat_jax.harness.prompt import DEFAULT_TITLES, section_title
from hat_jax.text.toolcall import get_format

V1 = load_harness("taolive_v1")
V2 = load_harness("taolive_v2")
ROOM = {"on_screen": "link 3: wool coat", "viewers": 1200, "links": [1, 2, 3]}


def with_layout(h, **kw):
    return h.replace(layout=dataclasses.replace(h.layout, **kw))


def test_markdown():
    p = render_system_prompt(V1, ROOM)
    assert p.startswith("## Who you are\n\nYou are Xiaotao")
    for name in SECTION_NAMES:
        assert f"## {section_title(V1, name)}\n\n" in p


def test_xml():
    p = render_system_prompt(with_layout(V1, format="xml"), ROOM)
    for name in SECTION_NAMES:
        title = section_title(V1, name)
        assert re.search(f'<{name} title="{title}">\n.+?\n</{name}>', p, re.S), name
    assert p.startswith('<persona title="Who you are">\nYou are Xiaotao')
    assert "## " not in p


def test_plain():
    p = render_system_prompt(with_layout(V1, format="plain"), ROOM)
    assert p.startswith("WHO YOU ARE:\nYou are Xiaotao")
    assert "\n\nHOUSE RULES:\n- Answer from tool results" in p
    assert "## " not in p and "<persona" not in p


def test_xml_titles_are_escaped_and_default_titles_fill_gaps():
    h = with_layout(V1, format="xml", titles={"rules": 'Rules "now" & <always>'})
    p = render_system_prompt(h)
    assert '<rules title="Rules &quot;now&quot; &amp; &lt;always&gt;">' in p
    assert f'<persona title="{DEFAULT_TITLES["persona"]}">' in p


@pytest.mark.parametrize("fmt", ["markdown", "xml", "plain"])
def test_section_order_follows_the_manifest(fmt):
    order = (
        "tool_list",
        "constraints",
        "skill_index",
        "room_context",
        "rules",
        "persona",
    )
    h = with_layout(V2, order=order, format=fmt)
    p = render_system_prompt(h, ROOM)
    marks = {
        "markdown": lambda n: f"## {section_title(h, n)}\n",
        "xml": lambda n: f"<{n} title=",
        "plain": lambda n: f"{section_title(h, n).upper()}:\n",
    }[fmt]
    positions = [p.index(marks(n)) for n in order]
    assert positions == sorted(positions) and positions[0] == 0
    short = with_layout(V2, order=("skill_index", "tool_list"), format=fmt)
    assert "Xiaotao" not in render_system_prompt(short, ROOM)


@pytest.mark.parametrize("h", [V1, V2], ids=["v1", "v2"])
def test_skill_index_has_descriptions_never_bodies(h):
    p = render_system_prompt(h, ROOM)
    for s in h.skills:
        assert f"{s.name} ({s.kind}): {s.description}" in p
        for line in s.body.splitlines():
            if len(line.strip()) > 25:
                assert line.strip() not in p, (s.name, line)
    assert "load_skill" in p and "at least one reply skill" in p


@pytest.mark.parametrize("h", [V1, V2], ids=["v1", "v2"])
def test_tool_lines_parse_back(h):
    p = render_system_prompt(h)
    block = p[p.index("<tools>\n") + 8 : p.index("\n</tools>")]
    assert [json.loads(line) for line in block.split("\n")] == h.tool_specs()
    assert json.loads(block.split("\n")[0])["function"]["name"] == "load_skill"
    assert get_format("qwen_xml").instructions in p


def test_tool_call_format_instructions_follow_the_harness():
    p = render_system_prompt(V1.replace(tool_call_format="hermes"))
    assert get_format("hermes").instructions in p
    assert get_format("qwen_xml").instructions not in p


def test_room_context():
    p = render_system_prompt(V1, ROOM)
    assert "on_screen: link 3: wool coat\nviewers: 1200\nlinks: [1, 2, 3]" in p
    assert "## The live room now\n\nFlash sale at 8pm" in render_system_prompt(
        V1, "Flash sale at 8pm"
    )
    assert "The live room now" not in render_system_prompt(V1)
    assert "The live room now" not in render_system_prompt(V1, {})


def test_constraints_include_turn_limit_and_hook_limits():
    p = render_system_prompt(V2)
    tail = p[p.index("## Reply constraints") :]
    assert "- Write at most two short spoken sentences." in tail
    assert "at most 6 model calls" in tail and "within 120 characters" in tail
    assert "without Markdown" in tail and "包治百病" in tail
    assert "must come from a tool result" in tail and "absolute superlatives" in tail
    # A hook edit shows in the prompt.
    hooks = tuple(
        HookSpec(s.name, {**s.params, "max_chars": 60})
        if s.name == "reply_format"
        else s
        for s in V2.hooks
    )
    assert "within 60 characters" in render_system_prompt(V2.replace(hooks=hooks))


def test_rendering_is_deterministic():
    assert render_system_prompt(V2, dict(ROOM)) == render_system_prompt(V2, dict(ROOM))
    assert render_system_prompt(V1, ROOM) != render_system_prompt(V2, ROOM)


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError, match="unknown prompt format"):
        render_system_prompt(with_layout(V1, format="html"))
