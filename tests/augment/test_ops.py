"""Each op changes what it claims and nothing else; the gold still validates."""

import dataclasses
import json
import re
from collections import Counter

import numpy as np
import pytest

from augment import all_ops, apply_spec, get_op, validate_augmented
from augment.ops import DIMENSIONS, gold_calls
from augment.rules import parse_body
from augment.schema import is_struct, props
from augment.text import protected_spans
from hat_jax.harness.hooks import resolve_params
from hat_jax.harness.loader import skill_references, tool_references

FIELDS = [f.name for f in dataclasses.fields(__import__("hat_jax").harness.Harness)]
TEXT = {"persona", "rules", "constraints", "skills", "tools"}
# op -> the Harness fields it may change
MAY_CHANGE = {
    "rename_tools": TEXT,
    "rename_params": TEXT,
    "reorder_properties": {"tools"},
    "rewrite_tool_descriptions": {"tools"},
    "nest_args": TEXT,
    "flatten_args": TEXT,
    "enum_spelling": {"tools", "skills"},
    "add_distractor_tools": {"tools"},
    "rename_skills": TEXT,
    "reorder_skill_rules": {"skills"},
    "restyle_skills": {"skills"},
    "paraphrase_skills": {"skills"},
    "reorder_sections": {"layout"},
    "retitle_sections": {"layout"},
    "format": {"layout"},
    "call_format": {"tool_call_format"},
    "tighten_max_chars": {"hooks"},
    "loosen_max_chars": {"hooks"},
    "add_banned_phrases": {"hooks"},
    "drop_banned_phrases": {"hooks"},
    "toggle_required_skills": {"hooks"},
    "shift_turn_limit": {"turn_limit"},
    "add_sign_off": {"hooks"},
    "sign_off_skills": {"skills"},
}


def test_every_op_is_covered_and_all_dimensions_are_used():
    assert set(MAY_CHANGE) == set(all_ops())
    assert {op.dimension for op in all_ops().values()} == set(DIMENSIONS)


def _canon(value):
    """JSON with dict order kept (dataclass equality ignores property order)."""

    def plain(x):
        if dataclasses.is_dataclass(x):
            return plain(dataclasses.asdict(x))
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [plain(v) for v in x]
        return x

    return json.dumps(plain(value), ensure_ascii=False)


def _run(harnesses, golds, name, spec, case="stock_deal", seed=0):
    h, t = harnesses[name], golds[name][case]
    h2, t2, m = get_op(spec.split("(")[0])(h, t, np.random.default_rng(seed))
    if "(" in spec:
        h2, t2, m = apply_spec(h, t, spec, seed)
        h2 = h2.replace(version=h.version)
        t2.harness_id = h2.id
    assert validate_augmented(h, t, h2, t2, m) == []
    return h, t, h2, t2, m


@pytest.mark.parametrize("name", ["taolive_v1", "taolive_v2"])
@pytest.mark.parametrize("op", sorted(MAY_CHANGE))
def test_op_changes_only_its_fields(harnesses, golds, name, op):
    h, t, h2, t2, m = _run(harnesses, golds, name, op)
    changed = {f for f in FIELDS if _canon(getattr(h, f)) != _canon(getattr(h2, f))}
    assert changed <= MAY_CHANGE[op], changed
    no_op = {("flatten_args", "taolive_v1"), ("enum_spelling", "taolive_v1")}
    assert changed or (op, name) in no_op
    assert m.ops and m.ops[-1].startswith(op)


def _tools(h):
    return {t.name: t for t in h.tools}


def test_rename_tools_follows_references(harnesses, golds):
    h, t, h2, t2, m = _run(harnesses, golds, "taolive_v1", "rename_tools")
    assert all(m.tools[a] != a for a in m.tools)
    assert [x.name for x in h2.tools] == [m.tools[x.name] for x in h.tools]
    assert [x.parameters for x in h2.tools] == [x.parameters for x in h.tools]
    for s in h2.skills:
        assert all(r in _tools(h2) for r, _, _ in tool_references(s.body))
    assert [c.name for c in gold_calls(t2)][:2] == [
        m.tools["get_product_info_by_link_id"],
        m.tools["check_stock"],
    ]
    thoughts = " ".join(x.get("reasoning", "") for x in t2.messages)
    assert m.tools["check_stock"] in thoughts and "check_stock" not in thoughts


