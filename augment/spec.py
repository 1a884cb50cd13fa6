"""Spec strings: ops composed left to right, e.g. ``"rename_tools|format(xml)"``.

Grammar: ``op ( "|" op )*``; an op is ``name`` or ``name(args)`` with
comma-separated args, each ``key=value`` or a bare value for the op's first
parameter. Values: ``true``/``false``, ASCII integers and floats (finite, at
most ``hat_jax.registry.MAX_NUMBER`` characters; the shared parser,
``hat_jax.registry``), or strings (bare, or quoted with ``"``/``'``;
``''`` is the default said explicitly), converted to the type of the
parameter's default. Parentheses and quotes must balance, and a spec holds at
most ``MAX_OPS`` ops in ``MAX_SPEC`` characters. Every problem is a ValueError
naming its position: ``spec op 2 ('format(foo)'): ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from typing import Any

import numpy as np

from augment.ops import get_op
from hat_jax.harness.mapping import Mapping
from hat_jax.harness.spec import Harness
from hat_jax.harness.trajectory import Trajectory
from hat_jax.registry import CALL, literal, split_top, unbalanced

MAX_SPEC = 4000  # characters in a spec
MAX_OPS = 64  # ops in a spec
SHOWN_CHOICES = 8  # choices an error message lists


def _convert(value: Any, default: Any, key: str) -> Any:
    if value is None:  # `literal` reads a bare none as None; ops take no None
        value = "none"
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


def _short(text: str, n: int = 60) -> str:
    """``repr`` of ``text``, cut to about ``n`` characters."""
    t = text.strip()
    return repr(t) if len(t) <= n else repr(t[: n - 3]) + "..."


def _choice_list(choices: tuple[Any, ...]) -> str:
    shown = [c for c in choices if c != ""]
    head = ", ".join(repr(c) for c in shown[:SHOWN_CHOICES])
    more = len(shown) - SHOWN_CHOICES
    return f"[{head}]" if more <= 0 else f"[{head}, ... ({len(shown)} in all)]"


def _parse_op(text: str) -> tuple[str, dict[str, Any]]:
    m = CALL.match(text)
    if not m:
        why = unbalanced(text)
        raise ValueError(
            "expected name or name(key=value, ...)" + (f": {why}" if why else "")
        )
    op = get_op(m.group(1))
    params: dict[str, Any] = {}
    raw = m.group(2)
    args = split_top(raw, ",", args=True) if raw is not None and raw.strip() else []
    for i, arg in enumerate(args):
        if not arg.strip():
            raise ValueError("empty argument (two ',' in a row?)")
        key, eq, value = arg.partition("=")
        if not eq or not key.strip().isidentifier() or literal(key) != key.strip():
            if i > 0 or not op.defaults:
                raise ValueError(f"bare value {_short(arg)}: use key=value")
            key, value = next(iter(op.defaults)), arg
        key = key.strip()
        if key not in op.defaults:
            have = ", ".join(op.defaults) or "none"
            raise ValueError(f"{op.name} has no param {key!r} (params: {have})")
        if key in params:
            raise ValueError(f"param {key!r} given twice")
        if not value.strip():  # a quoted '' is the default, said explicitly
            raise ValueError(f"{key}: no value after '=' (leave {key} out, or '')")
        try:
            parsed = literal(value)
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
        val = _convert(parsed, op.defaults[key], key)
        if key in op.choices and val not in op.choices[key]:
            choices = _choice_list(op.choices[key])
            raise ValueError(f"{key}={_short(str(val))}: expected one of {choices}")
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
    if len(spec) > MAX_SPEC:
        raise ValueError(f"spec: {len(spec)} characters, expected at most {MAX_SPEC}")
    parts = split_top(spec, "|")
    if len(parts) > MAX_OPS:
        raise ValueError(f"spec: {len(parts)} ops, expected at most {MAX_OPS}")
    out = []
    for i, part in enumerate(parts, 1):
        try:
            if not part.strip():
                raise ValueError("empty op (two '|' in a row?)")
            out.append(_parse_op(part))
        except ValueError as e:
            raise ValueError(f"spec op {i} ({_short(part)}): {e}") from None
    return out


def spec_arg(text: str) -> str:
    """argparse type of ``--ops``: a non-blank spec that parses."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"expected an op spec like 'rename_tools|format(xml)', got {text!r}"
        )
    try:
        parse_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


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
