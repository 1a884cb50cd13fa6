"""JSON-Schema surgery for tool parameters: rename, reorder, nest, flatten.

Each function returns a new schema (inputs are never mutated) and, where paths
move, a ``{old path: new path}`` map over every property path, so ops can carry
argument leaves through :class:`hat_jax.harness.mapping.Mapping`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Path = tuple[str, ...]


def props(schema: Mapping[str, Any]) -> dict[str, Any]:
    p = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(p) if isinstance(p, Mapping) else {}


def is_struct(sub: Any) -> bool:
    """An object parameter with properties of its own (arguments nest inside)."""
    return isinstance(sub, Mapping) and sub.get("type") == "object" and bool(props(sub))


def all_keys(schema: Mapping[str, Any]) -> list[str]:
    """Property names at every depth of nested objects (not inside arrays or
    free-form objects: their contents are argument values, not paths)."""
    out = []
    for key, sub in props(schema).items():
        out.append(key)
        out += all_keys(sub) if is_struct(sub) else []
    return out


def all_paths(schema: Mapping[str, Any], prefix: Path = ()) -> list[Path]:
    """Every property path through nested objects (inner nodes and leaves)."""
    out = []
    for key, sub in props(schema).items():
        out.append((*prefix, key))
        out += all_paths(sub, (*prefix, key)) if is_struct(sub) else []
    return out


def map_descriptions(schema: Mapping[str, Any], fn: Callable[[str], str]) -> dict:
    """``fn`` applied to every ``description`` inside a parameters schema."""
    out = copy.deepcopy(dict(schema))

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("description"), str):
            node["description"] = fn(node["description"])
        for sub in props(node).values():
            walk(sub)
        walk(node.get("items"))

    for sub in props(out).values():
        walk(sub)
    return out


def rename_keys(
    schema: Mapping[str, Any], keymap: Mapping[str, str], prefix: Path = ()
) -> tuple[dict, dict[Path, Path]]:
    """Renames property keys at every depth (siblings that would collide keep
    their names). Returns the schema and a map over all property paths."""
    out = copy.deepcopy(dict(schema))
    old = props(schema)
    if not old:
        return out, {}
    names = {}
    for key in old:
        new = keymap.get(key, key)
        others = {keymap.get(k, k) for k in old if k != key} | set(old) - {key}
        names[key] = new if new not in others else key
    paths: dict[Path, Path] = {}
    new_props = {}
    for key, sub in old.items():
        src, dst = (*prefix, key), (*prefix, names[key])
        paths[src] = dst
        sub2, inner = rename_keys(sub, keymap) if is_struct(sub) else (sub, {})
        for a, b in inner.items():
            paths[(*src, *a)] = (*dst, *b)
        new_props[names[key]] = sub2
    out["properties"] = new_props
    if isinstance(out.get("required"), list):
        out["required"] = [names.get(k, k) for k in out["required"]]
    return out, paths


def shuffle_props(schema: Mapping[str, Any], rng: np.random.Generator) -> dict:
    """Properties (and ``required``) in a random order at every depth."""
    out = copy.deepcopy(dict(schema))
    old = props(out)
    if not old:
        return out
    keys = list(old)
    order = [keys[i] for i in rng.permutation(len(keys))]
    out["properties"] = {
        k: shuffle_props(old[k], rng) if isinstance(old[k], Mapping) else old[k]
        for k in order
    }
    if isinstance(out.get("required"), list):
        req = set(out["required"])
        out["required"] = [k for k in order if k in req]
    return out


def nest(schema: Mapping[str, Any], wrapper: str, description: str) -> dict:
    """All top-level parameters moved inside one object parameter ``wrapper``."""
    out = copy.deepcopy(dict(schema))
    required = list(out.get("required") or [])
    inner: dict[str, Any] = {
        "type": "object",
        "description": description,
        "properties": props(out),
    }
    if required:
        inner["required"] = required
    if "additionalProperties" in out:
        inner["additionalProperties"] = out["additionalProperties"]
    out["properties"] = {wrapper: inner}
    out["required"] = [wrapper] if required else []
    if not out["required"]:
        del out["required"]
    return out


def flatten(
    schema: Mapping[str, Any], outer: str, taken: set[str]
) -> tuple[dict, dict[Path, Path]]:
    """Object parameter ``outer`` replaced by its own properties at top level.

    An inner key keeps its name unless it collides with ``taken`` (or another
    top-level key); then it becomes ``outer_inner``. Returns the schema and the
    map of moved paths (``(outer, k, ...)`` -> ``(new_k, ...)``).
    """
    out = copy.deepcopy(dict(schema))
    top = props(out)
    sub = top[outer]
    inner, inner_req = props(sub), set(sub.get("required") or [])
    outer_req = outer in set(out.get("required") or [])
    used = (set(top) - {outer}) | set(taken)
    names = {}
    for k in inner:
        name = k if k not in used else f"{outer}_{k}"
        while name in used:
            name += "_"
        names[k] = name
        used.add(name)
    new_top: dict[str, Any] = {}
    for key, val in top.items():
        if key != outer:
            new_top[key] = val
            continue
        for k, v in inner.items():
            v = copy.deepcopy(v)
            if (
                isinstance(v, dict)
                and "description" not in v
                and sub.get("description")
            ):
                v["description"] = sub["description"]
            new_top[names[k]] = v
    out["properties"] = new_top
    req = [k for k in out.get("required") or [] if k != outer]
    if outer_req:
        req += [names[k] for k in inner if k in inner_req]
    if req:
        out["required"] = req
    else:
        out.pop("required", None)
    return out, {(outer, k): (names[k],) for k in inner}


def enum_leaves(schema: Mapping[str, Any], prefix: Path = ()) -> list[Path]:
    """Paths of string-enum parameters (direct, or as array items)."""
    out = []
    for key, sub in props(schema).items():
        path = (*prefix, key)
        if is_struct(sub):
            out += enum_leaves(sub, path)
        elif enum_node(sub) is not None:
            out.append(path)
    return out


def enum_node(sub: Any) -> dict | None:
    """The node holding the string enum of a parameter schema, if any."""
    if not isinstance(sub, Mapping):
        return None
    for node in (sub, sub.get("items")):
        vals = node.get("enum") if isinstance(node, Mapping) else None
        if isinstance(vals, list) and vals and all(isinstance(v, str) for v in vals):
            return node
    return None


def at(schema: Mapping[str, Any], path: Path) -> Any:
    node: Any = schema
    for key in path:
        node = props(node).get(key)
    return node


def respell_enum(schema: Mapping[str, Any], path: Path, table: Mapping[str, str]):
    """The schema with the enum at ``path`` (and its default) respelt."""
    out = copy.deepcopy(dict(schema))
    node: Any = out
    for key in path:
        node = node["properties"][key]
    target = enum_node(node)
    target["enum"] = [table.get(v, v) for v in target["enum"]]
    for n in (node, target):
        if isinstance(n.get("default"), str):
            n["default"] = table.get(n["default"], n["default"])
    return out
