"""The one answer to "does this decoded JSON value have this JSON-Schema type".

JSON Schema (draft 2020-12, validation section 6.1.1) types decoded values:
``null``, ``boolean``, ``integer``, ``number``, ``string``, ``array``,
``object``. An integer is any number with a zero fractional part, so ``3.0``
is an integer as well as a number; a boolean is never an integer or a number
(Python's ``True == 1`` notwithstanding). The harness's schema validator
(``hat_jax.harness.json_schema``) and the tool-call parser
(``hat_jax.text.toolcall``) both ask here, so a tool call is never valid in one
and a type error in the other. It sits below both packages (the harness
imports the text package, not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["JSON_TYPES", "has_type", "type_of"]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_integer(v: Any) -> bool:
    if isinstance(v, float):
        return v.is_integer()  # False for inf and nan
    return isinstance(v, int) and not isinstance(v, bool)


_CHECKS: dict[str, Callable[[Any], bool]] = {  # in the order messages list them
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
JSON_TYPES = tuple(_CHECKS)


def has_type(value: Any, name: str) -> bool:
    """Whether decoded JSON ``value`` is of JSON-Schema type ``name``; False for a
    name that is not one of ``JSON_TYPES``."""
    check = _CHECKS.get(name) if isinstance(name, str) else None
    return check is not None and check(value)


def type_of(value: Any) -> str:
    """The most specific JSON-Schema type of ``value`` (``3.0`` is "integer"),
    or the Python type's name for a value JSON cannot hold, for messages."""
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _CHECKS[name](value):
            return name
    return type(value).__name__
