"""The harness-edit test: the same cases before and after a harness edit.

As the paper describes it: 1,500 traffic cases, 500 from the dev split and
1,000 from the test split (question ``i`` is a dev case when ``i % 3 == 0``),
each answered under the harness before the edit (``taolive_v1``) and after it
(``taolive_d12``: v1 edited for the Double 12 campaign, with the campaign rule
and skill and a compliance hook, nothing renamed; ``--edit-harnesses`` takes
any two).

The rooms run Double 12 (``RoomSnapshot.campaign``) on both sides, and the
judge asks every price or order answer to state the campaign's cross-shop
discount (``sim/judge_rules.py``). v1 knows nothing of the campaign, so a
model that follows v1 exactly misses it on those questions; the edit tells it
what to do, and the tools return the discount under it. A model that follows
its harness therefore makes fewer errors after the edit; one that memorised v1
makes the same errors (``tests/experiments/test_gaming.py``).
Both answers of a question are adjacent cases (``edit-00007-before``,
``edit-00007-after``), so ``--limit n`` runs ``n`` questions, ``2n`` cases.

A case is an error when it is not a success (error = 1 - success: accurate,
fully effective and within the harness's playbook; ``sim/judge_success.py``).
The summary reports the error rate before and after the edit and the relative
error reduction ``(before - after) / before`` (the paper: 51.7 % for the HAT
model, 18.1 % for naive SFT), with paired bootstrap intervals over questions,
overall and per split.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Sequence
from pathlib import Path

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
from hat_jax.eval.stats import error_reduction
from sim.binding import bind
from sim.datasets import make_cases
from sim.rewards import SUCCESS

SEED_OFFSET = 404
SIZE = 1500  # questions: 500 dev + 1,000 test
DEV_EVERY = 3
SIDES = ("before", "after")


def split_index(i: int) -> tuple[str, int]:
    """Question ``i`` -> (split, index in that split's cases)."""
    q, r = divmod(i, DEV_EVERY)
    return ("dev", q) if r == 0 else ("test", q * (DEV_EVERY - 1) + r - 1)


def build(opts: SuiteOptions, n: int) -> list[EvalCase]:
    """The cases of the first ``n`` questions (two per question)."""
    seed = dataset_seed(opts, SEED_OFFSET)
    where = [split_index(i) for i in range(n)]
    pools = {
        split: make_cases(split, seed, sum(s == split for s, _ in where))
        for split in ("dev", "test")
    }
    bindings = [bind(opts.load(h)) for h in opts.edit]
    out = []
    for i, (split, j) in enumerate(where):
        case = pools[split][j]
        for side, binding, name in zip(SIDES, bindings, opts.edit):
            snap = dataclasses.replace(
                case.snapshot, harness_version=Path(name).name, campaign=True
            )
            out.append(
                sim_case(
                    f"edit-{i:05d}-{side}",
                    dataclasses.replace(case, snapshot=snap),
                    binding,
                    tags={"edit": side, "split": split, "question": f"q{i:05d}"},
                    info={"edit": side, "edit_harness": name},
                )
            )
    return out


def extra(records: Sequence[dict]) -> dict:
    """Error rates before/after and the error reduction, overall and per split
    (complete questions only)."""
    pairs: dict[str, dict[str, float]] = collections.defaultdict(dict)
    split: dict[str, str] = {}
    for r in records:
        q = r["tags"]["question"]
        pairs[q][r["tags"]["edit"]] = 1.0 - r["scores"][SUCCESS]
        split[q] = r["tags"]["split"]
    full = [q for q in sorted(pairs) if len(pairs[q]) == len(SIDES)]

    def reduction(qs: list[str]) -> dict:
        return error_reduction(
            [pairs[q]["before"] for q in qs], [pairs[q]["after"] for q in qs]
        )

    out = {"error": reduction(full)}
    for s in ("dev", "test"):
        out[f"error_{s}"] = reduction([q for q in full if split[q] == s])
    return out


SUITE = register_suite(
    Suite(
        name="edit",
        title="Harness-edit test",
        size=SIZE,
        build=build,
        rollout=sim_rollout,
        judge=judge_sim,
        metrics=METRICS,
        group_by=("edit", "split", *GROUP_BY),
        reference=oracle_for,
        extra=extra,
        cases_per_unit=len(SIDES),
    )
)