def test_rename_params_and_reorder_properties(harnesses, golds):
    *_, h2, _, m = _run(harnesses, golds, "taolive_v2", "rename_params(frac=1.0)")
    assert set(m.params["query_item"].values()) != set(m.params["query_item"])
    h, _, h3, t3, _ = _run(harnesses, golds, "taolive_v1", "reorder_properties", seed=1)
    stock = gold_calls(t3)[1]  # gold arguments follow the new property order
    assert list(stock.arguments) == list(props(h3.tool("check_stock").parameters))

    def canon(x):
        return json.dumps([t.spec() for t in x.tools], sort_keys=True)

    assert canon(h) == canon(h3) and _canon(h.tools) != _canon(h3.tools)


def test_nest_then_flatten(harnesses, golds):
    *_, h2, t2, _ = _run(
        harnesses, golds, "taolive_v1", "nest_args(frac=1.0,wrapper=args)"
    )
    for tool in h2.tools:
        assert list(props(tool.parameters)) == ["args"]
    assert gold_calls(t2)[0].arguments == {"args": {"link_id": 5}}
    *_, h3, t3, _ = _run(harnesses, golds, "taolive_v2", "flatten_args")
    assert not any(is_struct(v) for x in h3.tools for v in props(x.parameters).values())
    assert gold_calls(t3)[0].arguments == {"link_id": 5, "fields": ["price"]}
    skill = h3.skill("item_qa").body
    assert "item.link_id" not in skill and "as link_id" in skill


def test_enum_spelling_maps_gold_values(harnesses, golds):
    h, t, h2, t2, m = _run(harnesses, golds, "taolive_v2", "enum_spelling(style=upper)")
    enum = props(props(h2.tool("query_item").parameters)["item"])["fields"]["items"]
    assert "PRICE" in enum["enum"]
    assert gold_calls(t2)[0].arguments["item"]["fields"] == ["PRICE"]
    assert "CAMPAIGN_PRICE" in h2.skill("campaign_double12").body


def test_add_distractor_tools(harnesses, golds):
    h, _, h2, _, m = _run(harnesses, golds, "taolive_v1", "add_distractor_tools(n=3)")
    assert len(h2.tools) == len(h.tools) + 3 and len(m.added_tools) == 3
    assert [x for x in h2.tools if x.name not in m.added_tools] == list(h.tools)


def test_rename_skills_follows_load_skill(harnesses, golds):
    h, t, h2, t2, m = _run(harnesses, golds, "taolive_v2", "rename_skills")
    names = {s.name for s in h2.skills}
    assert names.isdisjoint({s.name for s in h.skills})
    for s in h2.skills:
        assert all(r in names for r, _, _ in skill_references(s.body))
    loads = [c.arguments["name"] for c in gold_calls(t2) if c.name == "load_skill"]
    assert loads == [m.skills["item_qa"], m.skills["promotion_push"]]
    assert t2.meta["loaded_skills"] == loads
    body = h2.skill(m.skills["item_qa"]).body
    assert any(c.get("content") == body for c in t2.messages if c["role"] == "tool")


def _rules(body):
    items = [i for b in parse_body(body) if b.items for i in b.items]
    texts = [" ".join(filter(None, [i.label, i.first, *i.rest])) for i in items]
    return Counter(re.sub(r"\s+", " ", t).strip().lower() for t in texts)


_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\(\d+\)|Step \d+:)\s+", re.M)


def _facts(body):
    """Protected spans (names, refs, quotes, numbers) outside list markers."""
    return Counter(protected_spans(re.sub(r"\s+", " ", _MARKER.sub("", body))))


