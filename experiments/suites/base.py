"""What a suite is, and the registry the eval command picks suites from by name.

A :class:`Suite` builds its first ``n`` units deterministically from
(``SuiteOptions.seed``, index), so ``--limit`` takes a prefix and a resumed run
sees the same cases; it says how its cases are rolled out (agent loop with the
simulator's tools, or plain chat), judged and summarised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hat_jax.eval.runner import EvalCase, Judge, PolicyFor, Rollout
from hat_jax.harness import Harness, load_harness
from hat_jax.registry import Registry

# suite-specific summary measures from the suite's records (in case order)
Extra = Callable[[Sequence[dict[str, Any]]], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    """What every suite is built from.

    Attributes:
      harness: the base harness (``--harness``; default ``taolive_v1``).
      seed: the eval seed; each suite derives its own dataset seed from it.
      edit: the (before, after) harness names or folders of the edit test.
      prompt_format: every harness's prompt in this format (None: their own;
        the tiny world uses "compact"); ``harness`` is already in it.
      compact_results: tools return only the fields a reply needs
        (``sim.tools_compact``).
    """

    harness: Harness
    seed: int = 0
    edit: tuple[str, str] = ("taolive_v1", "taolive_d12")
    prompt_format: str | None = None
    compact_results: bool = False

    def load(self, name: str) -> Harness:
        """Harness ``name`` (a builtin or folder) as the suites present it."""
        return load_harness(name).in_format(self.prompt_format)


@dataclasses.dataclass(frozen=True)
class Suite:
    """One evaluation set.

    Attributes:
      name: the ``--suite`` name.
      title: its name in summaries.
      size: full-size units (cases; questions for the edit test).
      build: ``(opts, n) -> cases`` of the first ``n`` units, in order.
      cases_per_unit: eval cases per unit (2 in the edit test: before, after).
      weights: metric -> the score weighting it per case (a weighted mean).
      rollout: ``opts -> Rollout`` (agent loop with a tool backend, or chat).
      judge: per-batch judge (``hat_jax.eval.runner.Judge``).
      metrics: the score names the summary reports.
      group_by: the tags the summary breaks results down by.
      reference: ``policy_for`` of a reference policy (the oracle), if any.
      extra: suite-specific summary measures.
    """

    name: str
    title: str
    size: int
    build: Callable[[SuiteOptions, int], list[EvalCase]]
    rollout: Callable[[SuiteOptions], Rollout]
    judge: Judge
    metrics: tuple[str, ...]
    group_by: tuple[str, ...] = ()
    reference: PolicyFor | None = None
    extra: Extra | None = None
    cases_per_unit: int = 1
    weights: Mapping[str, str] = dataclasses.field(default_factory=dict)


SUITES: Registry[Suite] = Registry("suite")


def register_suite(suite: Suite) -> Suite:
    return SUITES.add(suite.name, suite)


def get_suite(name: str) -> Suite:
    return SUITES.lookup(name)


def dataset_seed(opts: SuiteOptions, offset: int) -> int:
    """A suite's simulator seed: distinct rooms per suite and per eval seed."""
    return 1000 * int(opts.seed) + offset
