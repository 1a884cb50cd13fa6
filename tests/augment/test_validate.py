"""The validator accepts the gold and catches every kind of broken augmentation."""

import copy
import dataclasses

import pytest

from augment import Mapping, apply_spec, validate_augmented
from hat_jax.harness.spec import HookSpec


def test_gold_validates_against_itself(harnesses, golds):
    for name, h in harnesses.items():
        for t in golds[name].values():
            assert validate_augmented(h, t, h, t, Mapping.identity(h)) == []


def _aug(harnesses, golds, spec="rename_tools|rename_skills", case="stock_deal"):
    h, t = harnesses["taolive_v1"], golds["taolive_v1"][case]
    h2, t2, m = apply_spec(h, t, spec, 3)
    assert validate_augmented(h, t, h2, t2, m) == []
    return h, t, h2, t2, m


def _problems(h, t, h2, t2, m):
    return " | ".join(validate_augmented(h, t, h2, t2, m))


def test_catches_a_call_under_the_old_name(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds)
    bad = copy.deepcopy(t2)
    bad.messages[2]["tool_calls"][0]["name"] = "get_product_info_by_link_id"
    assert "unknown tool" in _problems(h, t, h2, bad, m)


def test_catches_a_wrong_argument(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds, "rename_params(frac=1.0)")
    bad = copy.deepcopy(t2)
    call = bad.messages[2]["tool_calls"][0]
    call["arguments"] = {"link_id": 5}  # the old parameter name
    text = _problems(h, t, h2, bad, m)
    # Unknown arguments travel through the inverse map unchanged, so this call
    # even maps back; the forward map and the schema check catch it.
    assert "is not the forward map" in text and "unknown argument" in text


def test_catches_a_wrong_mapping(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds)
    bad = Mapping.from_json(m.to_json())
    a, b = list(bad.skills)[:2]
    bad.skills[a], bad.skills[b] = bad.skills[b], bad.skills[a]
    assert "skill does not map back" in _problems(h, t, h2, t2, bad)


def test_catches_stale_skill_references_and_bodies(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds)
    skills = list(h2.skills)
    s = skills[0]
    skills[0] = dataclasses.replace(s, body=s.body + '\nSee load_skill("item_qa").')
    h3 = h2.replace(skills=tuple(skills))
    text = _problems(h, t, h3, t2, m)
    assert "loads unknown skill 'item_qa'" in text
    assert "load_skill result is not the skill body" in text


def test_catches_a_hook_the_reply_fails(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds, "format(plain)")
    hooks = tuple(
        HookSpec(x.name, {**x.params, "max_chars": 10})
        if x.name == "reply_format"
        else x
        for x in h2.hooks
    )
    assert "reply_format (reply)" in _problems(h, t, h2.replace(hooks=hooks), t2, m)


@pytest.mark.parametrize(
    "reply, what",
    [
        ("5号链接M码还剩12件，喜欢就冲～", "number 199"),
        ("5号链接M码有货，满199减20", "number 12"),
    ],
)
def test_catches_lost_facts(harnesses, golds, reply, what):
    h, t, h2, t2, m = _aug(harnesses, golds, "loosen_max_chars")
    bad = copy.deepcopy(t2)
    bad.reply = reply
    assert f"reply lost {what}" in _problems(h, t, h2, bad, m)


def test_catches_changed_results_prompt_and_turn_limit(harnesses, golds):
    h, t, h2, t2, m = _aug(harnesses, golds, "reorder_sections")
    bad = copy.deepcopy(t2)
    bad.tool_calls[0].result = '{"price": 1}'
    bad.messages[0]["content"] = "stale"
    text = _problems(h, t, h2.replace(turn_limit=2), bad, m)
    assert "tool result changed" in text and "system prompt" in text
    assert "exceed turn_limit 2" in text


@pytest.mark.parametrize("case", ["tool_fault", "rejected_call"])
def test_fault_and_rejection_texts_follow_the_new_harness(harnesses, golds, case):
    h, t, h2, t2, m = _aug(harnesses, golds, "rename_tools|nest_args(frac=1.0)", case)
    first = t2.tool_calls[0]
    assert first.name == m.tools[t.tool_calls[0].name] and first.name in first.result
    assert t.tool_calls[0].name not in first.result
    if case == "rejected_call":
        assert '"link_id": "5号"' not in first.result and "5号" in first.result
    stale = copy.deepcopy(t2)
    stale.tool_calls[0].result = t.tool_calls[0].result
    assert "exchange 1" in _problems(h, t, h2, stale, m)
