"""The headline metric against scripted policies that try to game it.

Each policy runs through the real suites (cases, agent loop, tool sandbox,
judges): the oracle must score 100 % success; constant replies, wrong numbers
and a v1 memoriser must not (``sim.adversaries``). Accuracy alone is shown to
be gameable, which is why every table leads with success.
"""

import collections

import numpy as np
import pytest

from experiments.suites import SuiteOptions, edit, get_suite
from experiments.suites.simcases import binding_of, case_of
from hat_jax.harness import load_harness
from sim.adversaries import ConstantReply, Memoriser, WrongNumbers, shift_numbers
from sim.oracle import OraclePolicy
from tests.experiments.suite_run import suite_records

N_T1, N_T2, N_EDIT = 160, 160, 60
CONSTANT = (
    "谢谢支持，有问题随时问我哦～",  # zh, no digits
    "Thanks for the support, ask me anything about the products.",  # en
    "这款现在199元，喜欢就冲～",  # zh, a digit
    "It is ¥99 today, tap the cart to buy!",  # en, a digit
    "欢迎来到直播间，我是数字主播，谢谢支持，有商品问题找客服哦～",  # kitchen sink
)
# One kitchen-sink sentence per language (found by a red-team review): with the
# oracle's routing it answers small talk, injections, forbidden claims and
# damaged items, whose right answer is generic (~24 % of T1's mix), and nothing
# that needs a fact.
BILINGUAL = {
    "zh": "欢迎来到直播间，我是数字主播，谢谢支持！点小黄车下单有优惠，还有货，"
    "支持退货，新疆等地另算，其他商品问题找客服～",
    "en": "Hi, thanks! I'm the digital host. Cart has a deal, in stock, region "
    "decides returns. Sorry, ask customer service.",
}


@pytest.fixture(scope="module")
def opts():
    return SuiteOptions(load_harness("taolive_v1"))


def policy(kind, **kw):
    def policy_for(batch):
        cases = [case_of(c) for c in batch]
        bindings = [binding_of(c) for c in batch]
        if kind == "oracle":
            return OraclePolicy(cases, bindings, reasoning=False)
        return kind(cases, bindings, **kw)

    return policy_for


def records(tmp_path, opts, name, n, policy_for):
    suite = get_suite(name)
    path = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}.jsonl"
    return suite_records(path, suite, opts, suite.build(opts, n), policy_for)


def mean(recs, metric="success", **tags):
    keep = [r for r in recs if all(r["tags"].get(k) == v for k, v in tags.items())]
    assert keep, tags
    return float(np.mean([r["scores"][metric] for r in keep]))


def test_the_oracle_succeeds_everywhere(tmp_path, opts):
    t1 = records(tmp_path, opts, "t1", N_T1, policy("oracle"))
    assert mean(t1) == 1.0 and {r["tags"]["intent"] for r in t1} >= {"chit_chat"}
    t2 = records(tmp_path, opts, "t2", N_T2, policy("oracle"))
    for family in get_suite("t2").build(opts, 4):
        assert mean(t2, family=family.tags["family"]) == 1.0


@pytest.mark.parametrize("sentence", CONSTANT)
def test_a_constant_reply_cannot_succeed_but_is_accurate(tmp_path, opts, sentence):
    t1 = records(tmp_path, opts, "t1", N_T1, policy(ConstantReply, sentence=sentence))
    assert mean(t1) <= 0.25
    if not any(ch.isdigit() for ch in sentence):
        assert mean(t1, "accuracy") >= 0.95  # accuracy alone rewards saying nothing
    # even with the oracle's tool calls and skill loads around it
    routed = policy(ConstantReply, sentence=sentence, route=True)
    assert mean(records(tmp_path, opts, "t1", N_T1, routed)) <= 0.25


def test_one_sentence_per_language_behind_the_oracles_routing(tmp_path, opts):
    routed = policy(ConstantReply, sentence=BILINGUAL, route=True)
    t1 = records(tmp_path, opts, "t1", N_T1, routed)
    assert mean(t1, "accuracy") == 1.0 and mean(t1) <= 0.30
    for intent in ("product_question", "purchase_intent", "multi_intent"):
        assert mean(t1, intent=intent) <= 0.02, intent


def test_oracle_routing_with_wrong_numbers(tmp_path, opts):
    assert shift_numbers("3号链接现在199元，满99减10") == "4号链接现在200元，满100减11"
    t1 = records(tmp_path, opts, "t1", N_T1, policy(WrongNumbers))
    assert mean(t1) <= 0.40
    assert mean(t1, intent="product_question") <= 0.05  # a few answers are words


def test_a_v1_memoriser_fails_every_t2_family(tmp_path, opts):
    t2 = records(tmp_path, opts, "t2", N_T2, policy(Memoriser))
    families = collections.Counter(r["tags"]["family"] for r in t2)
    assert len(families) == 4 and min(families.values()) >= N_T2 // 4
    assert mean(t2) <= 0.60
    for family in families:
        assert mean(t2, family=family) <= 0.20, family
    # under its own harness it is the oracle
    assert mean(records(tmp_path, opts, "t1", 64, policy(Memoriser))) == 1.0


def test_the_harness_edit_reduces_errors_only_for_a_harness_follower(tmp_path, opts):
    def reduction(policy_for):
        recs = records(tmp_path, opts, "edit", N_EDIT, policy_for)
        return edit.extra(recs)["error"]

    follower = reduction(policy("oracle"))  # follows whichever harness is in force
    assert follower["before"]["mean"] >= 0.15  # v1 causes errors during Double 12
    assert follower["after"]["mean"] == 0.0
    assert follower["reduction"]["value"] >= 0.9
    memoriser = reduction(policy(Memoriser))  # keeps doing what v1 says
    assert memoriser["before"]["mean"] == follower["before"]["mean"]
    assert abs(memoriser["reduction"]["value"]) <= 0.1
