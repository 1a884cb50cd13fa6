"""Held-out generated apps: whether a model reads a harness it has never seen.

Case ``i`` is episode ``i`` of the base world (``experiments.world.apps``) at
this suite's own seed (apart from every seed the base data draws from), in a
full app (``mini`` False): fresh tool, parameter and skill names, skills, hooks
and prompt format, a user message in Chinese or English. Tools run in the app's
backend without faults. The premise measures of issue 56 come from here:

- ``success``: the apps judge (``experiments.world.apps.judge``);
- ``valid_tools``: the share of tool calls (``load_skill`` aside) that name a
  tool the harness has, weighted by each case's calls (``n_calls``);
- ``sign_off``: the reply ends with every tag the harness asks for (only the
  cases whose harness asks for one);
- ``skills``: every skill the playbook needs was loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from experiments.suites.base import Suite, SuiteOptions, dataset_seed, register_suite
from experiments.world.apps import judge
from experiments.world.apps.episode import Episode, needed_skills
from experiments.world.apps.teacher import AppBackend, AppTeacher
from experiments.world.apps.world import episode
from hat_jax.eval.runner import EvalCase, agent_rollout
from hat_jax.harness import Trajectory, TurnRequest
from hat_jax.harness.signoff import required_tags, signed_off
from hat_jax.harness.spec import LOAD_SKILL
from sim.rewards import Score

SEED_OFFSET = 909
SIZE = 1000
SEED_KEY, INDEX_KEY = "app_seed", "app_index"


@functools.lru_cache(maxsize=4096)
def _episode(seed: int, index: int) -> Episode:
    return episode(seed, index)


class SuiteBackend(AppBackend):
    """The apps' tools, each call's episode rebuilt from its request's meta."""

    def __init__(self):
        super().__init__((), fault_rate=0.0)

    def episode(self, meta) -> Episode:
        return _episode(int(meta[SEED_KEY]), int(meta[INDEX_KEY]))


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    seed = dataset_seed(opts, SEED_OFFSET)
    out = []
    for i in range(n):
        ep = _episode(seed, i)
        h = ep.app.harness  # in its own format (``opts.prompt_format`` aside)
        request = TurnRequest(
            ep.message, ep.context, {SEED_KEY: seed, INDEX_KEY: i}, harness=h
        )
        tags = {"intent": ep.intent, "lang": ep.lang}
        tags["format"] = h.layout.format
        record = {"message": ep.message, "domain": ep.app.domain.key, "seed": seed}
        out.append(EvalCase(f"apps-{i:05d}", request, tags=tags, input=record,
                            payload=ep))  # fmt: skip
    return out


def judge_apps(batch: Sequence[EvalCase], trajs: Sequence[Trajectory]) -> list:
    out = []
    for c, t in zip(batch, trajs, strict=True):
        ep: Episode = c.payload
        why = judge.failures(t, ep)
        scores = {"success": Score(0.0 if why else 1.0, "; ".join(why) or "ok")}
        calls = [x.name for x in t.tool_calls if x.name != LOAD_SKILL]
        real = set(ep.app.tools.values())
        valid = sum(name in real for name in calls)
        scores["valid_tools"] = Score(valid / len(calls) if calls else 0.0, "")
        scores["n_calls"] = Score(float(len(calls)), "")
        loaded = {
            x.arguments.get("name")
            for x in t.tool_calls
            if x.name == LOAD_SKILL and isinstance(x.arguments, dict)
        }
        need = needed_skills(ep)
        scores["skills"] = Score(float(set(need) <= loaded), "")
        tags = required_tags(ep.app.harness, need[0])
        if tags:
            ok = bool(t.reply) and all(signed_off(t.reply, tag) for tag in tags)
            scores["sign_off"] = Score(float(ok), " ".join(tags))
        out.append(scores)
    return out


SUITE = register_suite(
    Suite(
        name="apps",
        title="Held-out generated apps",
        size=SIZE,
        build=build,
        rollout=lambda opts: agent_rollout(SuiteBackend()),
        judge=judge_apps,
        metrics=("success", "valid_tools", "skills", "sign_off"),
        group_by=("intent", "lang", "format"),
        reference=lambda batch: AppTeacher([c.payload for c in batch]),
        weights={"valid_tools": "n_calls"},
    )
)
