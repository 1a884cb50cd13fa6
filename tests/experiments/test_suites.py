"""The evaluation suites: reference scores, sizes, determinism, the edit test."""

import collections

import numpy as np
import pytest

from experiments.suites import SuiteOptions, get_suite
from experiments.suites import edit as edit_suite
from experiments.suites.simcases import case_of
from experiments.suites.t3 import KINDS, PROMPTS
from hat_jax.eval.backends import fixed_policy
from hat_jax.eval.runner import same_policy
from hat_jax.harness import load_harness, render_system_prompt
from sim.types import INTENTS, LANGS
from tests.experiments.suite_run import suite_records


@pytest.fixture(scope="module")
def opts():
    return SuiteOptions(load_harness("taolive_v1"))


def _scores(tmp_path, name, opts, n, policy_for=None):
    suite = get_suite(name)
    cases = suite.build(opts, n)
    policy_for = policy_for or suite.reference
    recs = suite_records(tmp_path / f"{name}.jsonl", suite, opts, cases, policy_for, 16)
    return {m: np.mean([r["scores"][m] for r in recs]) for m in suite.metrics}


@pytest.mark.parametrize("name", ["t1", "t2"])
def test_oracle_is_perfect_and_a_fixed_sentence_scores_zero(tmp_path, opts, name):
    oracle = _scores(tmp_path / "oracle", name, opts, 30)
    assert oracle["accuracy"] == 1.0 and oracle["effectiveness"] == 1.0
    assert oracle["tool_rationality"] == 1.0 and oracle["skill_selection"] == 1.0
    fixed = _scores(tmp_path / "fixed", name, opts, 30, same_policy(fixed_policy()))
    assert fixed["accuracy"] <= 0.05 and fixed["effectiveness"] <= 0.05


@pytest.mark.parametrize("name,n", [("t3", 20), ("edit", 8)])
def test_oracle_is_perfect_on_t3_and_the_edit_test(tmp_path, opts, name, n):
    assert _scores(tmp_path, name, opts, n)["accuracy"] == 1.0


def _key(c):
    h = c.request.harness if c.request else None
    return (c.case_id, dict(c.input), dict(c.tags), h.id if h else None)


@pytest.mark.parametrize("name", ["t1", "t2", "t3", "edit"])
def test_cases_are_a_deterministic_prefix(opts, name):
    suite = get_suite(name)
    short, long = suite.build(opts, 6), suite.build(opts, 13)
    assert [_key(c) for c in short] == [_key(c) for c in long[: len(short)]]
    assert len(short) == 6 * suite.cases_per_unit
    assert [_key(c) for c in short] == [_key(c) for c in suite.build(opts, 6)]


def test_t3_kinds_faults_and_prompt_variants(opts):
    cases = get_suite("t3").build(opts, 5 * 2 * PROMPTS)
    kinds = [c.tags["kind"] for c in cases]
    assert kinds[:5] == list(KINDS) and collections.Counter(kinds)["injection"] == 8
    faults = [c for c in cases if c.tags["kind"] == "tool_fault"]
    assert all(case_of(c).fault_plan for c in faults)
    assert {c.tags["intent"] for c in faults}.isdisjoint({"chit_chat", "injection"})
    assert {c.tags["intent"] for c in cases if c.tags["kind"] == "injection"} == {
        "injection"
    }
    for c in cases:
        if c.tags["kind"] in ("distractor_tools", "schema_edit"):
            assert c.request.harness.id != opts.harness.id
    pr = collections.defaultdict(list)
    for c in cases:
        if c.tags["kind"] == "prompt_robustness":
            pr[c.tags["question"]].append(c)
    assert len(pr) == 2
    for group in pr.values():
        assert len(group) == PROMPTS
        assert len({c.request.user_message for c in group}) == 1  # same question
        prompts = {
            render_system_prompt(c.request.harness, c.request.room_context)
            for c in group
        }
        assert len(prompts) == PROMPTS  # under different system prompts
        assert group[0].request.harness is opts.harness


def test_edit_pairs_questions_and_reports_the_error_reduction(opts):
    cases = get_suite("edit").build(opts, 4)
    assert [c.case_id for c in cases[:2]] == ["edit-00000-before", "edit-00000-after"]
    assert [c.tags["split"] for c in cases[::2]] == ["dev", "test", "test", "dev"]
    before, after = cases[0].request.harness, cases[1].request.harness
    assert before.id == "taolive@1.0" and after.id == "taolive@1.1"
    assert cases[0].request.user_message == cases[1].request.user_message
    assert all(case_of(c).snapshot.campaign for c in cases)  # Double 12 runs

    def rec(q, side, split, ok):  # error = 1 - success; accuracy is not read
        tags = {"question": q, "edit": side, "split": split}
        return {"tags": tags, "scores": {"success": ok, "accuracy": 1 - ok}}

    recs = []
    for i, (b, a) in enumerate([(0, 1), (0, 0), (1, 1), (0, 1), (1, 1)]):
        split = "dev" if i % 3 == 0 else "test"
        recs += [rec(f"q{i}", "before", split, b), rec(f"q{i}", "after", split, a)]
    recs.append(rec("q9", "before", "test", 0))  # no pair: left out
    out = edit_suite.extra(recs)["error"]
    assert out["before"]["mean"] == 0.6 and out["after"]["mean"] == 0.2
    assert out["reduction"]["value"] == pytest.approx(2 / 3)
    assert out["before"]["n"] == 5


@pytest.mark.slow  # builds all 7,941 cases (about 30 s on a busy 2-core CPU)
def test_full_size_suites(opts):
    sizes = {}
    for name in ("t1", "t2", "t3", "edit", "ifeval"):
        suite = get_suite(name)
        cases = suite.build(opts, suite.size)
        assert len(cases) == suite.size * suite.cases_per_unit
        assert len({c.case_id for c in cases}) == len(cases)
        sizes[name] = cases
    t1 = sizes["t1"]
    assert len(t1) >= 1500 and len(sizes["t2"]) >= 1000 and len(sizes["t3"]) >= 1000
    assert {c.tags["intent"] for c in t1} == set(INTENTS)
    assert {c.tags["lang"] for c in t1} == set(LANGS)
    assert {c.input["split"] for c in t1 + sizes["t2"] + sizes["t3"]} == {"test"}
    assert collections.Counter(c.tags["family"] for c in sizes["t2"]) == {
        "all_identifiers": 250,
        "reshaped_rewritten": 250,
        "prompt_under_hooks": 250,
        "everything": 250,
    }
    assert set(collections.Counter(c.tags["kind"] for c in sizes["t3"]).values()) == {
        240
    }
    splits = collections.Counter(c.tags["split"] for c in sizes["edit"][::2])
    assert splits == {"dev": 500, "test": 1000}
    assert sum(len(sizes[n]) for n in ("t1", "t2", "t3", "ifeval")) > 4500
    rooms = [{c.input["room_id"] for c in sizes[n]} for n in ("t1", "t2", "edit")]
    assert not (rooms[0] & rooms[1]) and not (rooms[0] & rooms[2])
