"""Slips: a wrong first reply the hooks reject, then the gold; SFT trains the gold."""

import re

import numpy as np
import pytest

from hat_jax.harness.decisions import decision_kinds
from hat_jax.harness.hooks import find_numbers, number_support
from hat_jax.harness.tokens import rejected, trajectory_to_tokens
from hat_jax.train.build import load_tokenizer
from hat_jax.train.data import tokenize
from sim.datasets import dataset_line, generate
from sim.oracle import named_numbers, parse_result
from sim.oracle_slips import slips_here

N = 96


@pytest.fixture(scope="module")
def runs(compact_golds):
    h, cases, kw, plain = compact_golds
    assert len(cases) == N
    slipped = generate(h, cases, slips=0.5, **kw)
    again = generate(h, cases, slips=0.5, batch_size=7, **kw)
    return cases, plain, slipped, again


def _numbers(text):
    return {norm for _, norm, _ in find_numbers(text)}


def _facts(traj):
    return [
        m["content"]
        for m in traj.messages
        if m["role"] == "tool" and parse_result(m["content"]) is not None
    ]


def test_slipping_cases_recover_to_the_gold(runs):
    cases, plain, slipped, again = runs
    assert list(map(dataset_line, slipped)) == list(map(dataset_line, again))
    n = 0
    for case, gold, traj in zip(cases, plain, slipped):
        assert traj.status == "ok" and traj.reply == gold.reply
        fed = [m for m in traj.messages if m.get("hook_feedback")]
        if not fed:
            assert traj.messages == gold.messages  # a case that did not slip
            continue
        n += 1
        assert slips_here(case.case_id, 0.5) and len(fed) == 1
        assert "factual_risk" in fed[0]["content"]
        bad, fix = [m for m in traj.messages if m["role"] == "assistant"][-2:]
        assert fix["content"] == gold.reply and fix["reasoning"].startswith(
            "The harness rejected my reply. "
        )
        # the retry names the gold's facts again, the slip named wrong ones
        named = named_numbers(gold.reply, _facts(gold))
        assert all(item in fix["reasoning"] for item in named)
        support = number_support(_facts(traj))
        wrong = _numbers(bad["content"]) - _numbers(gold.reply)
        assert wrong and not wrong & support
        assert re.sub(r"\d+", "#", bad["content"]) == re.sub(r"\d+", "#", gold.reply)
    assert 0.25 * N < n < 0.5 * N  # about half of the cases that quote numbers


def test_sft_trains_the_recovery_not_the_slip(runs):
    tok = load_tokenizer("smollm2-135m-instruct")
    _, plain, slipped, _ = runs
    traj = next(t for t in slipped if any(rejected(t.messages)))
    bad = [m for m in traj.messages if m["role"] == "assistant"][-2]
    ids, every = trajectory_to_tokens(traj, tok)
    _, mask = trajectory_to_tokens(traj, tok, train_rejected=False)
    dropped = tok.decode(ids[every & ~mask].tolist())
    assert bad["content"] in dropped and (mask <= every).all()
    trained = tok.decode(ids[mask].tolist())
    assert bad["content"] not in trained and traj.reply in trained
    kinds = decision_kinds(traj, tok)
    assert not (kinds[every & ~mask] > 0).any() and (kinds[mask] > 0).any()
    # SFT's examples: the same loss tokens as the mask above
    (ex,), _ = tokenize([traj], tok, seq_len=len(ids) + 1)
    assert np.array_equal(ex.loss_mask, mask[1:])
    # without slips nothing changes
    gold = plain[slipped.index(traj)]
    assert np.array_equal(
        trajectory_to_tokens(gold, tok)[1],
        trajectory_to_tokens(gold, tok, train_rejected=False)[1],
    )


def test_slips_share_is_checked():
    from sim.oracle import OraclePolicy

    with pytest.raises(ValueError, match="slips must be a share"):
        OraclePolicy([], [], slips=1.5)
