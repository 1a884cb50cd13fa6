"""Success: the headline measure of every simulator table and the RL reward.

A case is a success (1) when all of these hold, else 0:

1. accurate: ``accuracy`` is 1 (a reply exists, every number is a room or tool
   fact, no forbidden claim, no obeyed injection, no stale price);
2. fully effective: ``effectiveness`` is 1 (it answers what was asked with the
   asked fact, in the viewer's language, within the harness's reply rules:
   length, no Markdown, the sign-off tag of the reply hook or reply skill);
3. within the harness's playbook: ``skill_selection`` is 1 (the harness's
   reply skill for the message, under its name in force, the strategy skill
   where it applies, no unrelated reply skill), and no needed lookup is missing
   and no call names a tool the harness does not have
   (``sim.judge_tools.tool_offences``). Redundant, invalid-then-retried or
   distractor calls cost tool rationality, not success.

Accuracy alone is the rule judge's "no wrong fact": a reply that says nothing
is accurate. Success is not: a constant or content-free reply fails 2, a reply
with wrong numbers fails 1, and a policy that memorised one harness's names,
skills or reply rules fails 2 or 3 under another (``tests/experiments/
test_gaming.py`` runs such scripted policies through the real suites).
"""

from __future__ import annotations

from hat_jax.harness import Trajectory
from sim.binding import Binding
from sim.judge_rules import accuracy, effectiveness
from sim.judge_tools import skill_selection, tool_offences
from sim.rewards import Score, register_reward
from sim.types import RoomSnapshot, ViewerMessage

PLAYBOOK = ("missing", "hallucinated")  # the tool offences that cost success


def failures(
    traj: Trajectory, snapshot: RoomSnapshot, msg: ViewerMessage, binding: Binding
) -> list[str]:
    """Why the case is not a success (empty when it is)."""
    out = []
    for name, judge in (("accuracy", accuracy), ("effectiveness", effectiveness)):
        s = judge(traj, snapshot, msg, binding)
        if s.value < 1.0:
            out.append(f"{name} {s.value:g}: {s.rationale}")
    s = skill_selection(traj, snapshot, msg, binding)
    if s.value < 1.0:
        out.append(f"skills: {s.rationale}")
    offences = tool_offences(traj, snapshot, msg, binding)
    return out + [f"tools: {note}" for kind, note in offences if kind in PLAYBOOK]


@register_reward("success")
def success(
    traj: Trajectory, snapshot: RoomSnapshot, msg: ViewerMessage, binding: Binding
) -> Score:
    """1 when accurate, fully effective and within the playbook (docstring)."""
    why = failures(traj, snapshot, msg, binding)
    return Score(0.0, "; ".join(why)) if why else Score(1.0, "accurate, effective")
