"""Instruction checkers chosen by IFEval instruction id.

A checker is registered as a builder: it takes the instruction's kwargs (as the
prompt file gives them) and returns a predicate over a response. Builders
validate their arguments up front, so a bad prompt row fails when loaded, not
halfway through scoring.

Patterns taken from a prompt row (keywords, forbidden words, markers) are
:class:`Pattern` objects: compiled by the builder (an invalid one is a
``ValueError`` naming the instruction) and matched with the ``regex`` package's
time bound, ``MATCH_TIMEOUT_S`` per call. A match that runs out of time raises
:class:`MatchTimeout` rather than giving a verdict: the instruction's outcome is
unknown, and the row's pattern is what needs fixing. Fixed patterns of our own
stay on ``re``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import regex

Check = Callable[[str], bool]
Builder = Callable[..., Check]

_REGISTRY: dict[str, Builder] = {}

LESS_THAN, AT_LEAST = "less than", "at least"

# Seconds one match of a row-supplied pattern may take; read at call time.
# Keyword searches on a response take microseconds; only a catastrophically
# backtracking pattern gets near this.
MATCH_TIMEOUT_S = 1.0


class MatchTimeout(ValueError):
    """A row-supplied pattern did not finish within ``MATCH_TIMEOUT_S``."""


class Pattern:
    """A regular expression from a prompt row, matched with a time bound.

    Args:
      instruction_id: for messages.
      what: what the pattern is, for messages (e.g. "keyword").
      source: the row's text, as given.
      pattern: the expression to compile (``source`` unless the builder
        wraps it).
      flags: ``regex`` flags.

    Raises:
      ValueError: ``ID: WHAT 'SOURCE' is not a valid regular expression``.
    """

    def __init__(
        self,
        instruction_id: str,
        what: str,
        source: str,
        pattern: str | None = None,
        flags: int = 0,
    ):
        self.label = f"{instruction_id}: {what} {source!r}"
        try:
            self._re = regex.compile(source if pattern is None else pattern, flags)
        except (regex.error, OverflowError, RecursionError) as e:
            raise ValueError(
                f"{self.label} is not a valid regular expression ({e})"
            ) from None

    def _run(self, method: str, text: str):
        try:
            return getattr(self._re, method)(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            raise MatchTimeout(
                f"{self.label} did not finish matching within {MATCH_TIMEOUT_S} s "
                "(a catastrophically backtracking pattern?)"
            ) from None

    def search(self, text: str):
        return self._run("search", text)

    def findall(self, text: str) -> list:
        return self._run("findall", text)

    def split(self, text: str) -> list[str]:
        return self._run("split", text)


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
