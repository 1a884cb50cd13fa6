"""The system-prompt pipeline: sections assembled in the harness's order and format.

Sections (``SECTION_NAMES``): persona, room_context (the room state as given),
rules (bullets), skill_index (each skill's name, kind and one-line description;
bodies only enter the chat through ``load_skill``), tool_list (the tools, the
built-in ``load_skill`` first, inside ``<tools></tools>`` one JSON object per
line, then the call-format instructions), constraints (bullets: the manifest's,
then the turn limit and what the hooks enforce, so a hook edit shows in the
prompt). A section with nothing to say (no room context, no rules) is left out.

Formats, each with the layout's titles (or ``DEFAULT_TITLES``):
  markdown  ``## Title`` then the body
  xml       ``<section_name title="Title">`` body ``</section_name>``
  plain     ``TITLE:`` (upper-cased) then the body
  compact   ``# Title`` then a shorter body, for small models: one line per
            skill, one signature line per tool (``check_stock(link_id: int>=1,
            sku?: str) - First sentence.``: ``?`` optional, ``{...}`` nested,
            ``[T]`` arrays, ``"a"|"b"`` enums, ``=v`` defaults, bounds), the
            parameter descriptions left out, then the call format in a few lines

The tool list is part of the system prompt, so callers render the chat with
``render_chat(messages, tools=None)``. Output is a pure function of its inputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from xml.sax.saxutils import escape

from hat_jax.harness.hooks import resolve_params
from hat_jax.harness.spec import LOAD_SKILL, PROMPT_FORMATS, Harness
from hat_jax.text.toolcall import get_format

DEFAULT_TITLES = {
    "persona": "Persona",
    "room_context": "Room context",
    "rules": "Rules",
    "skill_index": "Skills",
    "tool_list": "Tools",
    "constraints": "Constraints",
}
RoomContext = Mapping[str, Any] | str | None


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _persona(h: Harness, room: RoomContext) -> str:
    return h.persona.strip()


def _room_context(h: Harness, room: RoomContext) -> str:
    if room is None:
        return ""
    if isinstance(room, str):
        return room.strip()
    lines = []
    for key, value in room.items():
        text = (
            value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        )
        lines.append(f"{key}: {text}")
    return "\n".join(lines)


def _rules(h: Harness, room: RoomContext) -> str:
    return _bullets(list(h.rules))


def _skill_index(h: Harness, room: RoomContext) -> str:
    kinds = _required_kinds(h)
    must = (
        " Before your final reply, load at least one "
        + " and one ".join(f"{k} skill" for k in kinds)
        + "."
        if kinds
        else ""
    )
    intro = (
        "Each skill holds detailed instructions for one kind of situation. To read "
        f'one, call {LOAD_SKILL} with its name, e.g. {LOAD_SKILL}(name="...").{must}'
    )
    index = [f"{s.name} ({s.kind}): {s.description}" for s in h.skills]
    return f"{intro}\n{_bullets(index)}"


def _tool_list(h: Harness, room: RoomContext) -> str:
    lines = "\n".join(json.dumps(s, ensure_ascii=False) for s in h.tool_specs())
    return (
        "You can call the functions below. Their signatures are listed inside "
        f"<tools></tools>, one JSON object per line:\n<tools>\n{lines}\n</tools>\n\n"
        f"{get_format(h.tool_call_format).instructions}"
    )


def _constraints(h: Harness, room: RoomContext) -> str:
    return _bullets([*h.constraints, *hook_constraints(h)])


# -- compact: one line per skill and per tool ---------------------------------------
_TYPE_NAMES = {"integer": "int", "number": "float", "string": "str", "boolean": "bool"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|(?<=[。！？])")


def first_sentence(text: str) -> str:
    """The first sentence of a description ("e.g. 3" does not end one)."""
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()


def _bounds(node: Mapping[str, Any]) -> str:
    lo, hi = node.get("minimum"), node.get("maximum")
    if lo is not None and hi is not None:
        return f"[{lo}..{hi}]"
    return f">={lo}" if lo is not None else f"<={hi}" if hi is not None else ""


def type_text(node: Any) -> str:
    """A parameter schema as a short type: ``int>=1``, ``{a: str, b?: [int]}``,
    ``"red"|"blue"``, ``str|null``, with ``=default`` when it has one."""
    if not isinstance(node, Mapping):
        return "any"
    if isinstance(node.get("enum"), list) and node["enum"]:
        out = "|".join(json.dumps(v, ensure_ascii=False) for v in node["enum"])
    elif isinstance(node.get("properties"), Mapping) and node["properties"]:
        out = "{" + _fields(node) + "}"
    else:
        types = node.get("type")
        types = types if isinstance(types, list) else [types] if types else ["any"]
        names = []
        for t in types:
            if t == "array":
                names.append(f"[{type_text(node.get('items'))}]")
            else:
                names.append(_TYPE_NAMES.get(t, str(t)) + _bounds(node))
        out = "|".join(names)
    if "default" in node:
        out += "=" + json.dumps(node["default"], ensure_ascii=False)
    return out


def _fields(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required") or ())
    parts = [
        f"{key}{'' if key in required else '?'}: {type_text(sub)}"
        for key, sub in (schema.get("properties") or {}).items()
    ]
    if schema.get("additionalProperties") not in (None, False):
        parts.append("...")
    return ", ".join(parts)


def tool_signature(spec: Mapping[str, Any]) -> str:
    """One tool (an OpenAI ``tools`` entry) as ``name(args) - First sentence.``"""
    fn = spec["function"]
    line = f"{fn['name']}({_fields(fn.get('parameters') or {})})"
    desc = first_sentence(fn.get("description") or "")
    return f"{line} - {desc}" if desc else line


def _compact_skill_index(h: Harness, room: RoomContext) -> str:
    kinds = _required_kinds(h)
    must = "".join(f"; load at least one {k} skill before replying" for k in kinds)
    intro = f"Call {LOAD_SKILL}(name) to read a skill{must}."
    return "\n".join(
        [intro, *(f"{s.name} ({s.kind}): {s.description}" for s in h.skills)]
    )


def _compact_tool_list(h: Harness, room: RoomContext) -> str:
    # load_skill's enum repeats the skill index, so its signature stays short.
    skill = f"{LOAD_SKILL}(name: str) - Load a skill's instructions."
    tools = [tool_signature(t.spec()) for t in h.tools]
    lines = "\n".join(["Functions (arg? is optional):", skill, *tools])
    fmt = get_format(h.tool_call_format)
    return f"{lines}\n\n{fmt.compact_instructions or fmt.instructions}"


_SECTIONS: dict[str, Callable[[Harness, RoomContext], str]] = {
    "persona": _persona,
    "room_context": _room_context,
    "rules": _rules,
    "skill_index": _skill_index,
    "tool_list": _tool_list,
    "constraints": _constraints,
}


# Sections whose compact body differs (the others are short already).
_COMPACT_SECTIONS = {
    "skill_index": _compact_skill_index,
    "tool_list": _compact_tool_list,
}


def _required_kinds(h: Harness) -> list[str]:
    spec = h.hook("require_skill")
    return resolve_params(spec.name, spec.params)["kinds"] if spec else []


def hook_constraints(h: Harness) -> list[str]:
    """Constraint lines derived from the turn limit and the hooks' parameters."""
    out = [f"You have at most {h.turn_limit} model calls for one viewer message."]
    for spec in h.hooks:
        p = resolve_params(spec.name, spec.params)
        if spec.name == "reply_format":
            out.append(f"Keep each reply within {p['max_chars']} characters.")
            if p["no_markdown"]:
                out.append("Write replies as plain spoken text, without Markdown.")
            if p["banned_phrases"]:
                out.append("Never say: " + "; ".join(p["banned_phrases"]) + ".")
            if p["sign_off"]:
                out.append(f"End every reply with {p['sign_off']}.")
        elif spec.name == "factual_risk":
            out.append(
                "Every number in a reply (price, stock, date, discount) must come "
                "from a tool result."
            )
        elif spec.name == "compliance":
            words = [*p["medical_claims"][:3], *p["absolute_claims"][:3]]
            out.append(
                "No medical claims and no absolute superlatives (such as "
                + ", ".join(words)
                + ")."
            )
    return out


