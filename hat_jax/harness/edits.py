"""Typed edit operations on a harness: what harness evolution may change.

An edit is a JSON object ``{"op": NAME, ...}``; :data:`EDIT_SCHEMA` lists every
op and its fields. :func:`parse_edits` checks a list of them against it (an
editor's answer is data from a stranger: wrong types, unknown ops and extra
fields are refused with a reason, never executed), and :func:`apply_edits`
applies them in order to a :class:`~hat_jax.harness.spec.Harness`, returning a
new one (``EditError`` names the op that does not apply: an unknown skill, a
rule index out of range, a hook parameter the registry refuses).

Ops (indices count from 0, as the editor prompt numbers them):

  add_rule {text}                        a house rule, appended
  reword_rule {index, text}              one rule's text replaced
  remove_rule {index}
  add_constraint {text}                  a reply constraint, appended
  add_skill {name, kind, description, body}
  rewrite_skill {name, description?, body?}
  replace_in_skill {name, old, new}      one exact passage of a skill's body
  set_tool_description {tool, description}
  add_hook {hook, params}                a registered hook, with its parameters
  set_hook_param {hook, param, value}    one parameter of a hook in force
  set_limit {field: turn_limit|retry_limit, value}

A candidate harness built from edits is still only data: it is validated the
way ``hat harness validate`` does (``dump_harness`` then ``load_harness``)
before anything runs under it. :func:`harness_diff` is the unified diff of two
harnesses' folder files.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hat_jax.harness.dump import harness_texts
from hat_jax.harness.fields import MAX_RETRY_LIMIT, MAX_TURN_LIMIT
from hat_jax.harness.hooks import get_hook, validate_hook_params
from hat_jax.harness.json_schema import validate_json
from hat_jax.harness.spec import SKILL_KINDS, Harness, HookSpec, Skill

MAX_TEXT = 4000  # characters of one rule, description or skill body an edit sets
MAX_EDITS = 16  # edits one proposal may make
LIMITS = {"turn_limit": (1, MAX_TURN_LIMIT), "retry_limit": (0, MAX_RETRY_LIMIT)}

_TEXT = {"type": "string"}  # non-blank, at most MAX_TEXT characters (parse_edit)
_NAME = {"type": "string"}
_INDEX = {"type": "integer", "minimum": 0, "maximum": 999}
OPS: dict[str, dict[str, Any]] = {
    # op -> (required fields, optional fields) as JSON-Schema properties
    "add_rule": {"text": _TEXT},
    "reword_rule": {"index": _INDEX, "text": _TEXT},
    "remove_rule": {"index": _INDEX},
    "add_constraint": {"text": _TEXT},
    "add_skill": {
        "name": _NAME,
        "kind": {"type": "string", "enum": list(SKILL_KINDS)},
        "description": _TEXT,
        "body": _TEXT,
    },
    "rewrite_skill": {"name": _NAME, "description?": _TEXT, "body?": _TEXT},
    "replace_in_skill": {"name": _NAME, "old": _TEXT, "new": _TEXT},
    "set_tool_description": {"tool": _NAME, "description": _TEXT},
    "add_hook": {
        "hook": _NAME,
        "params": {"type": "object", "additionalProperties": True},
    },
    "set_hook_param": {"hook": _NAME, "param": _NAME, "value": {}},
    "set_limit": {
        "field": {"type": "string", "enum": list(LIMITS)},
        "value": {"type": "integer", "minimum": 0, "maximum": 100},
    },
}


def _op_schema(op: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    props = {"op": {"type": "string", "enum": [op]}}
    props |= {k.rstrip("?"): v for k, v in fields.items()}
    required = ["op", *(k for k in fields if not k.endswith("?"))]
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


EDIT_SCHEMAS = {op: _op_schema(op, f) for op, f in OPS.items()}
# The answer an editor gives: the edits, and why (shown in the round's record).
EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "targets": {"type": "array", "items": {"type": "string"}},  # class keys
        "edits": {"type": "array"},
    },
    "required": ["edits"],
    "additionalProperties": False,
}


class EditError(ValueError):
    """An edit that is malformed or does not apply to the harness."""


@dataclasses.dataclass(frozen=True)
class Edit:
    """One checked edit: its op and fields (as in the JSON object)."""

    op: str
    fields: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, **self.fields}

    def describe(self) -> str:
        """One line for tables: the op and its short fields."""
        short = {
            k: v if not isinstance(v, str) or len(v) <= 40 else v[:37] + "..."
            for k, v in self.fields.items()
        }
        return f"{self.op}({json.dumps(short, ensure_ascii=False)[1:-1]})"


def parse_edit(obj: Any, where: str = "edit") -> Edit:
    """An edit from its JSON object, checked against its op's schema."""
    if not isinstance(obj, dict):
        raise EditError(f"{where}: expected an object, got {type(obj).__name__}")
    op = obj.get("op")
    if op not in EDIT_SCHEMAS:
        raise EditError(f"{where}: unknown op {op!r}; have {', '.join(OPS)}")
    problems = validate_json(obj, EDIT_SCHEMAS[op], closed=True)
    for k, v in obj.items():
        if isinstance(v, str) and (not v.strip() or len(v) > MAX_TEXT):
            problems.append(f"{k}: expected 1..{MAX_TEXT} characters, not blank")
    if problems:
        raise EditError(f"{where} ({op}): {'; '.join(problems[:3])}")
    fields = {k: v for k, v in obj.items() if k != "op"}
    for k, spec in EDIT_SCHEMAS[op]["properties"].items():
        if spec.get("type") == "integer" and isinstance(fields.get(k), float):
            fields[k] = int(fields[k])  # 1.0 is the integer 1 in JSON Schema
    return Edit(op, fields)


