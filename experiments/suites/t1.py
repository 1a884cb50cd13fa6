"""T1 Live-Stream QA: viewer messages from simulated rooms, under the harness.

Cases are the first ``n`` of ``sim.datasets.make_cases("test", seed)``: rooms
and catalogs of the test split, whose brands, catalogs, SKUs and rooms no
training split shares, with every intent and both languages in the simulator's
default live-room mix. Each is answered under the base harness (``--harness``)
and judged on accuracy (0 / 1), effectiveness (0 / 0.5 / 1), tool rationality
and skill selection. 2,000 cases.
"""

from __future__ import annotations

from experiments.suites.base import Suite, SuiteOptions, dataset_seed, register_suite
from experiments.suites.simcases import (
    GROUP_BY,
    METRICS,
    judge_sim,
    oracle_for,
    sim_case,
    sim_rollout,
)
from hat_jax.eval.runner import EvalCase
from sim.binding import bind
from sim.datasets import make_cases

SPLIT = "test"
SEED_OFFSET = 101
SIZE = 2000


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The first ``n`` T1 cases."""
    binding = bind(opts.harness)
    cases = make_cases(SPLIT, dataset_seed(opts, SEED_OFFSET), n)
    return [sim_case(f"t1-{i:05d}", c, binding) for i, c in enumerate(cases)]


SUITE = register_suite(
    Suite(
        name="t1",
        title="T1 Live-Stream QA",
        size=SIZE,
        build=build,
        rollout=sim_rollout,
        judge=judge_sim,
        metrics=METRICS,
        group_by=GROUP_BY,
        reference=oracle_for,
    )
)
