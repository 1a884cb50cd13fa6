"""Verifiable instruction following: a topical request with 1-3 constraints.

The constraints are IFEval instruction types, planned by
:mod:`experiments.world.constraints` and checked by the registry of
``hat_jax.eval.ifeval`` itself: an example is only returned once every one of
its checkers accepts the response (a draw whose response fails is redrawn from
the same generator, so the output stays a function of the seed). A
:class:`Spec` says what the draws come from: the default, :data:`TRAINING`, is
what the base data and the OPD prompts use; the IFEval proxy suite
(``experiments.suites.ifeval_proxy``) draws from held-out banks instead.
"""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Spec:
    """What constrained examples are drawn from.

    Attributes:
      requests: request templates with ``{form}``, ``{topic}``, ``{audience}``.
      topics: (topic phrase, two nouns of it) pairs.
      shape: sentences in each of the draft's three paragraphs before any
        constraint edits it (two or three of them are used).
      exclude: instruction ids never chosen.
    """

    requests: tuple[str, ...] = banks.REQUESTS
    topics: tuple[tuple[str, tuple[str, str]], ...] = banks.TOPICS
    shape: tuple[int, int, int] = (3, 2, 2)
    exclude: frozenset[str] = frozenset()


TRAINING = Spec()  # the base data's and the OPD prompts' draws


def _request(rng: np.random.Generator, spec: Spec) -> tuple[str, str, tuple[str, str]]:
    topic, nouns = banks.pick(rng, spec.topics)
    req = banks.pick(rng, spec.requests).format(
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


def choose_constraints(
    rng: np.random.Generator, k: int, exclude: frozenset[str] = frozenset()
) -> list[str]:
    """Up to ``k`` instruction ids whose slots do not overlap, none in ``exclude``."""
    chosen: list[str] = []
    taken: set[str] = set()
    ids = sorted(PLANNERS)
    for i in rng.permutation(len(ids)):  # the same draws whatever is excluded
        planner = PLANNERS[ids[int(i)]]
        if ids[int(i)] not in exclude and not planner.slots & taken:
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


def _draw(
    rng: np.random.Generator, spec: Spec
) -> tuple[str, str, list[str], list[dict]]:
    request, topic, nouns = _request(rng, spec)
    pool = _sentences(rng, topic, nouns, 14)
    cuts = np.cumsum((0, *spec.shape)).tolist()
    paragraphs = [pool[a:b] for a, b in zip(cuts, cuts[1:])]
    paragraphs = paragraphs[: int(rng.integers(2, 4))]
    draft = Draft(topic=topic, paragraphs=paragraphs, spare=pool[cuts[-1] :])
    ids = choose_constraints(rng, int(rng.integers(1, 4)), spec.exclude)
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


def make_instruct(rng: np.random.Generator, spec: Spec = TRAINING) -> dict[str, Any]:
    """One constrained example drawn from ``spec``.

    Returns:
      ``{"prompt", "response", "instruction_id_list", "kwargs"}``, the last
      two in IFEval's prompt-file form.

    Raises:
      RuntimeError: no draw in ``MAX_TRIES`` passed its checkers (a planner bug).
    """
    for _ in range(MAX_TRIES):
        prompt, response, ids, kwargs = _draw(rng, spec)
        if follows(response, ids, kwargs):
            return {
                "prompt": prompt,
                "response": response,
                "instruction_id_list": ids,
                "kwargs": kwargs,
            }
    raise RuntimeError(f"no constrained example passed its checks in {MAX_TRIES}")
