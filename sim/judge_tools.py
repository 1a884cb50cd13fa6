"""Rule-judged Tool Rationality and Skill Selection.

Calls are read in the harness in force and mapped back to canonical
(taolive_v1) names, roles and arguments through ``binding.mapping``, so a
correct turn scores the same under any harness (``query_item(item.link_id=3)``
under taolive_v2 is ``get_product_info_by_link_id(link_id=3)``).

Tool rationality (0..1) = clip(1 - penalties), one penalty per offence:
  MISSING_ROLE       0.5   a role ``needed_roles(msg)`` asks for has no valid call
                           with the playbook's link (``sim.binding.role_arguments``);
                           a call that hit an injected fault still counts
  HALLUCINATED_TOOL  0.5   a call to a name the harness does not have
  INVALID_CALL       0.25  a rejected call (``fault`` in ``INVALID_FAULTS``) or
                           arguments failing the tool's schema (and strictness)
  REDUNDANT_CALL     0.25  the identical call (name and arguments) again after it
                           succeeded; a retry after a fault is not redundant
  DISTRACTOR_CALL    0.25  a harness tool that serves no playbook role
Skill selection (0..1):
  0 when the reply skill (``binding.reply_skill(msg)``) was not loaded; else 1,
  or 0.5 when the strategy skill applies (``sim.binding.strategy_skill``: price
  or purchase on a link with a coupon or running flash sale; campaign_double12
  where the harness has it) and was not loaded; then minus UNRELATED_REPLY_SKILL
  per other reply skill loaded (a multi-intent's second part's reply skill is
  related), clipped to [0, 1]. Strategy skills loaded beyond need are free.
"""

from __future__ import annotations

from hat_jax.harness import LOAD_SKILL, Trajectory, load_skill_tool, validate_json
from hat_jax.harness import resolve_params as hook_params
from sim import judge_facts as jf
from sim.binding import Binding, role_arguments, strategy_skill
from sim.rewards import Score, clip01, register_reward
from sim.types import RoomSnapshot, ViewerMessage, needed_roles

MISSING_ROLE = 0.5
HALLUCINATED_TOOL = 0.5
INVALID_CALL = 0.25
REDUNDANT_CALL = 0.25
DISTRACTOR_CALL = 0.25
UNRELATED_REPLY_SKILL = 0.25
MISSING_STRATEGY_VALUE = 0.5
PENALTY = {  # offence kind (tool_offences) -> its cost
    "missing": MISSING_ROLE,
    "hallucinated": HALLUCINATED_TOOL,
    "invalid": INVALID_CALL,
    "redundant": REDUNDANT_CALL,
    "distractor": DISTRACTOR_CALL,
}
INVALID_FAULTS = ("rejected", "unknown_tool", "unknown_skill", "invalid_arguments")


def schema_errors(name: str, arguments, binding: Binding) -> list[str]:
    """The call's argument problems under the harness's schema (and strictness)."""
    h = binding.harness
    tool = load_skill_tool(h) if name == LOAD_SKILL else h.tool(name)
    if tool is None:
        return [f"no tool {name!r}"]
    if not isinstance(arguments, dict):
        return ["arguments are not an object"]
    spec = h.hook("tool_args")
    strict = hook_params("tool_args", dict(spec.params) if spec else None)["strict"]
    return validate_json(arguments, tool.parameters, closed=strict)


def tool_offences(
    traj: Trajectory, snapshot: RoomSnapshot, msg: ViewerMessage, binding: Binding
) -> list[tuple[str, str]]:
    """Every tool-use offence of the turn as (kind, note), in call order, the
    missing roles last; ``PENALTY[kind]`` is what it costs (module docstring)."""
    h = binding.harness
    known = {t.name for t in h.tools} | {LOAD_SKILL}
    out: list[tuple[str, str]] = []
    covered: set[str] = set()
    succeeded: set[tuple[str, str]] = set()
    for t in traj.tool_calls:
        key = (t.name, jf.dumps(t.arguments))
        if t.name not in known:
            out.append(("hallucinated", f"hallucinated tool {t.name!r}"))
            continue
        errs = schema_errors(t.name, t.arguments, binding)
        if t.fault in INVALID_FAULTS or errs:
            why = t.fault or "; ".join(errs)
            out.append(("invalid", f"invalid call {t.name}: {why}"))
            continue
        if key in succeeded:
            out.append(("redundant", f"redundant repeat of {t.name}({key[1]})"))
        if t.ok:
            succeeded.add(key)
        if t.name == LOAD_SKILL:
            continue
        role = binding.role_of(t.name)
        if role is None:
            out.append(("distractor", f"{t.name} serves no role"))
            continue
        want = role_arguments(role, msg, snapshot).get("link_id")
        got = jf.canonical(t.name, t.arguments, binding).arguments.get("link_id")
        if want is None or got == want:
            covered.add(role)
    for role in needed_roles(msg):
        if role not in covered:
            name = binding.tools.get(role, role)
            out.append(("missing", f"missing {name} ({role})"))
    return out


@register_reward("tool_rationality")
def tool_rationality(
    traj: Trajectory, snapshot: RoomSnapshot, msg: ViewerMessage, binding: Binding
) -> Score:
    """1 minus penalties for missing, hallucinated, invalid, redundant calls."""
    offences = tool_offences(traj, snapshot, msg, binding)
    value = clip01(1.0 - sum(PENALTY[kind] for kind, _ in offences))
    notes = "; ".join(n for _, n in offences)
    return Score(value, notes or "needed tools called, nothing wasted")


@register_reward("skill_selection")
def skill_selection(
    traj: Trajectory, snapshot: RoomSnapshot, msg: ViewerMessage, binding: Binding
) -> Score:
    """The right reply skill, the strategy skill when it applies (docstring)."""
    loaded = jf.loaded_skills(traj)
    want = binding.reply_skill(msg)
    if want not in loaded:
        return Score(0.0, f"reply skill {want!r} not loaded (loaded {loaded})")
    value, notes = 1.0, [f"loaded {want!r}"]
    strategy = strategy_skill(binding, msg, snapshot)
    if strategy is not None and strategy not in loaded:
        value = MISSING_STRATEGY_VALUE
        notes.append(f"strategy skill {strategy!r} not loaded")
    related = {want}
    if msg.intent == "multi_intent" and msg.second_intent in binding.reply_skills:
        related.add(binding.reply_skills[msg.second_intent])
    h = binding.harness
    unrelated = [
        s
        for s in loaded
        if (sk := h.skill(s)) and sk.kind == "reply" and s not in related
    ]
    if unrelated:
        value -= UNRELATED_REPLY_SKILL * len(unrelated)
        notes.append(f"unrelated reply skills {unrelated}")
    return Score(clip01(value), "; ".join(notes))