def section_title(harness: Harness, name: str) -> str:
    return harness.layout.titles.get(name) or DEFAULT_TITLES[name]


def render_section(harness: Harness, name: str, room_context: RoomContext) -> str:
    """One section's body, without its title ("" when it has nothing to say)."""
    if harness.layout.format == "compact" and name in _COMPACT_SECTIONS:
        return _COMPACT_SECTIONS[name](harness, room_context)
    return _SECTIONS[name](harness, room_context)


def _wrap(fmt: str, name: str, title: str, body: str) -> str:
    if fmt == "markdown":
        return f"## {title}\n\n{body}"
    if fmt == "xml":
        attr = escape(title, {'"': "&quot;"})
        return f'<{name} title="{attr}">\n{body}\n</{name}>'
    if fmt == "compact":
        return f"# {title}\n{body}"
    return f"{title.upper()}:\n{body}"


def render_system_prompt(harness: Harness, room_context: RoomContext = None) -> str:
    """The system prompt for ``harness``, with the room state if given.

    Args:
      harness: sections, order, titles and format come from ``harness.layout``.
      room_context: a mapping (rendered as ``key: value`` lines in its own
        order) or a ready string; None leaves the section out.
    """
    fmt = harness.layout.format
    if fmt not in PROMPT_FORMATS:
        raise ValueError(f"unknown prompt format {fmt!r}; have {PROMPT_FORMATS}")
    parts = []
    for name in harness.layout.order:
        body = render_section(harness, name, room_context)
        if body:
            parts.append(_wrap(fmt, name, section_title(harness, name), body))
    return "\n\n".join(parts)
