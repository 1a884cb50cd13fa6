"""Verifiable instruction following: a topical request with 1-3 constraints.

The constraints are IFEval instruction types, planned by
:mod:`experiments.world.constraints` and checked by the registry of
``hat_jax.eval.ifeval`` itself: an example is only returned once every one of
its checkers accepts the response (a draw whose response fails is redrawn from
the same generator, so the output stays a function of the seed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from experiments.world import banks
from experiments.world.constraints import PLANNERS
from experiments.world.draft import Draft, render
from hat_jax.eval.ifeval import registry

MAX_TRIES = 50
# Planners that change the paragraph list run before those that fill it.
_FIRST = ("layout",)
_REPEAT = "combination:repeat_prompt"


def _request(rng: np.random.Generator) -> tuple[str, str, tuple[str, str]]:
    topic, nouns = banks.pick(rng, banks.TOPICS)
    req = banks.pick(rng, banks.REQUESTS).format(
        form=banks.pick(rng, banks.FORMS),
        topic=topic,
        audience=banks.pick(rng, banks.AUDIENCES),
    )
    return req, topic, nouns


def _sentences(rng: np.random.Generator, topic: str, nouns, n: int) -> list[str]:
    a, b = nouns
    out = []
    for i in rng.permutation(len(banks.SENTENCES))[:n]:
        out.append(
            banks.SENTENCES[int(i)].format(
                t=topic,
                T=topic[0].upper() + topic[1:],
                a=a,
                b=b,
                x=banks.pick(rng, banks.ADJECTIVES),
            )
        )
    return out


def choose_constraints(rng: np.random.Generator, k: int) -> list[str]:
    """Up to ``k`` instruction ids whose slots do not overlap."""
    chosen: list[str] = []
    taken: set[str] = set()
    ids = sorted(PLANNERS)
    for i in rng.permutation(len(ids)):
        planner = PLANNERS[ids[int(i)]]
        if not planner.slots & taken:
            chosen.append(ids[int(i)])
            taken |= planner.slots
        if len(chosen) == k:
            break
    return sorted(chosen, key=lambda c: not PLANNERS[c].slots & set(_FIRST))


def _prompt(request: str, ids, kwargs, *, with_repeat: bool) -> str:
    """The request, then each constraint's phrase; the repeat one goes last."""
    parts = [PLANNERS[i].phrase(kw) for i, kw in zip(ids, kwargs) if i != _REPEAT]
    if with_repeat and _REPEAT in ids:
        parts.append(PLANNERS[_REPEAT].phrase({}))
    return " ".join([request, *parts])


def _draw(rng: np.random.Generator) -> tuple[str, str, list[str], list[dict]]:
    request, topic, nouns = _request(rng)
    pool = _sentences(rng, topic, nouns, 14)
    paragraphs = [pool[0:3], pool[3:5], pool[5:7]][: int(rng.integers(2, 4))]
    draft = Draft(topic=topic, paragraphs=paragraphs, spare=pool[7:])
    ids = choose_constraints(rng, int(rng.integers(1, 4)))
    kwargs = [PLANNERS[i].plan(draft, rng) if PLANNERS[i].plan else {} for i in ids]
    if _REPEAT in ids:  # repeat excludes measured constraints: phrases known now
        draft.repeat = _prompt(request, ids, kwargs, with_repeat=False)
        kwargs[ids.index(_REPEAT)] = {"prompt_to_repeat": draft.repeat}
    response = render(draft)
    for j, i in enumerate(ids):
        if PLANNERS[i].measure:
            kwargs[j] = PLANNERS[i].measure(response, rng)
    prompt = _prompt(request, ids, kwargs, with_repeat=True)
    return prompt, response, ids, kwargs


def follows(response: str, ids: list[str], kwargs: list[dict]) -> bool:
    """True when the ifeval registry's checkers accept ``response`` for all ids."""
    return all(registry.build(i, kw)(response) for i, kw in zip(ids, kwargs))


def make_instruct(rng: np.random.Generator) -> dict[str, Any]:
    """One constrained example.

    Returns:
      ``{"prompt", "response", "instruction_id_list", "kwargs"}``, the last
      two in IFEval's prompt-file form.

    Raises:
      RuntimeError: no draw in ``MAX_TRIES`` passed its checkers (a planner bug).
    """
    for _ in range(MAX_TRIES):
        prompt, response, ids, kwargs = _draw(rng)
        if follows(response, ids, kwargs):
            return {
                "prompt": prompt,
                "response": response,
                "instruction_id_list": ids,
                "kwargs": kwargs,
            }
    raise RuntimeError(f"no constrained example passed its checks in {MAX_TRIES}")
