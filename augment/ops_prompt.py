"""Prompt-structure ops: section order, section titles, prompt format, and the
tool-call format the harness teaches."""

from __future__ import annotations

import dataclasses

from augment.ops import finish, pick, register_op, subset
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.spec import PROMPT_FORMATS, SECTION_NAMES

TITLES: dict[str, tuple[str, ...]] = {
    "persona": (
        "Persona",
        "Who you are",
        "Your role",
        "Role",
        "About you",
        "Identity",
        "Host profile",
        "Character",
        "角色设定",
        "你的身份",
    ),
    "room_context": (
        "Room context",
        "The live room now",
        "Live room status",
        "Current stream",
        "Room state",
        "On screen now",
        "Stream context",
        "直播间信息",
        "当前直播间",
    ),
    "rules": (
        "Rules",
        "House rules",
        "Guidelines",
        "Operating rules",
        "Ground rules",
        "Policies",
        "Do's and don'ts",
        "规则",
        "直播规范",
    ),
    "skill_index": (
        "Skills",
        "Skill index",
        "Available skills",
        "Skill catalogue",
        "Playbooks",
        "Skill library",
        "技能列表",
        "可用技能",
    ),
    "tool_list": (
        "Tools",
        "Available tools",
        "Functions",
        "Function list",
        "Tool registry",
        "APIs you can call",
        "工具",
        "可用工具",
    ),
    "constraints": (
        "Constraints",
        "Reply constraints",
        "Limits",
        "Output requirements",
        "Reply rules",
        "Hard limits",
        "回复要求",
        "输出限制",
    ),
}
CASES = ("as_is", "as_is", "lower", "title")


def _case(title: str, case: str) -> str:
    if case == "lower":
        return title.lower()
    if case == "title":
        return " ".join(w[:1].upper() + w[1:] for w in title.split(" "))
    return title


@register_op("reorder_sections", "prompt")
def reorder_sections(h, traj, rng, *, persona_first=False):
    """Shuffle the order of the system-prompt sections."""
    order = list(h.layout.order)
    for _ in range(16):
        new = [order[i] for i in rng.permutation(len(order))]
        if persona_first and "persona" in new:
            new.remove("persona")
            new.insert(0, "persona")
        if new != order or len(order) < 2:
            break
    layout = dataclasses.replace(h.layout, order=tuple(new))
    h2 = h.replace(layout=layout)
    params = {"persona_first": persona_first or None}
    return finish("reorder_sections", params, h, traj, h2, Mapping.identity(h))


@register_op("retitle_sections", "prompt", ranges={"frac": (0.0, 1.0)})
def retitle_sections(h, traj, rng, *, frac=1.0):
    """Give sections other titles (English or Chinese, several casings)."""
    titles = dict(h.layout.titles)
    case = pick(rng, CASES)
    for name in subset(rng, [s for s in SECTION_NAMES if s in h.layout.order], frac):
        old = titles.get(name)
        pool = [t for t in TITLES[name] if _case(t, case) != old]
        titles[name] = _case(pick(rng, pool), case)
    h2 = h.replace(layout=dataclasses.replace(h.layout, titles=titles))
    return finish("retitle_sections", {"frac": frac}, h, traj, h2, Mapping.identity(h))


@register_op("format", "prompt", choices={"fmt": ("", *PROMPT_FORMATS)})
def prompt_format(h, traj, rng, *, fmt=""):
    """Render the prompt as Markdown, XML-tagged, plain or compact sections."""
    new = fmt or pick(rng, [f for f in PROMPT_FORMATS if f != h.layout.format])
    h2 = h.replace(layout=dataclasses.replace(h.layout, format=new))
    return finish("format", {"fmt": new}, h, traj, h2, Mapping.identity(h))


@register_op("call_format", "prompt", choices={"fmt": ("", "qwen_xml", "hermes")})
def call_format(h, traj, rng, *, fmt=""):
    """Switch the tool-call format the prompt teaches (qwen_xml or hermes)."""
    new = fmt or ("hermes" if h.tool_call_format == "qwen_xml" else "qwen_xml")
    h2 = h.replace(tool_call_format=new)
    return finish("call_format", {"fmt": new}, h, traj, h2, Mapping.identity(h))
