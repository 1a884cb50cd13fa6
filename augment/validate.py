"""Task preservation, checked: replay an augmented gold trajectory against its
augmented harness and compare it with the original.

``validate_augmented`` returns a list of problems (empty: the task is
preserved). It checks that

- the augmented harness is well formed (names, schemas, skill references);
- every tool call is valid under the new schema (the ``tool_args`` hook's
  JSON-Schema check, closed objects), renders and parses back exactly in the
  harness's tool-call format, and maps back (``mapping.inverse_call``) to the
  original call, in order; ``mapping.forward_call`` of the original gives it;
- every ``load_skill`` names an existing skill whose mapped-back name is the
  original's, and its result is the new skill's body;
- other tool results are unchanged (a fault's text names the new tool, a
  rejected call gets the new schema's feedback and is still rejected);
- every input, pre-reply and reply hook of the augmented harness passes on the
  gold reply (with the skills and tool results of the augmented trajectory);
- the reply keeps its facts: every number and quoted tool-result value;
- the turn fits the new turn limit, and the system prompt is the new one.
"""

from __future__ import annotations

from augment.facts import failing_hooks, missing_facts, tool_results
from augment.ops import carried_result, gold_calls
from hat_jax.harness.hooks import run_hooks, validate_json
from hat_jax.harness.json_schema import NAME_RE, check_schema
from hat_jax.harness.loader import skill_references, tool_references
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.harness.trajectory import HookContext, Trajectory
from hat_jax.text.toolcall import ToolCall, parse_reply, render_tool_calls


def harness_problems(h: Harness) -> list[str]:
    """What ``load_harness`` would reject about names, schemas and references."""
    out = []
    tools = [t.name for t in h.tools]
    skills = [s.name for s in h.skills]
    for what, names in (("tool", tools), ("skill", skills)):
        for n in names:
            if not NAME_RE.fullmatch(n):
                out.append(f"{what} name {n!r} is not a valid name")
        if len(set(names)) != len(names):
            out.append(f"duplicate {what} names: {names}")
    if LOAD_SKILL in tools:
        out.append("a tool is called load_skill")
    for t in h.tools:
        out += [
            f"tool {t.name}: {'.'.join(map(str, p))}: {m}"
            for p, m in check_schema(t.parameters, ("parameters",))
        ]
    for s in h.skills:
        for ref, _, _ in tool_references(s.body):
            if ref not in tools and ref != LOAD_SKILL:
                out.append(f"skill {s.name} names unknown tool {ref!r}")
        for ref, _, _ in skill_references(s.body):
            if ref not in skills:
                out.append(f"skill {s.name} loads unknown skill {ref!r}")
        if "\n" in s.description:
            out.append(f"skill {s.name}: description is not one line")
    for name in ("skill_index", "tool_list"):
        if name not in h.layout.order:
            out.append(f"prompt order lacks {name}")
    return out


def _call_problems(h: Harness, call: ToolCall, traj: Trajectory) -> list[str]:
    if call.name == LOAD_SKILL:
        name = call.arguments.get("name")
        return [] if h.skill(name) else [f"load_skill names unknown skill {name!r}"]
    tool = h.tool(call.name)
    if tool is None:
        return [f"unknown tool {call.name!r}"]
    out = validate_json(call.arguments, tool.parameters, closed=True)
    ctx = HookContext(h, "tool_args", traj.user_message, tool_call=call)
    for spec, res in run_hooks(h, "tool_args", ctx):
        if not res.passed:
            out.append(f"hook {spec.name}: {res.feedback}")
    parsed = parse_reply(
        render_tool_calls([call], h.tool_call_format),
        h.tool_call_format,
        tools=h.tool_specs(),
    )
    if parsed.errors or parsed.tool_calls != [call]:
        kinds = [e.kind for e in parsed.errors]
        out.append(f"does not read back in {h.tool_call_format} ({kinds})")
    return out


