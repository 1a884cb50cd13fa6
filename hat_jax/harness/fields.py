"""Field checks of harness files: the manifest's keys and values, and the
helpers ``loader`` checks skill front matter and tool specs with.

Each check appends ``path:line: what was expected`` to the file's :class:`Doc`;
none raises. Integers are integers (never a boolean, a float or YAML's ``1:30``)
within bounds: ``turn_limit`` 1..``MAX_TURN_LIMIT``, ``retry_limit``
0..``MAX_RETRY_LIMIT``; hook parameters are checked by the hook registry
(``hooks.hook_param_errors``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from hat_jax.harness import hooks as hooks_mod
from hat_jax.harness.json_schema import NAME_RE, describe, listed
from hat_jax.harness.sourcemap import Doc, Key
from hat_jax.harness.spec import PROMPT_FORMATS, SECTION_NAMES
from hat_jax.text.toolcall import get_format

# Model calls in one agent turn, and retries after a failed hook: a live reply
# takes a handful of each; a bigger number is a typo, not a plan.
MAX_TURN_LIMIT = 100
MAX_RETRY_LIMIT = 20
_MANIFEST_KEYS = {  # key -> required
    "name": True,
    "version": True,
    "persona": True,
    "rules": False,
    "constraints": False,
    "prompt": True,
    "turn_limit": True,
    "retry_limit": True,
    "tool_call_format": False,
    "hooks": False,
}
_NEEDED_SECTIONS = ("skill_index", "tool_list")  # the agent cannot work without them


def unknown(what: str, value: Any, choices: Any) -> str:
    """The message for a value that is not one of ``choices``."""
    return f"unknown {what} {describe(value)}; expected one of {listed(choices)}"


def check_keys(
    doc: Doc, data: dict, path: Key, keys: Mapping[str, bool], what: str
) -> None:
    """Reports keys not in ``keys`` and required ones (``keys[k]`` true) missing."""
    for k in data:
        if k not in keys:
            doc.err((*path, k), unknown(f"key in {what}:", k, keys))
    for k, required in keys.items():
        if required and k not in data:
            doc.err(path, f"missing key {k!r} in {what}")


def text_field(doc: Doc, data: dict, key: str, path: Key = (), one_line=True, hint=""):
    """``data[key]`` if it is a non-empty string (one line if asked), else None."""
    if key not in data:
        return None
    value, where = data[key], (*path, key)
    if not isinstance(value, str) or not value.strip():
        hint = hint if not isinstance(value, str) else ""
        doc.err(
            where, f"{key}: expected a non-empty string, got {describe(value)}{hint}"
        )
    elif one_line and "\n" in value:
        doc.err(where, f"{key}: expected one line of text, got a line break")
    elif (bad := _control(value)) is not None:
        doc.err(where, f"{key}: holds the control character {bad!r}")
    else:
        return value
    return None


def _control(text: str) -> str | None:
    """The first control character in ``text`` other than a line break or a tab
    (an ESC would reach terminals and prompts alike), or None."""
    return next(
        (c for c in text if unicodedata.category(c) == "Cc" and c not in "\n\t"),
        None,
    )


def name_field(doc: Doc, data: dict, key: str, what: str) -> str | None:
    """``data[key]`` if it is a name (``NAME_RE``), else None."""
    value = text_field(doc, data, key)
    if value is not None and not NAME_RE.fullmatch(value):
        doc.err((key,), f"{what} {describe(value)}: expected letters, digits, _ . -")
        return None
    return value


def _text_list(doc: Doc, data: dict, key: str) -> None:
    value = data.get(key, [])
    if not isinstance(value, list):
        doc.err((key,), f"{key}: expected a list of strings, got {describe(value)}")
        return
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or "\n" in item:
            doc.err((key, i), f"{key}[{i}]: expected one line, got {describe(item)}")
        elif (bad := _control(item)) is not None:
            doc.err((key, i), f"{key}[{i}]: holds the control character {bad!r}")


def _count(doc: Doc, data: dict, key: str, least: int, most: int) -> None:
    """``data[key]``, when given, is an integer in ``least..most``."""
    value = data.get(key)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if key in data and not (is_int and least <= value <= most):
        digits = isinstance(value, str) and value[:1] in tuple("+-0123456789")
        hint = " (write it in decimal digits)" if digits else ""
        doc.err(
            (key,),
            f"{key}: expected an integer {least}..{most}, got {describe(value)}{hint}",
        )


def check_manifest(doc: Doc, data: Any) -> None:
    """Reports every problem of a parsed ``manifest.yaml``."""
    if not isinstance(data, dict):
        doc.err((), f"expected a mapping with keys {list(_MANIFEST_KEYS)}")
        return
    check_keys(doc, data, (), _MANIFEST_KEYS, "the manifest")
    text_field(doc, data, "name")
    text_field(doc, data, "version", hint=' (quote it: version: "1.0")')
    text_field(doc, data, "persona", one_line=False)
    _text_list(doc, data, "rules")
    _text_list(doc, data, "constraints")
    _count(doc, data, "turn_limit", 1, MAX_TURN_LIMIT)
    _count(doc, data, "retry_limit", 0, MAX_RETRY_LIMIT)
    fmt = data.get("tool_call_format", "qwen_xml")
    try:
        if not isinstance(fmt, str):
            raise ValueError(f"expected a format name, got {describe(fmt)}")
        get_format(fmt)
    except ValueError as e:
        doc.err(("tool_call_format",), f"tool_call_format: {e}")
    if "prompt" in data:
        _check_prompt(doc, data["prompt"])
    _check_hooks(doc, data.get("hooks", []))


def _check_prompt(doc: Doc, prompt: Any) -> None:
    p = ("prompt",)
    if not isinstance(prompt, dict):
        doc.err(
            p,
            f"prompt: expected a mapping (order, format, titles): {describe(prompt)}",
        )
        return
    check_keys(
        doc, prompt, p, {"order": True, "format": True, "titles": False}, "prompt"
    )
    order = prompt.get("order", list(SECTION_NAMES))
    if not isinstance(order, list) or not order:
        doc.err((*p, "order"), f"prompt.order: expected a list from {SECTION_NAMES}")
        order = list(_NEEDED_SECTIONS)
    seen = set()
    for i, s in enumerate(order):
        if s not in SECTION_NAMES:
            doc.err((*p, "order", i), unknown("section", s, SECTION_NAMES))
        elif s in seen:
            doc.err((*p, "order", i), f"section {s!r} is listed twice")
        else:
            seen.add(s)
    for s in _NEEDED_SECTIONS:
        if s not in order:
            doc.err((*p, "order"), f"prompt.order: expected {s!r} (the agent needs it)")
    if "format" in prompt and prompt["format"] not in PROMPT_FORMATS:
        doc.err(
            (*p, "format"), unknown("prompt format", prompt["format"], PROMPT_FORMATS)
        )
    titles = prompt.get("titles", {})
    if not isinstance(titles, dict):
        doc.err(
            (*p, "titles"), f"prompt.titles: expected a mapping, got {describe(titles)}"
        )
        return
    for s in titles:
        if s not in SECTION_NAMES:
            doc.err((*p, "titles", s), unknown("section", s, SECTION_NAMES))
        else:
            text_field(doc, titles, s, (*p, "titles"))


def _check_hooks(doc: Doc, hooks: Any) -> None:
    if not isinstance(hooks, list):
        doc.err(
            ("hooks",),
            f"hooks: expected a list of {{name, params}}, got {describe(hooks)}",
        )
        return
    names = set()
    for i, h in enumerate(hooks):
        at = ("hooks", i)
        if not isinstance(h, dict):
            doc.err(
                at, f"hooks[{i}]: expected a mapping (name, params), got {describe(h)}"
            )
            continue
        check_keys(doc, h, at, {"name": True, "params": False}, f"hooks[{i}]")
        name = h.get("name")
        if "name" not in h:
            continue
        if name not in hooks_mod.hook_names():
            doc.err((*at, "name"), unknown("hook", name, hooks_mod.hook_names()))
            continue
        if name in names:
            doc.err((*at, "name"), f"hook {name!r} is listed twice")
        names.add(name)
        for key, msg in hooks_mod.hook_param_errors(name, h.get("params", {})):
            doc.err((*at, "params", key) if key else (*at, "params"), msg)
