"""How one harness relates to another: the Mapping of tool, argument and skill names.

It lives in hat_jax (not augment) because both HSA and the simulator use it: the
simulator reaches its tool backends through the mapping of the harness in force.

A Mapping from harness H0 to H1 records, for every tool and skill of H0, its
name in H1, and for every argument *leaf* of every H0 tool (a path of keys down
the schema's nested objects) its path in H1, with enum value spellings. This is
enough to carry any gold call forward (`forward_call`) and any augmented call
back (`inverse_call`), and mappings compose: `m01.compose(m12)` maps H0 to H2.

Ops build their mapping from `Mapping.identity(harness)` so the domain is always
every tool, leaf and skill of the source harness, which keeps composition exact.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping as AnyMapping
from typing import Any

from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.jsonl import DataError, field, json_type, parse_line
from hat_jax.printable import shown
from hat_jax.text.toolcall import ToolCall

Path = tuple[str, ...]


def schema_leaves(schema: AnyMapping[str, Any], prefix: Path = ()) -> list[Path]:
    """Paths to the argument leaves of an object schema.

    A property is descended into when it is an object with properties of its
    own; anything else (scalars, arrays, free-form objects) is a leaf.
    """
    out: list[Path] = []
    props = schema.get("properties") if isinstance(schema, AnyMapping) else None
    for key, sub in (props or {}).items():
        path = (*prefix, key)
        if _is_struct(sub):
            out += schema_leaves(sub, path)
        else:
            out.append(path)
    return out


def _is_struct(sub: Any) -> bool:
    return (
        isinstance(sub, AnyMapping)
        and sub.get("type") == "object"
        and bool(sub.get("properties"))
    )


_MISSING = object()


def _get(args: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(args, dict) or key not in args:
            return _MISSING
        args = args[key]
    return args


def _set(out: dict, path: Path, value: Any) -> None:
    for key in path[:-1]:
        out = out.setdefault(key, {})
    out[path[-1]] = value


def _residual(args: dict, leaves: set[Path], prefix: Path = ()) -> dict:
    """The parts of ``args`` no leaf path covers (kept where they are)."""
    out = {}
    for key, value in args.items():
        path = (*prefix, key)
        if path in leaves:
            continue
        structural = any(p[: len(path)] == path for p in leaves)
        if structural and isinstance(value, dict):
            rest = _residual(value, leaves, path)
            if rest:
                out[key] = rest
        else:
            out[key] = value
    return out


def _merge(into: dict, extra: dict) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into.setdefault(key, value)


def _map_value(value: Any, table: AnyMapping[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, list):
        return [_map_value(v, table) for v in value]
    return value


def _move(
    args: dict,
    paths: dict[Path, Path],
    values: dict[Path, dict[str, str]],
) -> dict:
    """Moves each leaf of ``args`` to its new path, respelling enum values."""
    out: dict = {}
    for src, dst in paths.items():
        value = _get(args, src)
        if value is not _MISSING:
            _set(out, dst, _map_value(value, values.get(src, {})))
    _merge(out, _residual(args, set(paths)))
    return out


@dataclasses.dataclass
class Mapping:
    """Names and argument paths from a source harness to an augmented one.

    Attributes:
      tools: source tool name -> augmented name (every source tool).
      params: source tool -> {source leaf path: augmented leaf path}.
      values: source tool -> {source leaf path: {source value: new value}}.
      skills: source skill name -> augmented name (every source skill).
      added_tools: augmented names of tools that have no source (distractors).
      ops: the op specs applied, in order.
    """

    tools: dict[str, str] = dataclasses.field(default_factory=dict)
    params: dict[str, dict[Path, Path]] = dataclasses.field(default_factory=dict)
    values: dict[str, dict[Path, dict[str, str]]] = dataclasses.field(
        default_factory=dict
    )
    skills: dict[str, str] = dataclasses.field(default_factory=dict)
    added_tools: list[str] = dataclasses.field(default_factory=list)
    ops: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def identity(cls, harness: Harness) -> Mapping:
        """The mapping of a harness onto itself (the base every op edits)."""
        return cls(
            tools={t.name: t.name for t in harness.tools},
            params={
                t.name: {p: p for p in schema_leaves(t.parameters)}
                for t in harness.tools
            },
            skills={s.name: s.name for s in harness.skills},
        )

    # -- names ---------------------------------------------------------------
    def tool(self, name: str) -> str:
        return self.tools.get(name, name)

    def skill(self, name: str) -> str:
        return self.skills.get(name, name)

    def inverse_tool(self, name: str) -> str:
        return next((k for k, v in self.tools.items() if v == name), name)

    def inverse_skill(self, name: str) -> str:
        return next((k for k, v in self.skills.items() if v == name), name)

    # -- calls ---------------------------------------------------------------
    def forward_call(self, call: ToolCall) -> ToolCall:
        """A source-harness call as the augmented harness expects it."""
        if call.name == LOAD_SKILL:
            return _map_skill_call(call, self.skill)
        args = _move(
            call.arguments,
            self.params.get(call.name, {}),
            self.values.get(call.name, {}),
        )
        return ToolCall(self.tool(call.name), args)

    def inverse_call(self, call: ToolCall) -> ToolCall:
        """An augmented-harness call mapped back to the source harness."""
        if call.name == LOAD_SKILL:
            return _map_skill_call(call, self.inverse_skill)
        src = self.inverse_tool(call.name)
        paths = {v: k for k, v in self.params.get(src, {}).items()}
        values = {
            self.params.get(src, {}).get(p, p): {v: k for k, v in table.items()}
            for p, table in self.values.get(src, {}).items()
        }
        return ToolCall(src, _move(call.arguments, paths, values))

    # -- composition ---------------------------------------------------------
    def compose(self, other: Mapping) -> Mapping:
        """This mapping (H0 -> H1) followed by ``other`` (H1 -> H2): H0 -> H2."""
        tools, params, values = {}, {}, {}
        for t0, t1 in self.tools.items():
            tools[t0] = other.tool(t1)
            nxt = other.params.get(t1, {})
            rank = {p1: i for i, p1 in enumerate(nxt)}
            pairs = sorted(
                self.params.get(t0, {}).items(), key=lambda kv: rank.get(kv[1], -1)
            )
            params[t0] = {p0: nxt.get(p1, p1) for p0, p1 in pairs}
            composed = {}
            for p0, p1 in self.params.get(t0, {}).items():
                table = _compose_values(
                    self.values.get(t0, {}).get(p0, {}),
                    other.values.get(t1, {}).get(p1, {}),
                )
                if table:
                    composed[p0] = table
            if composed:
                values[t0] = composed
        return Mapping(
            tools=tools,
            params=params,
            values=values,
            skills={s0: other.skill(s1) for s0, s1 in self.skills.items()},
            added_tools=[other.tool(a) for a in self.added_tools] + other.added_tools,
            ops=self.ops + other.ops,
        )

    # -- JSON ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": dict(self.tools),
            "params": {
                t: [[list(a), list(b)] for a, b in m.items()]
                for t, m in self.params.items()
            },
            "values": {
                t: [[list(p), [[a, b] for a, b in tab.items()]] for p, tab in m.items()]
                for t, m in self.values.items()
            },
            "skills": dict(self.skills),
            "added_tools": list(self.added_tools),
            "ops": list(self.ops),
        }

    @classmethod
    def from_dict(cls, d: Any, where: str = "mapping") -> Mapping:
        """A mapping from :meth:`to_dict`'s form (``mapping.json``, a
        trajectory's ``meta.hsa.mapping``).

        Raises:
          DataError: ``where: field 'LABEL' ...`` for an unknown key or a value
            of the wrong type or shape.
        """
        if not isinstance(d, AnyMapping):
            raise DataError(
                f"{where}: expected a harness mapping (a JSON object), got "
                f"{json_type(d)}"
            )
        unknown = [k for k in d if k not in _FIELDS]
        if unknown:
            raise DataError(
                f"{where}: unknown field {_shown(unknown[0])} in a harness mapping "
                f"(expected {', '.join(_FIELDS)})"
            )
        return cls(
            tools=_names(d, "tools", where),
            params={
                t: _path_table(pairs, where, f"params.{shown(t)}")
                for t, pairs in field(d, "params", where, dict, default={}).items()
            },
            values={
                t: _value_tables(pairs, where, f"values.{shown(t)}")
                for t, pairs in field(d, "values", where, dict, default={}).items()
            },
            skills=_names(d, "skills", where),
            added_tools=_texts(d, "added_tools", where),
            ops=_texts(d, "ops", where),
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_json(cls, text: str, where: str = "mapping.json") -> Mapping:
        """A mapping from JSON text (strict: no NaN, no key given twice).

        Raises:
          DataError: ``where: ...`` for text that is not a harness mapping.
        """
        return cls.from_dict(parse_line(text, where), where)


_FIELDS = ("tools", "params", "values", "skills", "added_tools", "ops")


def _shown(value: Any) -> str:
    """A value from the data, quoted, cut to 40 characters, printable."""
    text = repr(value)
    return shown(text if len(text) <= 40 else text[:37] + "...")


def _text(value: Any, where: str, label: str) -> str:
    if not isinstance(value, str) or not value.strip():
        got = _shown(value) if isinstance(value, str) else json_type(value)
        raise DataError(
            f"{where}: field '{label}' must be a non-empty string, got {got}"
        )
    return value


def _list(value: Any, where: str, label: str) -> list:
    if not isinstance(value, list):
        raise DataError(
            f"{where}: field '{label}' must be a list, got {json_type(value)}"
        )
    return value


def _names(d: AnyMapping[str, Any], key: str, where: str) -> dict[str, str]:
    """``d[key]``: an object of names to names."""
    table = field(d, key, where, dict, default={})
    return {k: _text(v, where, f"{key}.{shown(k)}") for k, v in table.items()}


def _texts(d: AnyMapping[str, Any], key: str, where: str) -> list[str]:
    """``d[key]``: a list of names."""
    items = field(d, key, where, list, default=[])
    return [_text(v, where, f"{key}[{i}]") for i, v in enumerate(items)]


def _pair(value: Any, where: str, label: str) -> tuple[Any, Any]:
    if not isinstance(value, list) or len(value) != 2:
        got = f"a list of {len(value)}" if isinstance(value, list) else json_type(value)
        raise DataError(f"{where}: field '{label}' must be a pair [a, b], got {got}")
    return value[0], value[1]


def _path(value: Any, where: str, label: str) -> Path:
    """An argument leaf path: a non-empty list of keys."""
    if not isinstance(value, list) or not value:
        raise DataError(
            f"{where}: field '{label}' must be an argument path (a non-empty list "
            f"of names), got {'[]' if value == [] else json_type(value)}"
        )
    return tuple(_text(k, where, f"{label}[{i}]") for i, k in enumerate(value))


def _path_table(pairs: Any, where: str, label: str) -> dict[Path, Path]:
    """``[[source path, augmented path], ...]`` as a dict; a source path once."""
    out: dict[Path, Path] = {}
    for i, item in enumerate(_list(pairs, where, label)):
        a, b = _pair(item, where, f"{label}[{i}]")
        src = _path(a, where, f"{label}[{i}][0]")
        if src in out:
            raise DataError(
                f"{where}: field '{label}' lists the path {list(src)} twice"
            )
        out[src] = _path(b, where, f"{label}[{i}][1]")
    return out


def _value_tables(pairs: Any, where: str, label: str) -> dict[Path, dict[str, str]]:
    """``[[source path, [[value, new value], ...]], ...]`` as dicts."""
    out: dict[Path, dict[str, str]] = {}
    for i, item in enumerate(_list(pairs, where, label)):
        p, tab = _pair(item, where, f"{label}[{i}]")
        path, at = _path(p, where, f"{label}[{i}][0]"), f"{label}[{i}][1]"
        table = out.setdefault(path, {})
        for j, x in enumerate(_list(tab, where, at)):
            a, b = _pair(x, where, f"{at}[{j}]")
            if not isinstance(a, str) or not isinstance(b, str):
                bad = json_type(b if isinstance(a, str) else a)
                raise DataError(
                    f"{where}: field '{at}[{j}]' must be two enum spellings "
                    f"(strings), got {bad}"
                )
            table[a] = b
    return out


def _map_skill_call(call: ToolCall, rename) -> ToolCall:
    args = dict(call.arguments)
    if isinstance(args.get("name"), str):
        args["name"] = rename(args["name"])
    return ToolCall(call.name, args)


def _compose_values(first: dict[str, str], second: dict[str, str]) -> dict[str, str]:
    """Value tables composed: v0 -> first -> second, identities dropped."""
    out = {v0: second.get(v1, v1) for v0, v1 in first.items()}
    images = set(first.values())
    for v1, v2 in second.items():
        if v1 not in images and v1 not in out:
            out[v1] = v2
    return {a: b for a, b in out.items() if a != b}
