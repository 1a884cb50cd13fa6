"""skills_first: the skills are read before the calls; the results end up
right before the reply, and the gold says and does the same things."""

import dataclasses

import pytest

from augment.families import TRAIN_FAMILIES
from experiments.sim_cmd import augment_all
from sim.binding import bind, gold_skills, price_strategy_skill
from sim.datasets import dataset_line, generate
from sim.judge_success import success
from sim.oracle import LOAD_SKILL

N = 96


@pytest.fixture(scope="module")
def runs(compact_golds, compact_first_golds):
    h, cases, kw, plain = compact_golds
    assert len(cases) == N
    first = compact_first_golds
    again = generate(h, cases, skills_first=True, batch_size=5, **kw)
    return h, cases, plain, first, again


def _calls(traj, skills=False):
    return [
        (c["name"], sorted(c["arguments"].items()))
        for m in traj.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or ()
        if (c["name"] == LOAD_SKILL) == skills
    ]


def _steps(traj):
    return sum(m["role"] == "assistant" for m in traj.messages)


def test_same_reply_same_calls_fewer_steps(runs):
    h, cases, plain, first, again = runs
    assert list(map(dataset_line, first)) == list(map(dataset_line, again))
    binding = bind(h)
    for case, gold, traj in zip(cases, plain, first):
        assert traj.status == "ok" and traj.reply == gold.reply
        assert sorted(_calls(traj)) == sorted(_calls(gold))
        # the same skills, plus a price message's strategy skill loaded ahead
        extra = set(map(str, _calls(traj, True))) - set(map(str, _calls(gold, True)))
        ahead = price_strategy_skill(binding, case.message)
        assert extra <= {str((LOAD_SKILL, [("name", ahead)]))}
        assert _steps(traj) <= _steps(gold)
        assert success(traj, case.snapshot, case.message, binding).value == 1.0


def test_reply_skill_leads_and_results_come_last(runs):
    h, cases, plain, first, _ = runs
    binding = bind(h)
    led = with_tools = 0
    for case, traj in zip(cases, first):
        opening = next(m for m in traj.messages if m["role"] == "assistant")
        calls = opening.get("tool_calls") or []
        data = [c for c in calls if c["name"] != LOAD_SKILL]
        if not data:  # small talk, a decline: skills only, as before
            continue
        with_tools += 1
        reply = gold_skills(binding, case.message, case.snapshot)[0]
        ahead = [reply, price_strategy_skill(binding, case.message)]
        want = [{"name": LOAD_SKILL, "arguments": {"name": s}} for s in ahead if s]
        assert calls[: len(want)] == want
        assert all(c["name"] != LOAD_SKILL for c in calls[len(want) :])
        led += 1
        # every skill read before the calls: a tool result precedes the reply
        before = traj.messages[-2]
        assert before["role"] == "tool" and before["name"] != LOAD_SKILL
    assert with_tools > N // 2 and led == with_tools


def test_tight_turn_limit_keeps_the_ride_along(runs):
    h, cases, _, _, _ = runs
    tight = dataclasses.replace(h, turn_limit=2)
    kw = dict(compact_results=True, reply_plan=True)
    a = generate(tight, cases[:32], **kw)
    b = generate(tight, cases[:32], skills_first=True, **kw)
    assert list(map(dataset_line, a)) == list(map(dataset_line, b))


@pytest.mark.parametrize("family", TRAIN_FAMILIES)
def test_every_train_family_validates(runs, family):
    h, _, _, first, _ = runs
    _, failures = augment_all(h, first[:32], seed=0, family=family)
    assert failures == 0
