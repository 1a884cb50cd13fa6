"""Spec strings: ops composed left to right, e.g. ``"rename_tools|format(xml)"``.

Grammar: ``op ( "|" op )*``; an op is ``name`` or ``name(args)`` with
comma-separated args, each ``key=value`` or a bare value for the op's first
parameter. Values: ``true``/``false``, integers, floats, or strings (bare, or
quoted with ``"``/``'``), converted to the type of the parameter's default. Every
problem is a ValueError naming its position: ``spec op 2 ('format(foo)'): ...``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from augment.ops import get_op
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.spec import Harness
from hat_jax.harness.trajectory import Trajectory

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def _split(text: str, sep: str) -> list[str]:
    """Splits on ``sep`` outside quotes and parentheses."""
    out, cur, quote, depth = [], [], None, 0
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def _literal(text: str) -> Any:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for kind in (int, float):
        try:
            return kind(t)
        except ValueError:
            pass
    return t


def _convert(value: Any, default: Any, key: str) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{key}: expected true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key}: expected an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        return value if isinstance(value, str) else str(value)
    return value


def _parse_op(text: str) -> tuple[str, dict[str, Any]]:
    m = _CALL.match(text)
    if not m:
        raise ValueError("expected name or name(key=value, ...)")
    op = get_op(m.group(1))
    params: dict[str, Any] = {}
    raw = m.group(2)
    args = [a for a in _split(raw, ",") if a.strip()] if raw is not None else []
    for i, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        if not eq or _literal(key) != key.strip() or not key.strip().isidentifier():
            if i > 0 or not op.defaults:
                raise ValueError(f"bare value {arg.strip()!r}: use key=value")
            key, value = next(iter(op.defaults)), arg
        key = key.strip()
        if key not in op.defaults:
            have = ", ".join(op.defaults) or "none"
            raise ValueError(f"{op.name} has no param {key!r} (params: {have})")
        if key in params:
            raise ValueError(f"param {key!r} given twice")
        val = _convert(_literal(value), op.defaults[key], key)
        if key in op.choices and val not in op.choices[key]:
            choices = [c for c in op.choices[key] if c != ""]
            raise ValueError(f"{key}={val!r}: expected one of {choices}")
        if key in op.ranges:
            lo, hi = op.ranges[key]
            if not lo <= val <= hi:
                raise ValueError(f"{key}={val!r}: expected {lo} to {hi}")
        params[key] = val
    return op.name, params


def parse_spec(spec: str) -> list[tuple[str, dict[str, Any]]]:
    """``"a|b(k=v)"`` -> ``[("a", {}), ("b", {"k": v})]``; "" is no ops."""
    if not isinstance(spec, str):
        raise ValueError(f"spec: expected a string, got {type(spec).__name__}")
    if not spec.strip():
        return []
    out = []
    for i, part in enumerate(_split(spec, "|"), 1):
        try:
            if not part.strip():
                raise ValueError("empty op (two '|' in a row?)")
            out.append(_parse_op(part))
        except ValueError as e:
            raise ValueError(f"spec op {i} ({part.strip()!r}): {e}") from None
    return out


def format_spec(ops: list[tuple[str, dict[str, Any]]]) -> str:
    """The spec string of parsed ops (``parse_spec(format_spec(x)) == x``)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return repr(v) if not re.fullmatch(r"[A-Za-z_][\w.\-]*", v) else v
        return repr(v)

    parts = []
    for name, params in ops:
        args = ",".join(f"{k}={value(v)}" for k, v in params.items())
        parts.append(f"{name}({args})" if args else name)
    return "|".join(parts)


def apply_spec(
    harness: Harness,
    trajectory: Trajectory | None,
    spec: str,
    seed: int,
) -> tuple[Harness, Trajectory | None, Mapping]:
    """Applies the ops of ``spec`` in order; op k draws from rng ``[seed, k]``.

    The result's version is tagged ``+hsa.<hash>`` so its id differs from the
    source's; the trajectory's ``harness_id`` follows.
    """
    ops = parse_spec(spec)
    h, t, mapping = harness, trajectory, Mapping.identity(harness)
    for i, (name, params) in enumerate(ops):
        rng = np.random.default_rng([int(seed), i])
        try:
            h, t, m = get_op(name)(h, t, rng, **params)
        except ValueError as e:
            raise ValueError(f"spec op {i + 1} ({name}): {e}") from None
        mapping = mapping.compose(m)
    if ops:
        tag = hashlib.sha1(f"{spec}#{seed}".encode()).hexdigest()[:8]
        h = h.replace(version=f"{harness.version}+hsa.{tag}")
        if t is not None:
            t.harness_id = h.id
    return h, t, mapping
