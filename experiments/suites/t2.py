"""T2 Harness-Variant QA: T1-style cases under held-out HSA variant families.

Case ``i`` is case ``i`` of ``make_cases("test", seed)`` (rooms apart from
T1's) answered under a variant of the base harness: its family is
``HELDOUT_FAMILIES`` in turn (all_identifiers, reshaped_rewritten,
prompt_under_hooks, everything), its spec and augmentation seed are drawn from
``default_rng([dataset seed, i, HSA_STREAM])``, and it is bound through
``canonical_mapping(base).compose(mapping)``, so the judges and the tools follow
the renamed and reshaped harness. No training family produces these
combinations (``augment.families``). 1,000 cases, 250 per family.
"""

from __future__ import annotations

import numpy as np

from augment import HELDOUT_FAMILIES, sample_family_spec
from experiments.suites.base import Suite, SuiteOptions, dataset_seed, register_suite
from experiments.suites.simcases import (
    GROUP_BY,
    METRICS,
    judge_sim,
    oracle_for,
    sim_case,
    sim_rollout,
    variant_binding,
)
from hat_jax.eval.runner import EvalCase
from sim.datasets import make_cases

SPLIT = "test"
SEED_OFFSET = 202
HSA_STREAM = 23  # keeps T2's augmentation draws apart from other seeded uses
SIZE = 1000
FAMILIES = tuple(HELDOUT_FAMILIES)


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The first ``n`` T2 cases."""
    seed = dataset_seed(opts, SEED_OFFSET)
    out = []
    for i, case in enumerate(make_cases(SPLIT, seed, n)):
        family = FAMILIES[i % len(FAMILIES)]
        rng = np.random.default_rng([seed, i, HSA_STREAM])
        binding, spec = variant_binding(
            opts.harness, lambda r, f=family: sample_family_spec(f, r), rng
        )
        out.append(
            sim_case(
                f"t2-{i:05d}",
                case,
                binding,
                tags={"family": family},
                info={"hsa_family": family, "hsa_spec": spec},
            )
        )
    return out


SUITE = register_suite(
    Suite(
        name="t2",
        title="T2 Harness-Variant QA",
        size=SIZE,
        build=build,
        rollout=sim_rollout,
        judge=judge_sim,
        metrics=METRICS,
        group_by=("family", *GROUP_BY),
        reference=oracle_for,
    )
)