def validate_augmented(
    orig_harness: Harness,
    orig_traj: Trajectory,
    aug_harness: Harness,
    aug_traj: Trajectory,
    mapping: Mapping,
) -> list[str]:
    """Problems that show the augmented gold no longer solves the task."""
    out = harness_problems(aug_harness)
    oc, ac = gold_calls(orig_traj), gold_calls(aug_traj)
    if len(oc) != len(ac):
        out.append(f"{len(ac)} tool calls, the original has {len(oc)}")
    rejected = [ex.fault == "rejected" for ex in orig_traj.tool_calls]
    for i, (o, a) in enumerate(zip(oc, ac)):
        where = f"call {i + 1} ({a.name})"
        if mapping.inverse_call(a) != o:
            out.append(f"{where}: maps back to {mapping.inverse_call(a)}, not {o}")
        if mapping.forward_call(o) != a:
            out.append(f"{where}: is not the forward map of {o}")
        if a.name == LOAD_SKILL and mapping.inverse_skill(a.arguments.get("name")) != (
            o.arguments.get("name")
        ):
            out.append(f"{where}: skill does not map back to {o.arguments}")
        if not (i < len(rejected) and rejected[i]):
            out += [f"{where}: {p}" for p in _call_problems(aug_harness, a, aug_traj)]
    out += _result_problems(orig_traj, aug_traj, orig_harness, aug_harness, mapping)
    if orig_traj.status == "ok" and aug_traj.reply is not None:
        out += [f"hook {p}" for p in failing_hooks(aug_harness, aug_traj)]
        lost = missing_facts(orig_traj.reply, aug_traj.reply, tool_results(orig_traj))
        out += [f"reply lost {f}" for f in lost]
    elif (orig_traj.reply is None) != (aug_traj.reply is None):
        out.append("the reply appeared or disappeared")
    calls = sum(m.get("role") == "assistant" for m in aug_traj.messages)
    if orig_traj.status == "ok" and calls > aug_harness.turn_limit:
        out.append(f"{calls} model calls exceed turn_limit {aug_harness.turn_limit}")
    if "room_context" in aug_traj.meta and aug_traj.messages:
        want = render_system_prompt(aug_harness, aug_traj.meta["room_context"])
        if aug_traj.messages[0].get("content") != want:
            out.append("the system prompt is not the augmented harness's")
    if aug_traj.harness_id != aug_harness.id:
        out.append(f"harness_id {aug_traj.harness_id!r} is not {aug_harness.id!r}")
    return out


def _result_problems(
    orig: Trajectory, aug: Trajectory, h0: Harness, h: Harness, m: Mapping
) -> list[str]:
    out = []
    if len(orig.tool_calls) != len(aug.tool_calls):
        return [f"{len(aug.tool_calls)} tool exchanges, not {len(orig.tool_calls)}"]
    for i, (o, a) in enumerate(zip(orig.tool_calls, aug.tool_calls)):
        where = f"exchange {i + 1} ({a.name})"
        call = ToolCall(a.name, a.arguments)
        if (o.ok, o.fault) != (a.ok, a.fault):
            out.append(f"{where}: status changed")
        if o.fault == "rejected" and not _call_problems(h, call, aug):
            out.append(f"{where}: a call the original rejected is accepted now")
        if a.name == LOAD_SKILL and o.ok:
            skill = h.skill(a.arguments.get("name"))
            if skill is None or a.result != skill.body:
                out.append(f"{where}: load_skill result is not the skill body")
        elif a.result != carried_result(o, call, orig.user_message, h0, h, m):
            out.append(f"{where}: tool result changed")
    a_msgs = [x.get("content") for x in aug.messages if x.get("role") == "tool"]
    if len(a_msgs) == len(aug.tool_calls) != 0:
        if [r.result for r in aug.tool_calls] != a_msgs:
            out.append("tool messages disagree with the tool exchanges")
    return out
