"""Instruction checkers chosen by IFEval instruction id.

A checker is registered as a builder: it takes the instruction's kwargs (as the
prompt file gives them) and returns a predicate over a response. Builders
validate their arguments up front, so a bad prompt row fails when loaded, not
halfway through scoring.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[str], bool]
Builder = Callable[..., Check]

_REGISTRY: dict[str, Builder] = {}

LESS_THAN, AT_LEAST = "less than", "at least"


def register(instruction_id: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        if instruction_id in _REGISTRY:
            raise ValueError(f"instruction {instruction_id!r} registered twice")
        _REGISTRY[instruction_id] = fn
        return fn

    return deco


def names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def build(instruction_id: str, kwargs: Mapping[str, Any] | None = None) -> Check:
    """The predicate for one instruction; keys whose value is None are ignored.

    Raises:
      ValueError: an unknown id, or kwargs the instruction does not take.
    """
    _load_builtin()
    if instruction_id not in _REGISTRY:
        raise ValueError(f"unknown IFEval instruction {instruction_id!r}")
    builder = _REGISTRY[instruction_id]
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    params = inspect.signature(builder).parameters
    missing = [k for k, p in params.items() if p.default is p.empty and k not in given]
    extra = sorted(set(given) - set(params))
    if missing or extra:
        raise ValueError(
            f"{instruction_id}: expected kwargs {sorted(params)}, got {sorted(given)}"
        )
    return builder(**given)


def compare(count: int, threshold: int, relation: str) -> bool:
    return count < threshold if relation == LESS_THAN else count >= threshold


def check_relation(instruction_id: str, relation: str) -> None:
    if relation not in (LESS_THAN, AT_LEAST):
        raise ValueError(
            f"{instruction_id}: relation must be {LESS_THAN!r} or {AT_LEAST!r}, "
            f"got {relation!r}"
        )


def check_count(instruction_id: str, name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(
            f"{instruction_id}: {name} must be a non-negative integer, got {value!r}"
        )


def _load_builtin() -> None:
    # The checker modules register themselves on import.
    from hat_jax.eval.ifeval import checks_content, checks_format  # noqa: F401
