"""Simulator cases as eval cases, through the simulator's agent task.

Every simulator suite (T1, T2, T3, the edit test) turns a ``sim.oracle.Case``
under a ``sim.binding.Binding`` into an :class:`EvalCase` by way of the agent
task RL trains in (``experiments.sim_task.SimTask``, the
``hat_jax.train.agent_task`` protocol): the agent-loop request, tags for the
summary (intent, language, and the suite's own), the case as JSON for its
record, and the task case as payload for the task's judges (success, the
headline, then accuracy, effectiveness, tool rationality, skill selection) and
for the oracle reference policy. Tools run in the task's backend without random
faults (a suite forces faults per case through ``Case.fault_plan``), seeded by
the eval seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from augment import apply_spec
from experiments.sim_task import SimTask
from experiments.suites.base import SuiteOptions
from hat_jax.eval.runner import EvalCase, agent_rollout
from hat_jax.harness import Harness, Trajectory
from sim.binding import Binding, bind, canonical_mapping
from sim.oracle import Case, OraclePolicy
from sim.rewards import JUDGED

METRICS = JUDGED  # success, accuracy, effectiveness, tool_rationality, skill_sel.
GROUP_BY = ("intent", "lang")
MAX_DRAWS = 20  # redraws of an HSA spec that does not apply to the harness


TASK = SimTask()


def sim_case(
    case_id: str,
    case: Case,
    binding: Binding,
    *,
    tags: Mapping[str, str] | None = None,
    info: Mapping[str, Any] | None = None,
) -> EvalCase:
    """One simulator case as an eval case (module docstring)."""
    msg, snap = case.message, case.snapshot
    record = {
        "sim_case": case.case_id,
        "message": msg.text,
        "viewer_message": dataclasses.asdict(msg),
        "room_id": snap.room_id,
        "catalog_id": snap.catalog.catalog_id,
        "split": snap.catalog.split,
        "clock": snap.clock,
        "room_context": snap.context(),
        "fault_plan": list(case.fault_plan),
        **(info or {}),
    }
    tc = TASK.bound(case, binding)
    return EvalCase(
        case_id,
        request=tc.request,
        tags={**tc.tags, **(tags or {})},
        input=record,
        payload=tc,
    )


def judge_sim(batch: Sequence[EvalCase], trajs: Sequence[Trajectory]) -> list:
    """The task's judges of each case (success and the four rewards)."""
    return [TASK.judge(c.payload, t) for c, t in zip(batch, trajs, strict=True)]


def oracle_for(batch: Sequence[EvalCase]) -> OraclePolicy:
    """The oracle teacher for a batch (it finds each case by its conversation)."""
    return OraclePolicy(
        [case_of(c) for c in batch], [binding_of(c) for c in batch], reasoning=False
    )


def case_of(c: EvalCase) -> Case:
    """The simulator case of a suite's eval case."""
    return c.payload.payload[0]


def binding_of(c: EvalCase) -> Binding:
    """The binding (harness and simulator mapping) a suite's case runs under."""
    return c.payload.payload[1]


def sim_rollout(opts: SuiteOptions):
    """The agent loop with the simulator's tool sandbox (no random faults)."""
    return agent_rollout(
        TASK.backend(seed=int(opts.seed), fault_rate=0.0, compact=opts.compact_results)
    )


def variant_binding(
    base: Harness, spec_for, rng: np.random.Generator
) -> tuple[Binding, str]:
    """A binding of ``base`` under an HSA spec drawn by ``spec_for(rng)``.

    The variant is bound through ``canonical_mapping(base).compose(mapping)``
    (as in RL rollouts). A spec that does not apply is drawn again.

    Returns:
      (binding, the spec applied).
    """
    errors = []
    for _ in range(MAX_DRAWS):
        spec = spec_for(rng)
        try:
            h2, _, m = apply_spec(base, None, spec, int(rng.integers(2**31)))
        except ValueError as e:
            errors.append(f"{spec}: {e}")
            continue
        return bind(h2, canonical_mapping(base).compose(m)), spec
    raise ValueError(f"no HSA spec applies to {base.id}: {errors[-3:]}")
