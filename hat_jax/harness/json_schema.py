"""The JSON-Schema subset tool specs use: checking schemas and validating values.

What a type name admits is `hat_jax.json_types` (shared with the tool-call
parser): 3.0 is an integer, true is never a number.

Keywords (``SCHEMA_KEYS``): type (a name or a list of names), description,
properties, required, enum (scalars), items, minimum, maximum,
additionalProperties, default. ``check_schema`` reports anything else, so a
schema never carries a constraint the validator would silently skip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hat_jax.json_types import JSON_TYPES, has_type, type_of

# Tool, skill and parameter names: safe as file names and in both call formats.
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")
SCHEMA_KEYS = (
    "type",
    "description",
    "properties",
    "required",
    "enum",
    "items",
    "minimum",
    "maximum",
    "additionalProperties",
    "default",
)
MAX_DEPTH = 8  # nested schema levels a tool spec may use
MAX_LISTED = 20  # choices an "expected one of" message names

Path = tuple[Any, ...]


def describe(value: Any, limit: int = 40) -> str:
    """A short, bounded description of any value, for error messages."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} keys"
    if isinstance(value, list | tuple | set | frozenset):
        return f"a list of {len(value)} items"
    if value is None or isinstance(value, str | int | float | bool):
        text = repr(value)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    return f"a {type(value).__name__}"


