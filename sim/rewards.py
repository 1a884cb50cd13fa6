"""The four rewards of HSA-RL, judged by rules: a registry and ``judge_all``.

A reward is a pure function ``(traj, snapshot, msg, binding) -> Score``:

- ``accuracy`` (0 / 1): every fact in the reply agrees with the room
  (``sim/judge_rules.py``);
- ``effectiveness`` (0 / 0.5 / 1): answers what was asked, persuades on
  purchase intent, respects style (``sim/judge_rules.py``);
- ``tool_rationality`` (0..1): needed tools called, no invalid, redundant or
  hallucinated calls (``sim/judge_tools.py``);
- ``skill_selection`` (0..1): the right reply skill, the strategy skill when it
  applies (``sim/judge_tools.py``);

and ``success`` (0 / 1), the headline measure: accurate, fully effective and
within the harness's playbook (``sim/judge_success.py``).

The rubrics and their constants are in those modules' docstrings. The playbook
(which tools and skills a message needs) comes from ``sim.binding``, the same
functions the oracle follows. An LLM judge with the same interface is in
``sim/judge_llm.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hat_jax.harness import Trajectory
from hat_jax.registry import Registry
from sim.binding import Binding
from sim.types import RoomSnapshot, ViewerMessage

REWARDS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection")
SUCCESS = "success"  # the headline: accurate, fully effective, in the playbook
JUDGED = (SUCCESS, *REWARDS)  # what the eval suites and RL rollouts record
BINARY = ("accuracy",)  # 0 / 1
GRADED = ("effectiveness",)  # 0 / 0.5 / 1


@dataclasses.dataclass(frozen=True)
class Score:
    """One reward's value and why."""

    value: float
    rationale: str = ""


Reward = Callable[[Trajectory, RoomSnapshot, ViewerMessage, Binding], Score]
_REWARDS: Registry[Reward] = Registry("reward")


def register_reward(name: str) -> Callable[[Reward], Reward]:
    """Registers a reward function under ``name``."""
    return _REWARDS.register(name)


def get_reward(name: str) -> Reward:
    return _REWARDS.lookup(name)


def reward_names() -> tuple[str, ...]:
    return _REWARDS.names()


def judge_all(
    traj: Trajectory,
    snapshot: RoomSnapshot,
    msg: ViewerMessage,
    binding: Binding,
    names: tuple[str, ...] = JUDGED,
) -> dict[str, Score]:
    """Every named reward (success and the four by default) for one turn."""
    return {n: get_reward(n)(traj, snapshot, msg, binding) for n in names}


def message_of(traj: Trajectory) -> ViewerMessage:
    """The viewer message an oracle/simulator trajectory records in
    ``meta["message"]`` (``dataclasses.asdict`` of a ``ViewerMessage``)."""
    return ViewerMessage(**traj.meta["message"])


def clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


# The rules register themselves on import; they need Score and register_reward.
from sim import judge_rules, judge_success, judge_tools  # noqa: E402, F401
