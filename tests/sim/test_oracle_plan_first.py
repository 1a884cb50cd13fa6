"""plan_first: the turn's first reasoning names the reply plan, next to the
viewer's message; the gold still says and does the same things."""

import pytest

from augment.families import TRAIN_FAMILIES
from experiments.sim_cmd import augment_all
from experiments.sim_cmd import main as sim_main
from hat_jax.harness import load_harness, read_jsonl
from sim.binding import bind
from sim.datasets import generate, make_cases
from sim.judge_success import success
from sim.oracle import OraclePolicy, reply_plan


@pytest.fixture(scope="module")
def runs(compact_golds, compact_first_golds):
    h, cases, kw, _ = compact_golds
    first = compact_first_golds
    planned = generate(h, cases, skills_first=True, plan_first=True, **kw)
    return h, cases, first, planned


def _assistant(traj):
    return [m for m in traj.messages if m["role"] == "assistant"]


def test_same_calls_same_reply_plan_named_first(runs):
    h, cases, first, planned = runs
    binding = bind(h)
    regions = 0
    for case, gold, traj in zip(cases, first, planned):
        a, b = _assistant(gold), _assistant(traj)
        # the same messages: calls, replies, and the reasoning of every later step
        assert [(m["content"], m.get("tool_calls")) for m in a] == [
            (m["content"], m.get("tool_calls")) for m in b
        ]
        assert [m.get("reasoning") for m in a[1:]] == [
            m.get("reasoning") for m in b[1:]
        ]
        plan = reply_plan(case.message)
        lead = b[0]["reasoning"]
        if b[0].get("tool_calls"):  # opens with calls or skills: the plan ahead
            assert lead.startswith(f"{a[0]['reasoning']} Plan: {plan}")
            # the reply's plan repeats the one named first
            assert f"Reply: {plan}." in b[-1]["reasoning"]
        else:  # answered at once: the reply's own plan is already next to it
            assert lead == a[0]["reasoning"] and "Plan:" not in lead
        region = case.message.region
        if region and b[0].get("tool_calls"):
            regions += 1  # named before the call that copies it
            args = [c["arguments"].get("region") for c in b[0]["tool_calls"]]
            assert region in lead and region in args
        assert success(traj, case.snapshot, case.message, binding).value == 1.0
    assert regions > 0


def test_plan_first_needs_a_reply_plan(compact_golds, tmp_path, capsys):
    h, cases, _, _ = compact_golds
    with pytest.raises(ValueError, match="needs reply_plan"):
        OraclePolicy(cases[:2], bind(h), plan_first=True)
    out = tmp_path / "x.jsonl"
    argv = ["generate", "--harness", "taolive_v1", "--out", str(out), "--n", "2"]
    argv += ["--plan-first"]
    with pytest.raises(ValueError, match="add --reply-plan"):
        sim_main(argv)
    assert not out.exists()


def test_cli_flag_matches_the_library(tmp_path):
    out = tmp_path / "p.jsonl"
    flags = ["--prompt-format", "compact", "--compact-results", "--reply-plan"]
    flags += ["--skills-first", "--plan-first", "--split", "dev", "--seed", "5"]
    argv = ["generate", "--harness", "taolive_v1", "--out", str(out), "--n", "12"]
    assert sim_main([*argv, *flags]) == 0
    harness = load_harness("taolive_v1").in_format("compact")
    kw = dict(compact_results=True, reply_plan=True, skills_first=True)
    golds = generate(harness, make_cases("dev", 5, 12), plan_first=True, **kw)
    assert [t.messages for t in read_jsonl(out)] == [g.messages for g in golds]


@pytest.mark.parametrize("family", TRAIN_FAMILIES)
def test_every_train_family_validates(runs, family):
    h, _, _, planned = runs
    _, failures = augment_all(h, planned[:24], seed=0, family=family)
    assert failures == 0