def listed(items: Iterable[Any], show: Callable[[Any], str] = repr) -> str:
    """``[a, b, c]``, or the first ``MAX_LISTED`` and how many more, so that an
    error about one value never lists thousands of names."""
    items = items if isinstance(items, list | tuple) else list(items)  # no copy
    head = ", ".join(show(x) for x in items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"[{head}, ... and {more:,} more]" if more > 0 else f"[{head}]"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _canon(value: Any) -> Any:
    """A hashable key equal for values that are ``_same`` (1 and 1.0, not true)."""
    try:
        hash(value)
    except TypeError:  # lists, mappings: their canonical JSON text
        try:
            return ("json", json.dumps(value, sort_keys=True, default=repr))
        except (TypeError, ValueError):  # keys of mixed types, cycles
            return ("repr", repr(value))
    return (isinstance(value, bool), value)


def _is_number(v: Any) -> bool:
    return has_type(v, "number")


def validate_json(
    value: Any, schema: Mapping[str, Any], *, closed: bool = False, path: str = ""
) -> list[str]:
    """Checks ``value`` against ``schema``; returns ``"path: problem"`` strings.

    ``closed`` treats objects without ``additionalProperties`` as closed: a tool
    call's unknown argument is a mistake, not an extension. Integral floats
    count as integers (JSON has one number type).
    """
    return _validate(value, schema, closed, path, {})


def _in_enum(value: Any, enum: list, sets: dict[int, set]) -> bool:
    """``value`` is in ``enum``; a long enum is hashed once per validation (an
    array of n values against an enum of n: n look-ups, not n * n comparisons)."""
    if len(enum) <= 8:
        return any(_same(value, e) for e in enum)
    if id(enum) not in sets:  # the schema outlives this validation: ids are stable
        sets[id(enum)] = {_canon(e) for e in enum}
    return _canon(value) in sets[id(enum)]


def _validate(
    value: Any, schema: Mapping[str, Any], closed: bool, path: str, sets: dict
) -> list[str]:
    at = path or "arguments"
    if not isinstance(schema, Mapping):
        return []
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if isinstance(types, list) and types:
        if not any(has_type(value, t) for t in types):
            want = " or ".join(str(t) for t in types)
            return [f"{at}: expected {want}, got {type_of(value)} {describe(value)}"]
    enum = schema.get("enum")
    if isinstance(enum, list) and not _in_enum(value, enum, sets):
        return [f"{at}: expected one of {listed(enum, _json)}"]
    errs: list[str] = []
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if _is_number(value) and _is_number(lo) and value < lo:
        errs.append(f"{at}: expected at least {lo}, got {value}")
    if _is_number(value) and _is_number(hi) and value > hi:
        errs.append(f"{at}: expected at most {hi}, got {value}")
    if isinstance(value, dict):
        errs += _validate_object(value, schema, closed, path, sets)
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        for i, item in enumerate(value):
            errs += _validate(item, items, closed, f"{at}[{i}]", sets)
    return errs


def _validate_object(
    value: dict, schema: Mapping[str, Any], closed: bool, path: str, sets: dict
) -> list[str]:
    errs = []
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    prefix = f"{path}." if path else ""
    required = schema.get("required")
    for key in required if isinstance(required, list) else ():
        if key not in value:
            errs.append(f"{prefix}{key}: required argument is missing")
    extra = schema.get("additionalProperties", not closed)
    for key, item in value.items():
        if key in props:
            errs += _validate(item, props[key], closed, prefix + key, sets)
        elif extra is False:
            known = listed(props, str)[1:-1] or "none"
            errs.append(f"{prefix}{key}: unknown argument (expected: {known})")
        elif isinstance(extra, Mapping):
            errs += _validate(item, extra, closed, prefix + key, sets)
    return errs


def check_schema(s: Any, path: Path = (), depth: int = 0) -> list[tuple[Path, str]]:
    """Problems with a schema node as ``(key path, message)``, all of them."""
    if not isinstance(s, dict):
        return [(path, f"expected a JSON-Schema object, got {describe(s)}")]
    if depth > MAX_DEPTH:
        return [(path, f"schema nests too deeply (at most {MAX_DEPTH} levels)")]
    errs: list[tuple[Path, str]] = []

    def err(key: Any, msg: str) -> None:
        errs.append(((*path, key) if key is not None else path, msg))

    for k in s:
        if k not in SCHEMA_KEYS:
            err(k, f"unsupported schema keyword {describe(k)}; expected {SCHEMA_KEYS}")
    t = s.get("type")
    types = [t] if isinstance(t, str) else t if isinstance(t, list) else None
    if "type" not in s:
        err(None, f'expected a "type" (one of {JSON_TYPES})')
        types = []
    elif not types or any(x not in JSON_TYPES for x in types):
        err("type", f"unknown type {describe(t)}; expected one of {JSON_TYPES}")
        types = []
    elif len(set(types)) < len(types):  # JSON Schema: the names must be unique
        err("type", f"type lists a name twice: {describe(t)}")
        types = list(dict.fromkeys(types))

    def given(key: str, *wanted: str) -> bool:
        if key in s and types and not set(wanted) & set(types):
            err(key, f"{key!r} applies to {'/'.join(wanted)} schemas, not {t}")
        return key in s

    if "description" in s and not isinstance(s["description"], str):
        err("description", f"expected a string, got {describe(s['description'])}")
    props = s.get("properties", {})
    if given("properties", "object"):
        if not isinstance(props, dict):
            err("properties", f"expected a mapping, got {describe(props)}")
            props = {}
        for name, sub in props.items():
            where = (*path, "properties", name)
            if not NAME_RE.fullmatch(name):
                errs.append(
                    (where, f"parameter name {describe(name)}: use A-Z a-z 0-9 _")
                )
            errs += check_schema(sub, where, depth + 1)
    if given("required", "object"):
        errs += _check_required(s["required"], props, (*path, "required"))
    if "enum" in s:
        errs += _check_enum(s["enum"], types, (*path, "enum"))
    if given("items", "array"):
        errs += check_schema(s["items"], (*path, "items"), depth + 1)
    elif "array" in types:
        err(None, 'array schema: expected "items" (the schema of each element)')
    for key in ("minimum", "maximum"):
        if given(key, "integer", "number") and not _is_number(s[key]):
            err(key, f"{key}: expected a number, got {describe(s[key])}")
    lo, hi = s.get("minimum"), s.get("maximum")
    if _is_number(lo) and _is_number(hi) and lo > hi:
        err("maximum", f"maximum {hi} is below minimum {lo}")
    if given("additionalProperties", "object"):
        extra = s["additionalProperties"]
        if not isinstance(extra, bool):
            errs += check_schema(extra, (*path, "additionalProperties"), depth + 1)
    if "default" in s and not errs:
        for msg in validate_json(s["default"], s, path="default"):
            err("default", f"default does not fit the schema: {msg}")
    return errs


def _check_required(req: Any, props: dict, path: Path) -> list[tuple[Path, str]]:
    if not isinstance(req, list):
        return [(path, f"required: expected a list of names, got {describe(req)}")]
    errs, seen = [], set()
    for i, r in enumerate(req):
        if not isinstance(r, str) or r not in props:
            errs.append(((*path, i), f"required names {describe(r)}: not a property"))
        elif r in seen:
            errs.append(((*path, i), f"required lists {describe(r)} twice"))
        else:
            seen.add(r)
    return errs


def _check_enum(enum: Any, types: list[str], path: Path) -> list[tuple[Path, str]]:
    if not isinstance(enum, list) or not enum:
        return [(path, f"enum: expected a non-empty list, got {describe(enum)}")]
    errs, seen = [], set()
    for i, v in enumerate(enum):
        if isinstance(v, dict | list) or (types and validate_json(v, {"type": types})):
            want = "/".join(types) or "scalar"
            errs.append(((*path, i), f"enum value {describe(v)}: expected a {want}"))
            continue
        key = _canon(v)
        if key in seen:
            errs.append(((*path, i), f"enum value {describe(v)} is listed twice"))
        seen.add(key)
    return errs
