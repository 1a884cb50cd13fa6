"""The agent-task protocol: the environment RL trains in and the eval suites score.

A task hands out cases for a split and seed, binds a case to a harness (the base
one, or an HSA variant it draws), runs the agent's tool calls in its backend and
scores a finished trajectory with named rewards:

    task = load_task("sim")                     # a `hat.tasks` entry point
    pool = task.cases("train", seed=0, n=64)     # the task's own case objects
    tc = task.bind(case, harness)                # -> TaskCase; hsa_family=, rng=:
                                                 #    an HSA variant drawn from rng
    backend = task.backend(seed=0, fault_rate=0.0, compact=False)
    trajs = run_turns(harness, [tc.request], policy, backend, seed=1)
    task.rewards(tc, trajs[0])                   # {"success": 1.0, "accuracy": ...}
    task.judge(tc, trajs[0])                     # the same, verdicts with rationales
    task.shape(rewards, "gate_success")          # RL's training rewards

RL (`hat_jax.train.rl_run`) and the simulator's eval suites
(`experiments/suites/simcases.py`) use it; the simulator implements it
(`experiments.sim_task.SimTask`, entry point `sim`).
hat_jax itself knows no task: packages above it declare theirs in the
`hat.tasks` entry-point group (setup.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from hat_jax.harness import Harness, Trajectory
from hat_jax.harness.backend import ToolBackend

__all__ = ["TASK_GROUP", "AgentTask", "TaskCase", "load_task", "task_names"]

TASK_GROUP = "hat.tasks"


@dataclasses.dataclass(frozen=True)
class TaskCase:
    """One case bound to one harness: what the agent loop and the rewards need.

    Attributes:
      case_id: the task's id of the case.
      request: the agent loop's request (`hat_jax.harness.TurnRequest`; it
        carries the bound harness).
      harness: the harness the case runs under (the base or a variant).
      payload: the task's own data for its rewards (opaque here).
      spec: the HSA spec of a variant harness, None under the base.
      tags: labels for summaries (e.g. intent, language).
    """

    case_id: str
    request: Any
    harness: Harness
    payload: Any = None
    spec: str | None = None
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)


class AgentTask(Protocol):
    """An environment for agent RL and evaluation (module docstring)."""

    headline: str  # the reward that is the headline metric (e.g. "success")

    def cases(self, split: str, seed: int, n: int) -> Sequence[Any]:
        """`n` cases of `split`, a function of (split, seed, n) only."""
        ...

    def bind(
        self, case: Any, harness: Harness, *, hsa_family: str | None = None, rng=None
    ) -> TaskCase:
        """`case` under `harness`, or under an HSA variant of it drawn from
        `rng` (a numpy Generator) when `hsa_family` is given; a variant that
        does not apply falls back to `harness` (`TaskCase.spec` None)."""
        ...

    def backend(self, *, seed: int, fault_rate: float, compact: bool) -> ToolBackend:
        """The tool sandbox the agent's calls run in."""
        ...

    def judge(self, case: TaskCase, trajectory: Trajectory) -> dict[str, Any]:
        """The judges' verdicts of a finished turn, by reward name: each has a
        `value` (float) and a `rationale` (str), as the eval records keep."""
        ...

    def rewards(self, case: TaskCase, trajectory: Trajectory) -> dict[str, float]:
        """The named rewards of a finished turn (the verdicts' values);
        `headline` among them."""
        ...

    def shape(self, rewards: dict[str, float], name: str) -> dict[str, float]:
        """Training rewards: `rewards` through the shaping `name` ("none" =
        as judged). Raises ValueError naming the known shapings."""
        ...


def task_names() -> list[str]:
    """The tasks this install declares."""
    return sorted({ep.name for ep in entry_points(group=TASK_GROUP)})


def load_task(name: str) -> AgentTask:
    """The task `name` of the `hat.tasks` entry points, built without arguments.

    Raises:
      ValueError: no such task (the known ones listed), or its module failed to
        import (the error's type and message).
    """
    from hat_jax.cli.plugins import load_object, reason

    found = {ep.name: ep.value for ep in entry_points(group=TASK_GROUP)}
    if name not in found:
        raise ValueError(f"unknown agent task {name!r}; have {sorted(found)}")
    try:
        return load_object(found[name])()
    except Exception as e:  # a broken plugin: say which and why
        raise ValueError(f"agent task {name!r} ({found[name]}): {reason(e)}") from e
