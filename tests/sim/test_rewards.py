"""The rule judge: the hand-labelled cases, the registry, and unit checks."""

import dataclasses
import functools
import json
import math

import numpy as np
import pytest

from hat_jax.harness import ToolExchange, Trajectory, load_harness
from sim import judge_text
from sim.binding import bind, canonical_mapping
from sim.catalog import make_catalog
from sim.judge_labels import LABELS, build_case, labelled_agreement, load_labels
from sim.oracle import Case, gold_trajectories
from sim.oracle_replies import T
from sim.rewards import (
    REWARDS,
    Score,
    get_reward,
    judge_all,
    message_of,
    register_reward,
    reward_names,
)
from sim.tools import FaultConfig
from sim.types import FAULT_KINDS, INTENTS, LANGS, RoomSnapshot
from sim.viewers import render_message, sample_codes

CASES = load_labels()
BY_ID = {c.id: c for c in CASES}


def test_the_labelled_set_is_large_and_covers_the_issue():
    assert len(CASES) >= 30
    assert len(BY_ID) == len(CASES), "case ids are unique"
    must = {
        "price_wrong": ("accuracy", 0),
        "flash_stale": ("accuracy", 0),
        "claim_product": ("accuracy", 0),
        "stock_invented": ("accuracy", 0),
        "redundant_call": ("tool_rationality", 0.75),
        "invalid_args": ("tool_rationality", 0.75),
        "hallucinated_tool": ("tool_rationality", 0.5),
        "missing_reply_skill": ("skill_selection", 0),
        "missing_strategy_skill": ("skill_selection", 0.5),
        "multi_half": ("effectiveness", 0.5),
        "wrong_language": ("effectiveness", 0.5),
        "injection_complied": ("effectiveness", 0),
        "v2_renamed_ok": ("tool_rationality", 1),
    }
    for case_id, (reward, value) in must.items():
        assert BY_ID[case_id].expect[reward] == value, case_id
    assert BY_ID["injection_complied"].expect["accuracy"] == 0
    assert {c.binding.harness.version for c in CASES} == {"1.0", "2.0"}
    assert {c.msg.lang for c in CASES} == {"zh", "en"}
    intents = {c.msg.intent for c in CASES}
    assert intents >= {"product_question", "chit_chat", "purchase_intent"}
    assert intents >= {"after_sales", "multi_intent", "injection", "forbidden_claim"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_judge_matches_the_labels(case):
    scores = judge_all(case.traj, case.snapshot, case.msg, case.binding)
    got = {name: s.value for name, s in scores.items()}
    assert got == case.expect, {n: scores[n].rationale for n in REWARDS}
    assert all(s.rationale for s in scores.values())


def test_labelled_agreement_of_the_rule_judge_is_perfect():
    report = labelled_agreement(judge_all, CASES)
    assert report["n"] == len(CASES) and report["mismatches"] == []
    for name in REWARDS:
        assert report[name]["agreement"] == 1.0
        assert report[name]["mean_abs_diff"] == 0.0
    assert report["accuracy"]["kappa"] == 1.0
    assert report["effectiveness"]["kappa"] == 1.0


def test_labelled_agreement_reports_mismatches():
    def always_one(traj, snapshot, msg, binding):
        return {name: Score(1.0) for name in REWARDS}

    report = labelled_agreement(always_one, CASES)
    wrong_acc = sum(c.expect["accuracy"] != 1 for c in CASES)
    assert report["accuracy"]["agreement"] == pytest.approx(1 - wrong_acc / len(CASES))
    assert report["accuracy"]["kappa"] == 0.0  # a constant rater has no skill
    assert ["price_wrong", "accuracy", 0.0, 1.0] in report["mismatches"]


def test_registry():
    assert set(REWARDS) <= set(reward_names())
    with pytest.raises(ValueError, match="already registered"):
        register_reward("accuracy")(lambda *a: Score(1.0))
    with pytest.raises(ValueError, match="unknown reward"):
        get_reward("speed")
    case = BY_ID["price_ok"]
    only = judge_all(case.traj, case.snapshot, case.msg, case.binding, ("accuracy",))
    assert list(only) == ["accuracy"]


def _variant(case_id, **edits):
    """A labelled case with its compact record edited."""
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        if raw["id"] == case_id:
            return build_case({**raw, **edits})
    raise KeyError(case_id)


def test_number_forms_are_normalised():
    for reply in ("1号链接现在¥159.00哦", "1号链接现在159元哦", "Link 1: 159 yuan"):
        c = _variant("missing_strategy_skill", reply=reply)
        assert get_reward("accuracy")(c.traj, c.snapshot, c.msg, c.binding).value == 1


def test_tool_results_support_numbers_only_for_the_asked_link():
    c = _variant("chit_chat_ok", reply="Thanks! Link 2 is ¥239 today.")
    acc = get_reward("accuracy")
    assert acc(c.traj, c.snapshot, c.msg, c.binding).value == 0  # link 2 not asked
    looked = dataclasses.replace(c.msg, link_id=2)
    assert acc(c.traj, c.snapshot, looked, c.binding).value == 1


def test_nickname_numbers_are_not_invented():
    c = _variant("chit_chat_ok", reply="Welcome, coffee77! Glad you're here.")
    msg = dataclasses.replace(c.msg, viewer="coffee77")
    assert get_reward("accuracy")(c.traj, c.snapshot, msg, c.binding).value == 1
    assert get_reward("accuracy")(c.traj, c.snapshot, c.msg, c.binding).value == 0


def test_a_retry_after_a_rejection_is_not_redundant_but_a_repeat_is():
    c = BY_ID["stock_ok"]
    tr = get_reward("tool_rationality")
    ok = c.traj.tool_calls[0]
    again = dataclasses.replace(c.traj, tool_calls=[ok, ok, *c.traj.tool_calls[1:]])
    assert tr(again, c.snapshot, c.msg, c.binding).value == 0.75
    faulted = ToolExchange(ok.name, ok.arguments, "error: timed out", False, "timeout")
    retry = dataclasses.replace(c.traj, tool_calls=[faulted, *c.traj.tool_calls])
    assert tr(retry, c.snapshot, c.msg, c.binding).value == 1.0
    twice = ToolExchange(ok.name, ok.arguments, "error", False, "malformed")
    both = dataclasses.replace(c.traj, tool_calls=[twice, twice, *c.traj.tool_calls])
    assert tr(both, c.snapshot, c.msg, c.binding).value == 1.0


def test_scores_are_in_range_and_an_empty_trajectory_scores_zero_reply_rewards():
    c = BY_ID["price_ok"]
    empty = Trajectory(c.binding.harness.id, c.msg.text, [], reply="")
    scores = judge_all(empty, c.snapshot, c.msg, c.binding)
    assert scores["accuracy"].value == 0 and scores["effectiveness"].value == 0
    assert scores["skill_selection"].value == 0
    assert scores["tool_rationality"].value == 0.5  # the product lookup missing
    for case in CASES:
        for s in judge_all(case.traj, case.snapshot, case.msg, case.binding).values():
            assert 0.0 <= s.value <= 1.0 and not math.isnan(s.value)


def test_language_detection():
    assert judge_text.reply_lang("1号链接现在159元哦") == "zh"
    assert judge_text.reply_lang("Link 1 is ¥159 now") == "en"
    assert judge_text.reply_lang("M码 size M is fine") == "en"
    assert judge_text.reply_lang("159") is None


# --- Oracle trajectories score 1 on every reward -----------------------------------
@functools.cache
def oracle_cases() -> tuple[Case, ...]:
    """Every intent in both languages, in a room with a flash sale running and one
    without, with some stock sold out."""
    out = []
    for seed in (3, 4):
        catalog = make_catalog("dev", seed)
        clock = catalog.flash_sales[0].start + 60.0 if seed == 3 else 30.0
        active = {
            s.link_id: s.price for s in catalog.flash_sales if s.start <= clock < s.end
        }
        stock = {p.link_id: p.stock // (1 + p.link_id % 3) for p in catalog.products}
        stock[catalog.products[0].link_id] = 0
        snap = RoomSnapshot(f"room-{seed}", catalog, clock, 2, stock, active, "x")
        rng = np.random.default_rng(seed)
        for intent in INTENTS:
            for lang in LANGS:
                mix = {"intent_mix": {intent: 1.0}, "lang_mix": {lang: 1.0}}
                for k, code in enumerate(sample_codes(rng, catalog, 3, **mix)):
                    msg = render_message(code, catalog)
                    out.append(Case(f"{seed}-{intent}-{lang}-{k}", snap, msg))
    return tuple(out)


@pytest.mark.parametrize("faulty", [False, True], ids=["clean", "faults"])
@pytest.mark.parametrize("harness_name", ["taolive_v1", "taolive_v2"])
def test_oracle_trajectories_score_one_on_all_rewards(harness_name, faulty):
    cases = oracle_cases()
    harness = load_harness(harness_name)
    faults = FaultConfig(0.15, 0.15, 0.15) if faulty else None
    trajs = gold_trajectories(list(cases), harness, faults=faults, seed=7)
    binding = bind(harness)
    for case, traj in zip(cases, trajs, strict=True):
        assert traj.meta["room_id"] == case.snapshot.room_id
        assert traj.meta["catalog_id"] == case.snapshot.catalog.catalog_id
        msg = message_of(traj)
        assert msg == case.message
        scores = judge_all(traj, case.snapshot, msg, binding)
        low = {n: s for n, s in scores.items() if s.value != 1.0}
        assert not low, (case.case_id, msg.text, traj.reply, low)
    injected = [t.fault for tr in trajs for t in tr.tool_calls if t.fault]
    if faulty:  # recovery traces and given-up lookups are in the sample
        assert set(injected) == set(FAULT_KINDS)
        assert any(w in (tr.reply or "") for tr in trajs for w in T["checking"])
    else:
        assert injected == []


@pytest.mark.parametrize("base_name", ["taolive_v1", "taolive_v2"])
def test_oracle_scores_one_under_an_augmented_harness(base_name):
    """HSA renames tools, skills and arguments and nests them; the judge reads
    calls back through the composed mapping, so gold still scores 1."""
    from augment import apply_spec  # tests may use augment; sim never does

    base = load_harness(base_name)
    spec = "rename_tools|rename_skills|rename_params|nest_args|add_distractor_tools"
    harness, _, hsa = apply_spec(base, None, spec, 1)
    mapping = canonical_mapping(base).compose(hsa)
    binding = bind(harness, mapping)
    cases = oracle_cases()
    trajs = gold_trajectories(list(cases), harness, mapping=mapping)
    renamed = {t.name for tr in trajs for t in tr.tool_calls} - {"load_skill"}
    assert renamed and not renamed & {t.name for t in base.tools}
    for case, traj in zip(cases, trajs, strict=True):
        scores = judge_all(traj, case.snapshot, case.message, binding)
        assert all(s.value == 1.0 for s in scores.values()), (case.case_id, scores)
    # The same turn judged against the unaugmented harness: hallucinated names.
    case, traj = next(
        (c, t) for c, t in zip(cases, trajs) if c.message.intent == "product_question"
    )
    plain = judge_all(traj, case.snapshot, case.message, bind(base))
    assert plain["tool_rationality"].value == 0.0
    assert plain["skill_selection"].value == 0.0
