"""Harness folders: load one, validating everything (``dump.py`` writes one).

A harness folder holds::

  manifest.yaml   name, version, persona, rules, constraints,
                  prompt: {order: [sections], format: markdown|xml|plain|compact,
                           titles: {section: title}},
                  turn_limit, retry_limit, tool_call_format, hooks: [{name, params}]
  skills/*.md     YAML front matter between "---" lines (name, kind: reply|strategy,
                  a one-line description), then the body: the full instructions
  tools/*.json    one function spec each: name, description, parameters (a
                  JSON-Schema object; keywords: json_schema.SCHEMA_KEYS)

Optional: rules, constraints, hooks (empty), tool_call_format ("qwen_xml"),
prompt.titles. turn_limit 1..100; retry_limit 0..20 (0: no retries), written in
decimal digits (YAML's ``1:30``, ``010`` and ``0x10`` are refused, not read as
90, 8 and 16); prompt.order must include skill_index and tool_list; at least one
skill has kind reply. Field checks are in ``fields.py``.

Skills and tools are read in file-name order (a plain string sort), which is their
order in the harness; ``dump_harness`` prefixes file names with the index so a
written folder loads back equal.

References inside skill bodies (checked here, rewritten by augmentation):
  - a tool is written in single backticks, bare or as a call: `check_stock` or
    `check_stock(link_id=3)`. Backticks in skill bodies are reserved for tool
    names: write parameter names and other literals without them.
  - another skill is written as the call that loads it: load_skill("after_sales").

Every problem becomes one ``path:line: what was expected`` message; all are
collected and raised together as :class:`HarnessError`, the only exception
``load_harness`` raises for any folder content. Nothing in a folder is executed:
YAML is safe-loaded, JSON is data, hooks are names from the registry.

Nothing outside the folder is read either: the manifest, ``skills/``, ``tools/``
and every file in them must be regular files and folders, not links (nor fifos or
devices, which are never opened); a file holds at most ``MAX_FILE_BYTES`` (1 MB);
YAML anchors and aliases are refused (they expand a small file into a huge
prompt), and so is text that cannot be written as UTF-8. Paths and names in
messages are ``shown`` (terminal control characters escaped); at most
``MAX_ERRORS`` messages are kept, then how many more there were.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from pathlib import Path
from typing import Any

from hat_jax.harness.builtin import BUILTIN, builtin_path
from hat_jax.harness.dump import dump_harness  # still importable from here
from hat_jax.harness.fields import (
    check_keys,
    check_manifest,
    name_field,
    text_field,
    unknown,
)
from hat_jax.harness.json_schema import check_schema
from hat_jax.harness.sourcemap import (
    MAX_FILE_BYTES,
    Doc,
    kind_of,
    parse_json,
    parse_yaml,
    read_text,
    refusal,
)
from hat_jax.harness.spec import (
    FOLDERS,
    LOAD_SKILL,
    MANIFEST,
    SKILL_KINDS,
    Harness,
    HookSpec,
    PromptLayout,
    Skill,
    Tool,
)
from hat_jax.printable import shown

MAX_ERRORS = 200  # messages a HarnessError keeps; the rest are counted
__all__ = [
    "MAX_ERRORS",
    "MAX_FILE_BYTES",
    "HarnessError",
    "dump_harness",
    "load_harness",
    "skill_references",
    "tool_references",
]
_log = logging.getLogger(__name__)
_TOOL_REF = re.compile(r"(?<!`)`([A-Za-z_][A-Za-z0-9_.\-]*)(?:\([^`\n]*\))?`(?!`)")
_SKILL_REF = re.compile(r"""load_skill\(\s*(?:name\s*=\s*)?(["'])([^"'\n]+)\1\s*\)""")
_SKILL_KEYS = ("name", "kind", "description")
_TOOL_KEYS = ("name", "description", "parameters")
_OBJECT_SCHEMA = '{"type": "object", "properties": {...}}'


class HarnessError(ValueError):
    """A harness folder is invalid; ``errors`` holds each ``path:line: ...`` (at
    most ``MAX_ERRORS`` and a last line saying how many more), ``total`` counts
    them all."""

    def __init__(self, errors: list[str], total: int | None = None):
        # One line each, printable: names and paths come from the folder.
        self.errors = [shown(" ".join(e.splitlines())) for e in errors]
        self.total = len(errors) if total is None else total
        super().__init__("\n".join(self.errors))


def _error(folder: Path, errors: list[str]) -> HarnessError:
    if len(errors) <= MAX_ERRORS:
        return HarnessError(errors)
    more = len(errors) - MAX_ERRORS
    last = f"{shown(folder)}:1: ... and {more:,} more errors (first {MAX_ERRORS} shown)"
    return HarnessError([*errors[:MAX_ERRORS], last], total=len(errors))


def tool_references(text: str) -> list[tuple[str, int, int]]:
    """Tool names written in backticks in a skill body, as ``(name, start, end)``."""
    return [(m.group(1), m.start(1), m.end(1)) for m in _TOOL_REF.finditer(text)]


def skill_references(text: str) -> list[tuple[str, int, int]]:
    """Skills named in ``load_skill("...")`` calls, as ``(name, start, end)``."""
    return [(m.group(2), m.start(2), m.end(2)) for m in _SKILL_REF.finditer(text)]


# --- Files ----------------------------------------------------------------------


def _load_manifest(file: Path, errors: list[str]) -> tuple[dict | None, Doc | None]:
    kind = kind_of(file)
    if kind is None:
        errors.append(f"{shown(file)}:1: missing file: expected the harness manifest")
        return None, None
    if kind != "a regular file":  # a link or a fifo is never opened
        errors.append(refusal(file, kind))
        return None, None
    text = read_text(file, errors)
    ok, data, doc = parse_yaml(text, file, errors) if text is not None else (0, 0, 0)
    if not ok:
        return None, None
    n = len(errors)
    check_manifest(doc, data)
    return (data if len(errors) == n else None), doc


def _load_skill(file: Path, errors: list[str], names: list) -> tuple | None:
    """The skill, the line of its name and the line its body starts on; adds its
    name to ``names`` even when other fields are wrong (no cascading errors)."""
    text = read_text(file, errors)
    if text is None:
        return None
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if lines[0].rstrip() != "---" or end is None:
        errors.append(
            f"{shown(file)}:1: expected front matter: a line '---', then name, kind "
            "and description, then a line '---'"
        )
        return None
    ok, data, doc = parse_yaml("\n".join(lines[1:end]), file, errors, offset=1)
    if not ok:
        return None
    n = len(errors)
    if not isinstance(data, dict):
        doc.err((), "front matter: expected a mapping with name, kind and description")
        return None
    check_keys(doc, data, (), dict.fromkeys(_SKILL_KEYS, True), "the front matter")
    name = name_field(doc, data, "name", "skill name")
    names.append(name)
    if "kind" in data and data["kind"] not in SKILL_KINDS:
        doc.err(("kind",), unknown("skill kind", data["kind"], SKILL_KINDS))
    description = text_field(doc, data, "description")
    # Exactly one blank line after the front matter and one final newline are
    # layout, not body: what dump_harness writes around the body.
    body, start = "\n".join(lines[end + 1 :]), end + 2
    if body.startswith("\n"):
        body, start = body[1:], start + 1
    body = body.removesuffix("\n")
    if not body.strip():
        errors.append(
            f"{shown(file)}:{end + 1}: expected the skill's instructions after this"
        )
    if len(errors) > n:
        return None
    return Skill(name, data["kind"], description, body), doc.line(("name",)), start


def _load_tool(file: Path, errors: list[str], names: list) -> tuple | None:
    """The tool and the line of its name; adds its name to ``names``."""
    text = read_text(file, errors)
    ok, data, doc = parse_json(text, file, errors) if text is not None else (0, 0, 0)
    if not ok:
        return None
    n = len(errors)
    if not isinstance(data, dict):
        doc.err((), "expected a JSON object with name, description and parameters")
        return None
    check_keys(doc, data, (), dict.fromkeys(_TOOL_KEYS, True), "the tool spec")
    name = name_field(doc, data, "name", "tool name")
    names.append(name)
    if name == LOAD_SKILL:
        doc.err(("name",), f"tool name {LOAD_SKILL!r} clashes with the built-in tool")
    description = text_field(doc, data, "description", one_line=False)
    params = data.get("parameters")
    if "parameters" in data and not (
        isinstance(params, dict)
        and params.get("type") == "object"
        and isinstance(params.get("properties"), dict)
    ):
        doc.err(("parameters",), f"parameters: expected {_OBJECT_SCHEMA}")
    elif "parameters" in data:
        for path, msg in check_schema(params, ("parameters",)):
            doc.err(path, msg)
    if len(errors) > n:
        return None
    return Tool(name, description, params), doc.line(("name",))


def _files(folder: Path, errors: list[str], names: list) -> list[Path]:
    """The regular ``*.md`` (``*.json``) files of ``skills/`` (``tools/``), sorted;
    links and other entries are reported, never followed or opened (and their
    names count as unknown: None in ``names``)."""
    kind, suffix = kind_of(folder), FOLDERS[folder.name]
    if kind is None:
        return []
    if kind != "a folder":
        errors.append(refusal(folder, kind, want=f"a folder of *{suffix} files"))
        names.append(None)
        return []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        errors.append(f"{shown(folder)}:1: cannot list the folder ({e.strerror or e})")
        return []
    out = []
    for entry in entries:
        p = Path(entry.path)
        if entry.name.startswith("."):
            continue  # hidden: editor and OS files, never read
        if entry.is_symlink():
            errors.append(refusal(p, "a symbolic link"))
            names.append(None)
        elif not entry.is_file(follow_symlinks=False):
            if (kind := kind_of(p)) == "a folder":
                errors.append(
                    f"{shown(p)}:1: unexpected: {folder.name}/ holds only *{suffix} "
                    "files"
                )
            else:
                errors.append(refusal(p, kind or "gone"))
                names.append(None)
        elif entry.name.endswith(suffix):
            out.append(p)
        else:
            errors.append(
                f"{shown(p)}:1: unexpected: {folder.name}/ holds only *{suffix} files"
            )
    return out


def _resolve(folder: str | Path) -> Path:
    """A path, or a builtin harness by name; a local folder of a builtin's name
    wins, with a notice (it may be a stale copy)."""
    path = Path(folder)
    if isinstance(folder, str) and folder in BUILTIN:
        if not path.exists():
            return builtin_path(folder)
        _log.warning(
            "harness %r: loading the folder %s, not the builtin harness of that "
            "name (rename the folder to load the builtin)",
            shown(folder),
            shown(path.absolute()),
        )
    return path


def load_harness(folder: str | Path) -> Harness:
    """Loads and validates a harness folder (or a builtin harness by name).

    Raises:
      HarnessError: listing every problem as ``path:line: what was expected``.
    """
    folder = _resolve(folder)
    if not folder.is_dir():  # the folder itself may be a link: the caller named it
        raise HarnessError(
            [f"{shown(folder)}:1: expected a harness folder ({MANIFEST}, ...)"]
        )
    errors: list[str] = []
    manifest, doc = _load_manifest(folder / MANIFEST, errors)
    # Every name read, None for a file whose name could not be: references are
    # then not checked against an incomplete list (no cascading errors).
    names: dict[str, list] = {"skill": [], "tool": [LOAD_SKILL]}
    skill_files = _files(folder / "skills", errors, names["skill"])
    skills = _load_all(_load_skill, skill_files, errors, names["skill"])
    if not skill_files:
        errors.append(f"{shown(folder / 'skills')}:1: expected skill files (*.md)")
    tool_files = _files(folder / "tools", errors, names["tool"])
    tools = _load_all(_load_tool, tool_files, errors, names["tool"])
    _by_name(skills, "skill", errors)
    _by_name(tools, "tool", errors)
    _check_references(skills, names, errors)
    if skills and len(skills) == len(skill_files):  # every skill's kind is known
        _check_kinds(folder, manifest, doc, {s.kind for _, s, *_ in skills}, errors)
    if errors:
        raise _error(folder, errors)
    return _build(manifest, [s for _, s, *_ in skills], [t for _, t, _ in tools])


def _load_all(load: Any, files: list[Path], errors: list[str], names: list) -> list:
    out = []
    for f in files:
        n = len(names)
        if loaded := load(f, errors, names):
            out.append((f, *loaded))
        if len(names) == n:
            names.append(None)  # not even its name could be read
    return out


def _by_name(items: list, what: str, errors: list[str]) -> None:
    """Reports a name defined twice."""
    seen: dict[str, Path] = {}
    for f, obj, line, *_ in items:
        if obj.name in seen:
            first = seen[obj.name].name
            errors.append(
                f"{shown(f)}:{line}: duplicate {what} name {obj.name!r} "
                f"({shown(first)})"
            )
        seen.setdefault(obj.name, f)


def _check_references(skills: list, names: dict, errors: list[str]) -> None:
    """Reports each reference to an unknown tool or skill with its line (line
    starts found once per skill: n references cost n look-ups, not n scans)."""
    known = {k: set(v) - {None} for k, v in names.items()}
    partial = {k for k, v in names.items() if None in v}
    choices = {
        "tool": [LOAD_SKILL, *sorted(known["tool"] - {LOAD_SKILL})],
        "skill": sorted(known["skill"]),
    }
    for f, skill, _, start in skills:
        newlines = None
        for what, refs in (
            ("tool", tool_references(skill.body)),
            ("skill", skill_references(skill.body)),
        ):
            if what in partial:
                continue  # a file whose name is unknown may define it
            for ref, pos, _ in refs:
                if ref in known[what]:
                    continue
                if newlines is None:
                    newlines = [m.start() for m in re.finditer("\n", skill.body)]
                line = start + bisect.bisect_left(newlines, pos)
                msg = unknown(what, ref, choices[what])
                errors.append(
                    f"{shown(f)}:{line}: skill {skill.name!r} refers to an {msg}"
                )


def _check_kinds(folder, manifest, doc, kinds: set[str], errors: list[str]) -> None:
    if "reply" not in kinds:
        errors.append(
            f"{shown(folder / 'skills')}:1: expected at least one kind: reply skill"
        )
    for i, h in enumerate((manifest or {}).get("hooks", [])):
        if h["name"] == "require_skill":
            for kind in h.get("params", {}).get("kinds", ["reply"]):
                if kind not in kinds:
                    where = ("hooks", i, "params", "kinds")
                    doc.err(where, f"require_skill: no skill has kind {kind!r}")


def _build(m: dict, skills: list[Skill], tools: list[Tool]) -> Harness:
    p = m["prompt"]
    hooks = [HookSpec(h["name"], dict(h.get("params", {}))) for h in m.get("hooks", [])]
    return Harness(
        name=m["name"],
        version=m["version"],
        persona=m["persona"],
        rules=tuple(m.get("rules", ())),
        constraints=tuple(m.get("constraints", ())),
        layout=PromptLayout(tuple(p["order"]), p["format"], dict(p.get("titles", {}))),
        turn_limit=m["turn_limit"],
        retry_limit=m["retry_limit"],
        skills=tuple(skills),
        tools=tuple(tools),
        hooks=tuple(hooks),
        tool_call_format=m.get("tool_call_format", "qwen_xml"),
    )