@pytest.mark.parametrize(
    "spec", ["reorder_skill_rules(numbered=true)", "restyle_skills"]
)
@pytest.mark.parametrize("seed", range(4))
def test_reorder_and_restyle_keep_every_rule(harnesses, golds, spec, seed):
    h, _, h2, _, _ = _run(harnesses, golds, "taolive_v1", spec, seed=seed)
    assert h2.skills != h.skills
    for a, b in zip(h.skills, h2.skills):
        assert (a.name, a.kind, a.description) == (b.name, b.kind, b.description)
        assert _rules(a.body) == _rules(b.body)
        assert _facts(a.body) == _facts(b.body)


@pytest.mark.parametrize("seed", range(4))
def test_paraphrase_keeps_facts_and_rule_count(harnesses, golds, seed):
    h, _, h2, _, _ = _run(
        harnesses, golds, "taolive_v2", "paraphrase_skills", seed=seed
    )
    assert h2.skills != h.skills
    for a, b in zip(h.skills, h2.skills):
        assert _facts(a.body) == _facts(b.body)
        assert sum(_rules(a.body).values()) == sum(_rules(b.body).values())


def test_prompt_ops(harnesses, golds):
    h, _, h2, t2, _ = _run(harnesses, golds, "taolive_v1", "reorder_sections")
    assert sorted(h2.layout.order) == sorted(h.layout.order) != list(h2.layout.order)
    *_, h3, _, _ = _run(harnesses, golds, "taolive_v1", "retitle_sections")
    assert all(h3.layout.titles[k] != v for k, v in h.layout.titles.items())
    *_, h4, t4, _ = _run(harnesses, golds, "taolive_v1", "format(xml)")
    assert h4.layout.format == "xml" and t4.messages[0]["content"].startswith("<")
    *_, h5, _, _ = _run(harnesses, golds, "taolive_v1", "call_format")
    assert h5.tool_call_format == "hermes"


def _reply_params(h):
    spec = h.hook("reply_format")
    return resolve_params(spec.name, spec.params)


def test_hook_ops(harnesses, golds):
    h, t, h2, t2, _ = _run(
        harnesses, golds, "taolive_v1", "tighten_max_chars(factor=0.5)", "purchase_en"
    )
    # The gold reply (87 chars) cannot be shortened keeping its facts: the limit
    # stops at its length.
    assert _reply_params(h2)["max_chars"] == len(t.reply) == 87 and t2.reply == t.reply
    *_, h3, _, _ = _run(harnesses, golds, "taolive_v1", "loosen_max_chars(factor=1.5)")
    assert _reply_params(h3)["max_chars"] == 180
    *_, h4, t4, _ = _run(harnesses, golds, "taolive_v1", "add_banned_phrases(n=3)")
    new = set(_reply_params(h4)["banned_phrases"]) - set(
        _reply_params(h)["banned_phrases"]
    )
    assert len(new) == 3 and not any(p in t4.reply for p in new)
    *_, h5, _, _ = _run(harnesses, golds, "taolive_v1", "drop_banned_phrases")
    assert set(_reply_params(h5)["banned_phrases"]) < set(
        _reply_params(h)["banned_phrases"]
    )
    *_, h6, _, _ = _run(harnesses, golds, "taolive_v1", "toggle_required_skills")
    assert h6.hook("require_skill").params["kinds"] == ["reply", "strategy"]
    *_, h7, _, _ = _run(
        harnesses, golds, "taolive_v1", "toggle_required_skills", "chit_chat"
    )
    assert h7.hooks == h.hooks  # chit-chat loads no strategy skill
    *_, h8, _, _ = _run(harnesses, golds, "taolive_v1", "shift_turn_limit(delta=-5)")
    assert h8.turn_limit == 4  # the gold needs 4 model calls


def test_tighten_shortens_a_reply_only_when_facts_survive(harnesses, golds):
    h, t, h2, t2, _ = _run(
        harnesses, golds, "taolive_v1", "tighten_max_chars(factor=0.1)", "price"
    )
    assert t2.reply == "3号链接现在199元哦" and _reply_params(h2)["max_chars"] == 12
    assert t2.messages[-1]["content"] == t2.reply
