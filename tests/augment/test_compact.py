"""HSA ops over a harness rendered compact: every op's gold still validates, and
every tool-schema edit shows in the one-line signatures."""

import dataclasses

import numpy as np
import pytest

from augment import all_ops, apply_spec, get_op, validate_augmented
from augment.gold import gold_trajectories
from hat_jax.harness import render_system_prompt
from hat_jax.harness.prompt import first_sentence, section_title, tool_signature


def compact(h):
    return h.replace(layout=dataclasses.replace(h.layout, format="compact"))


@pytest.fixture(scope="module")
def bases(harnesses):
    out = {}
    for name in ("taolive_v1", "taolive_v2"):
        h = compact(harnesses[name])
        out[name] = (h, gold_trajectories(h))
    return out


def signatures(h) -> dict[str, str]:
    """Tool name -> its line in the rendered prompt."""
    p = render_system_prompt(h)
    lines = {line.split("(", 1)[0]: line for line in p.split("\n") if "(" in line}
    return {t.name: lines[t.name] for t in h.tools}


def apply(bases, name, spec, seed=0, case="stock_deal"):
    h, golds = bases[name]
    h2, t2, m = apply_spec(h, golds[case], spec, seed)
    assert validate_augmented(h, golds[case], h2, t2, m) == []
    return h, h2, t2


def test_golds_are_rendered_compact(bases):
    for _, golds in bases.values():
        for t in golds.values():
            assert t.messages[0]["content"].startswith("# ")
            assert "<tools>" not in t.messages[0]["content"]


@pytest.mark.parametrize("op", sorted(all_ops()))
def test_every_op_validates_on_compact_v1(bases, op):
    h, golds = bases["taolive_v1"]
    for seed in range(2):
        for case, t in golds.items():
            rng = np.random.default_rng(seed)
            h2, t2, m = get_op(op)(h, t, rng)
            assert validate_augmented(h, t, h2, t2, m) == [], (op, case, seed)


@pytest.mark.parametrize("op", sorted(all_ops()))
@pytest.mark.parametrize("name", ["taolive_v1", "taolive_v2"])
def test_every_op_output_renders_compact(bases, name, op):
    h, golds = bases[name]
    t, spec = golds["stock_deal"], op
    if op == "format":  # the op leaves compact when unset; ask for it instead
        h = h.replace(layout=dataclasses.replace(h.layout, format="xml"))
        t, spec = gold_trajectories(h)["stock_deal"], "format(compact)"
    h2, t2, m = apply_spec(h, t, spec, 1)
    assert validate_augmented(h, t, h2, t2, m) == []
    assert h2.layout.format == "compact"
    p = render_system_prompt(h2, t2.meta.get("room_context"))
    assert t2.messages[0]["content"] == p
    marks = [p.index(f"# {section_title(h2, n)}\n") for n in h2.layout.order]
    assert marks == sorted(marks) and "<tools>" not in p
    lines = set(p.split("\n"))
    for tool in h2.tools:
        assert tool_signature(tool.spec()) in lines, tool.name
    for s in h2.skills:
        assert f"{s.name} ({s.kind}): {s.description}" in lines


def test_format_op_can_pick_compact(harnesses):
    h = harnesses["taolive_v1"]
    picked = {
        get_op("format")(h, None, np.random.default_rng(s))[0].layout.format
        for s in range(40)
    }
    assert picked == {"xml", "plain", "compact"}
    back = get_op("format")(compact(h), None, np.random.default_rng(0))[0]
    assert back.layout.format != "compact"


def test_rename_params_shows(bases):
    h, h2, _ = apply(bases, "taolive_v1", "rename_params(frac=1.0)")
    new = signatures(h2)["check_stock"]
    assert new != signatures(h)["check_stock"] and "link_id" not in new
    keys = list(h2.tool("check_stock").parameters["properties"])
    assert new.startswith(f"check_stock({keys[0]}: int>=1, {keys[1]}?: str)")


def test_nest_args_shows(bases):
    h, h2, _ = apply(bases, "taolive_v1", "nest_args(frac=1.0,wrapper=args)")
    sig = signatures(h2)
    assert sig["check_stock"].startswith("check_stock(args: {link_id: int>=1, sku?:")
    # get_promotions has no required argument, so its wrapper is optional too.
    assert sig["get_promotions"].startswith("get_promotions(args?: {link_id?: int")


def test_flatten_args_shows(bases):
    h, h2, _ = apply(bases, "taolive_v2", "flatten_args(frac=1.0)")
    old, new = signatures(h)["query_item"], signatures(h2)["query_item"]
    assert old.startswith("query_item(item: {link_id: int>=1, fields?: [")
    assert new.startswith('query_item(link_id: int>=1, fields?: ["title"|')


@pytest.mark.parametrize(
    "style, word", [("upper", '"TITLE"|'), ("title", '"Campaign_Price"|')]
)
def test_enum_spelling_shows(bases, style, word):
    h, h2, _ = apply(bases, "taolive_v2", f"enum_spelling(style={style})")
    new = signatures(h2)["query_item"]
    assert word in new and '"title"' not in new


def test_required_change_shows(bases):
    h = bases["taolive_v1"][0]
    t = h.tool("check_stock")
    loose = dataclasses.replace(t, parameters={**t.parameters, "required": []})
    h2 = h.replace(tools=tuple(loose if x is t else x for x in h.tools))
    assert signatures(h)["check_stock"].startswith("check_stock(link_id: int")
    assert signatures(h2)["check_stock"].startswith("check_stock(link_id?: int")


def test_reorder_properties_shows(bases):
    h = bases["taolive_v1"][0]
    old = signatures(h)["check_stock"]
    assert old.startswith("check_stock(link_id: int>=1, sku?: str)")
    for seed in range(20):
        _, h2, _ = apply(bases, "taolive_v1", "reorder_properties", seed=seed)
        if list(h2.tool("check_stock").parameters["properties"])[0] == "sku":
            break
    assert signatures(h2)["check_stock"].startswith("check_stock(sku?: str, link_id:")


def test_distractor_tools_show(bases):
    h, h2, _ = apply(bases, "taolive_v1", "add_distractor_tools(n=3)")
    added = [t.name for t in h2.tools if h.tool(t.name) is None]
    assert len(added) == 3
    assert set(signatures(h2)) == {t.name for t in h2.tools}


def test_rewritten_descriptions_show(bases):
    h, h2, _ = apply(bases, "taolive_v1", "rewrite_tool_descriptions(p=1.0)")
    old, new = signatures(h), signatures(h2)
    changed = [n for n in old if old[n] != new[n]]
    assert changed
    for n in old:
        desc = first_sentence(h2.tool(n).description)
        assert new[n] == f"{old[n].split(' - ')[0]} - {desc}"
