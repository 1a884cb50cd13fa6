"""Typed harness edits: every op applies, bad edits are refused with a reason,
and an edited harness is a folder ``load_harness`` reads back equal."""

import pytest

from hat_jax.harness import load_harness
from hat_jax.harness.dump import dump_harness
from hat_jax.harness.edits import (
    OPS,
    EditError,
    apply_edits,
    harness_diff,
    parse_edits,
)

V1 = load_harness("taolive_v1")
GOOD = [
    {"op": "add_rule", "text": "Quote the campaign discount."},
    {"op": "reword_rule", "index": 0, "text": "Answer from tool results only."},
    {"op": "remove_rule", "index": 3},
    {"op": "add_constraint", "text": "No emoji."},
    {"op": "add_skill", "name": "greeting", "kind": "reply"}
    | {"description": "Greet a new viewer.", "body": "Say hi by name."},
    {"op": "rewrite_skill", "name": "chit_chat", "description": "Small talk."},
    {"op": "replace_in_skill", "name": "item_qa"}
    | {"old": "Start with the answer, not a greeting", "new": "Answer first"},
    {"op": "set_tool_description", "tool": "check_stock", "description": "Units."},
    {"op": "add_hook", "hook": "compliance", "params": {"medical_claims": ["cure"]}},
    {"op": "set_hook_param", "hook": "reply_format", "param": "max_chars", "value": 90},
    {"op": "set_limit", "field": "turn_limit", "value": 4},
]


def test_every_op_applies_and_the_folder_reads_back(tmp_path):
    assert {e["op"] for e in GOOD} == set(OPS)
    edits, _ = parse_edits({"edits": GOOD, "rationale": "all of them"})
    h = apply_edits(V1, edits)
    assert h.rules[-1] == "Quote the campaign discount."
    assert h.rules[0] == "Answer from tool results only."
    assert len(h.rules) == len(V1.rules)  # one added, one removed
    assert V1.rules[3] not in h.rules
    assert h.constraints[-1] == "No emoji."
    assert h.skill("greeting").body == "Say hi by name."
    assert h.skill("chit_chat").description == "Small talk."
    assert h.skill("chit_chat").body == V1.skill("chit_chat").body
    assert "Answer first" in h.skill("item_qa").body
    assert h.tool("check_stock").description == "Units."
    assert h.hook("compliance").params == {"medical_claims": ["cure"]}
    assert h.hook("reply_format").params["max_chars"] == 90
    assert h.turn_limit == 4
    dump_harness(h, tmp_path / "h")
    assert load_harness(tmp_path / "h") == h
    diff = harness_diff(V1, h, ("v1", "new"))
    assert "+turn_limit: 4" in diff and "+++ new/skills/06_greeting.md" in diff
    assert harness_diff(V1, V1) == ""


@pytest.mark.parametrize(
    "answer, why",
    [
        ({"edits": []}, "1..16 edits"),
        ({"edits": [{"op": "add_rule", "text": "x"}] * 17}, "1..16 edits"),
        ([{"op": "add_rule"}], "expected object"),
        ({"edits": [{"op": "zap"}]}, "unknown op 'zap'"),
        ({"edits": [{"op": "add_rule", "text": "  "}]}, "not blank"),
        ({"edits": [{"op": "add_rule", "text": "x" * 4001}]}, "1..4000"),
        ({"edits": [{"op": "add_rule", "text": "x", "also": 1}]}, "unknown argument"),
        ({"edits": [{"op": "add_rule"}]}, "text: required"),
        ({"edits": [{"op": "set_limit", "field": "depth", "value": 1}]}, "one of"),
        ({"edits": [{"op": "reword_rule", "index": "1", "text": "x"}]}, "integer"),
        ({"edits": [], "extra": 1}, "unknown argument"),
    ],
)
def test_malformed_answers_are_refused(answer, why):
    with pytest.raises(EditError, match=why):
        parse_edits(answer)


@pytest.mark.parametrize(
    "edit, why",
    [
        ({"op": "reword_rule", "index": 99, "text": "x"}, "out of range"),
        ({"op": "rewrite_skill", "name": "nope", "body": "x"}, "no skill 'nope'"),
        ({"op": "rewrite_skill", "name": "item_qa"}, "description or a body"),
        (
            {"op": "replace_in_skill", "name": "item_qa", "old": "zzz", "new": "y"},
            "0 times",
        ),
        (
            {"op": "add_skill", "name": "item_qa", "kind": "reply"}
            | {"description": "d", "body": "b"},
            "exists",
        ),  # fmt: skip
        ({"op": "set_tool_description", "tool": "nope", "description": "d"}, "no tool"),
        ({"op": "add_hook", "hook": "nope", "params": {}}, "unknown hook"),
        ({"op": "add_hook", "hook": "reply_format", "params": {}}, "already in force"),
        (
            {"op": "set_hook_param", "hook": "compliance", "param": "x", "value": 1},
            "no hook",
        ),
        (
            {"op": "set_hook_param", "hook": "reply_format", "param": "max_chars"}
            | {"value": "long"},
            "expected an integer",
        ),  # fmt: skip
        (
            {
                "op": "set_hook_param",
                "hook": "reply_format",
                "param": "nope",
                "value": 1,
            },
            "unknown param",
        ),  # fmt: skip
        ({"op": "set_limit", "field": "turn_limit", "value": 0}, "in 1..100"),
        ({"op": "set_limit", "field": "retry_limit", "value": 21}, "in 0..20"),
    ],
)
def test_edits_that_do_not_apply_name_the_op(edit, why):
    edits, _ = parse_edits({"edits": [{"op": "add_rule", "text": "ok"}, edit]})
    with pytest.raises(EditError, match=f"edits\\[1\\] {edit['op']}: .*{why}"):
        apply_edits(V1, edits)


def test_integral_floats_are_integers():
    # JSON has one number type: 1.0 is the integer 1 (and no TypeError later)
    edits, _ = parse_edits({"edits": [{"op": "remove_rule", "index": 1.0}]})
    assert edits[0].fields["index"] == 1 and isinstance(edits[0].fields["index"], int)
    assert apply_edits(V1, edits).rules == V1.rules[:1] + V1.rules[2:]
    with pytest.raises(EditError, match="integer"):
        parse_edits({"edits": [{"op": "remove_rule", "index": 1.5}]})
