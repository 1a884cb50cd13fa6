"""Constrained-instruction examples pass the ifeval registry's own checkers."""

import numpy as np
import pytest

from experiments.world.constraints import PLANNERS
from experiments.world.instruct import choose_constraints, make_instruct
from hat_jax import assets
from hat_jax.eval.ifeval import load_prompts, registry
from hat_jax.harness import read_jsonl
from hat_jax.text.chat import render_assistant


def _check_all(response, ids, kwargs):
    return [i for i, kw in zip(ids, kwargs) if not registry.build(i, kw)(response)]


def test_every_checker_has_a_planner():
    assert sorted(PLANNERS) == registry.names()
    assert len(PLANNERS) == 25


def test_base_instruct_examples_pass_their_checkers(world_files):
    trajs = [t for t in read_jsonl(world_files["base"]) if t.meta["kind"] == "instruct"]
    assert len(trajs) > 60
    for t in trajs:
        spec = t.meta["ifeval"]
        # What the model is trained on: the assistant body as rendered.
        response = render_assistant(t.messages[-1])
        assert response == t.reply
        assert 1 <= len(spec["instruction_id_list"]) <= 3
        assert _check_all(response, spec["instruction_id_list"], spec["kwargs"]) == []
        assert t.messages[-2] == {"role": "user", "content": t.user_message}


def test_all_25_instruction_types_occur_and_pass():
    seen = set()
    for i in range(300):
        ex = make_instruct(np.random.default_rng([42, i]))
        ids, kwargs = ex["instruction_id_list"], ex["kwargs"]
        assert _check_all(ex["response"], ids, kwargs) == [], ex
        seen |= set(ids)
    assert seen == set(registry.names())


def test_constraints_never_share_a_slot_and_checks_are_not_vacuous():
    for i in range(100):
        ids = choose_constraints(np.random.default_rng([7, i]), 3)
        slots = [PLANNERS[x].slots for x in ids]
        assert sum(map(len, slots)) == len(set().union(*slots))
    # The checkers do reject a response that ignores the constraints.
    rejected = 0
    for i in range(40):
        ex = make_instruct(np.random.default_rng([9, i]))
        bare = "Sure."
        rejected += bool(_check_all(bare, ex["instruction_id_list"], ex["kwargs"]))
    assert rejected > 25


def test_repeat_prompt_repeats_the_request_exactly():
    for i in range(400):
        ex = make_instruct(np.random.default_rng([11, i]))
        if "combination:repeat_prompt" in ex["instruction_id_list"]:
            j = ex["instruction_id_list"].index("combination:repeat_prompt")
            told = ex["kwargs"][j]["prompt_to_repeat"]
            assert ex["prompt"].startswith(told)
            assert ex["response"].lower().startswith(told.lower())
            return
    raise AssertionError("no repeat_prompt example drawn")


@pytest.mark.skipif(
    not assets.is_fetched("ifeval-input-data"), reason="IFEval prompts not fetched"
)
def test_no_prompt_is_an_ifeval_eval_prompt(world_files):
    evals = {p.prompt.strip() for p in load_prompts()}
    ours = {t.user_message.strip() for t in read_jsonl(world_files["base"])}
    assert len(evals) > 500 and not ours & evals