def parse_edits(answer: Any) -> tuple[list[Edit], str]:
    """(edits, rationale) of an editor's answer (``EDIT_SCHEMA``)."""
    problems = validate_json(answer, EDIT_SCHEMA, closed=True)
    if not problems and not 1 <= len(answer["edits"]) <= MAX_EDITS:
        problems = [f"edits: expected 1..{MAX_EDITS} edits, got {len(answer['edits'])}"]
    if problems:
        raise EditError(f"answer: {'; '.join(problems[:3])}")
    edits = [parse_edit(e, f"edits[{i}]") for i, e in enumerate(answer["edits"])]
    return edits, str(answer.get("rationale", ""))


def _skill(h: Harness, name: str) -> Skill:
    s = h.skill(name)
    if s is None:
        raise EditError(f"no skill {name!r}; have {[x.name for x in h.skills]}")
    return s


def _with_skill(h: Harness, new: Skill) -> Harness:
    return h.replace(skills=tuple(new if s.name == new.name else s for s in h.skills))


def _rule_index(h: Harness, i: int) -> int:
    if not 0 <= i < len(h.rules):
        raise EditError(f"rule index {i} out of range (0..{len(h.rules) - 1})")
    return i


def _hook(h: Harness, f: Mapping[str, Any]) -> Harness:
    name = f["hook"]
    try:
        get_hook(name)
    except (KeyError, ValueError) as e:
        raise EditError(f"hook {name!r}: {e}") from None
    if h.hook(name) is not None:
        raise EditError(f"hook {name!r} is already in force (set_hook_param?)")
    errors = validate_hook_params(name, f["params"])
    if errors:
        raise EditError(f"hook {name}: {'; '.join(errors[:3])}")
    return h.replace(hooks=(*h.hooks, HookSpec(name, dict(f["params"]))))


def _hook_param(h: Harness, f: Mapping[str, Any]) -> Harness:
    spec = h.hook(f["hook"])
    if spec is None:
        raise EditError(f"no hook {f['hook']!r} in force")
    params = {**spec.params, f["param"]: f["value"]}
    errors = validate_hook_params(spec.name, params)
    if errors:
        raise EditError(f"hook {spec.name}: {'; '.join(errors[:3])}")
    new = HookSpec(spec.name, params)
    return h.replace(hooks=tuple(new if x is spec else x for x in h.hooks))


def apply_edit(h: Harness, e: Edit) -> Harness:
    """``h`` with one edit applied (module docstring)."""
    f = e.fields
    if e.op == "add_rule":
        return h.replace(rules=(*h.rules, f["text"]))
    if e.op == "reword_rule":
        rules = list(h.rules)
        rules[_rule_index(h, f["index"])] = f["text"]
        return h.replace(rules=tuple(rules))
    if e.op == "remove_rule":
        i = _rule_index(h, f["index"])
        return h.replace(rules=h.rules[:i] + h.rules[i + 1 :])
    if e.op == "add_constraint":
        return h.replace(constraints=(*h.constraints, f["text"]))
    if e.op == "add_skill":
        if h.skill(f["name"]) is not None:
            raise EditError(f"skill {f['name']!r} exists (rewrite_skill?)")
        new = Skill(f["name"], f["kind"], f["description"], f["body"])
        return h.replace(skills=(*h.skills, new))
    if e.op == "rewrite_skill":
        s = _skill(h, f["name"])
        if "description" not in f and "body" not in f:
            raise EditError("rewrite_skill needs a description or a body")
        new = dataclasses.replace(
            s,
            description=f.get("description", s.description),
            body=f.get("body", s.body),
        )
        return _with_skill(h, new)
    if e.op == "replace_in_skill":
        s = _skill(h, f["name"])
        if s.body.count(f["old"]) != 1:
            n = s.body.count(f["old"])
            raise EditError(f"skill {s.name}: the passage occurs {n} times, not once")
        return _with_skill(
            h, dataclasses.replace(s, body=s.body.replace(f["old"], f["new"]))
        )
    if e.op == "set_tool_description":
        t = h.tool(f["tool"])
        if t is None:
            raise EditError(f"no tool {f['tool']!r}")
        new_t = dataclasses.replace(t, description=f["description"])
        return h.replace(tools=tuple(new_t if x is t else x for x in h.tools))
    if e.op == "add_hook":
        return _hook(h, f)
    if e.op == "set_hook_param":
        return _hook_param(h, f)
    if e.op == "set_limit":
        low, high = LIMITS[f["field"]]
        if not low <= f["value"] <= high:
            raise EditError(f"{f['field']} must be in {low}..{high}")
        return h.replace(**{f["field"]: f["value"]})
    raise EditError(f"unknown op {e.op!r}")  # parse_edit admits only OPS


def apply_edits(h: Harness, edits: Sequence[Edit]) -> Harness:
    """``h`` with ``edits`` applied in order; ``EditError`` names the failing one."""
    for i, e in enumerate(edits):
        try:
            h = apply_edit(h, e)
        except EditError as err:
            raise EditError(f"edits[{i}] {e.op}: {err}") from None
    return h


def harness_diff(a: Harness, b: Harness, names: tuple[str, str] = ("a", "b")) -> str:
    """Unified diff of the two harnesses' folder files (empty when equal)."""
    ta, tb = harness_texts(a), harness_texts(b)
    out = []
    for path in sorted(set(ta) | set(tb), key=lambda p: (p.split("/")[0], p)):
        old, new = ta.get(path, ""), tb.get(path, "")
        if old != new:
            out += difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"{names[0]}/{path}" if path in ta else "/dev/null",
                f"{names[1]}/{path}" if path in tb else "/dev/null",
            )
    return "".join(out)
