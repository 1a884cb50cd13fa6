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

One row's patterns share a budget (:func:`row_budget`): at most
``ROW_PATTERN_SIZE`` regex items compiled (``regex`` expands a counted repeat
``a{m}`` into m copies, so ``a{1000000000}`` would fill memory) and at most
``ROW_MATCH_BUDGET_S`` seconds of matching per response, however many
instructions and words the row has.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import regex

from hat_jax.registry import Registry

Check = Callable[[str], bool]
Builder = Callable[..., Check]

_REGISTRY: Registry[Builder] = Registry("IFEval instruction")

LESS_THAN, AT_LEAST = "less than", "at least"

# Seconds one match of a row-supplied pattern may take; read at call time.
# Keyword searches on a response take microseconds; only a catastrophically
# backtracking pattern gets near this.
MATCH_TIMEOUT_S = 1.0
# Seconds all matches of one row's patterns on one response may take together.
ROW_MATCH_BUDGET_S = 2.0
# Regex items one row's patterns may compile to, all together (a few MB).
ROW_PATTERN_SIZE = 20_000
# The largest count an instruction may ask for (IFEval's largest is 1200 words).
COUNT_MAX = 10**6

_clock = time.monotonic  # read at call time (tests inject a clock)

# A counted repeat `{m}`, `{m,}`, `{,n}`, `{m,n}` as `regex` parses one outside
# verbose mode; and an inline flag group that turns verbose mode on, in which
# `regex` also skips spaces and comments inside the braces.
_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_VERBOSE = re.compile(r"\(\?[\^\w-]*x")


class MatchTimeout(ValueError):
    """A row-supplied pattern did not finish within ``MATCH_TIMEOUT_S``, or the
    row's patterns ran past ``ROW_MATCH_BUDGET_S``."""


class _RowBudget:
    def __init__(self) -> None:
        self.size_left = ROW_PATTERN_SIZE
        self.deadline: float | None = None  # set by the first match
        self.matches = 0


_ROW: contextvars.ContextVar[_RowBudget | None] = contextvars.ContextVar(
    "ifeval_row_budget", default=None
)


@contextlib.contextmanager
def row_budget() -> Iterator[None]:
    """Patterns compiled and matched inside share one row's budget."""
    token = _ROW.set(_RowBudget())
    try:
        yield
    finally:
        _ROW.reset(token)


def size_bound(pattern: str) -> int:
    """An upper bound on the items ``regex`` compiles ``pattern`` to: its length
    times the count of every counted repeat in it (nested or not)."""
    size = max(len(pattern), 1)
    for m in _COUNTED.finditer(pattern):
        counts = [int(d) if len(d) <= 9 else 10**9 for d in m.groups() if d]
        size *= max(counts, default=1) or 1
        if size > ROW_PATTERN_SIZE:
            break
    return size


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
      ValueError: ``ID: WHAT 'SOURCE' ...``: not a valid regular expression,
        verbose mode, too big for the row's budget, or matches the empty string.
    """

    def __init__(
        self,
        instruction_id: str,
        what: str,
        source: str,
        pattern: str | None = None,
        flags: int = 0,
    ):
        shown = repr(source) if len(source) <= 60 else repr(source[:57]) + "..."
        self.label = f"{instruction_id}: {what} {shown}"
        full = source if pattern is None else pattern
        if _VERBOSE.search(full) or _VERBOSE.search(source):
            raise ValueError(f"{self.label} turns on verbose mode (?x); not allowed")
        budget = _ROW.get()
        left = budget.size_left if budget else ROW_PATTERN_SIZE
        size = size_bound(full)
        if size > left:
            raise ValueError(
                f"{self.label} is too big: its length times its counted repeats "
                f"{{m,n}} is {size} or more, over the {left} regex items left of "
                f"the row's {ROW_PATTERN_SIZE}"
            )
        if budget:
            budget.size_left -= size
        try:
            self._re = regex.compile(full, flags, cache_pattern=False)
            alone = (
                self._re
                if pattern is None
                else regex.compile(source, flags, cache_pattern=False)
            )
            empty = alone.search("", timeout=MATCH_TIMEOUT_S) is not None
        except (regex.error, OverflowError, RecursionError, TimeoutError) as e:
            raise ValueError(
                f"{self.label} is not a valid regular expression ({e})"
            ) from None
        if empty:
            raise ValueError(
                f"{self.label} matches the empty string (it would be found in "
                "every response)"
            )

    def _run(self, method: str, text: str):
        budget = _ROW.get()
        timeout = MATCH_TIMEOUT_S
        if budget is not None:
            now = _clock()
            if budget.deadline is None:
                budget.deadline = now + ROW_MATCH_BUDGET_S
            left = budget.deadline - now
            if left <= 0:
                raise MatchTimeout(self._over_budget(budget))
            budget.matches += 1
            timeout = min(timeout, left)
        try:
            return getattr(self._re, method)(text, timeout=timeout)
        except TimeoutError:
            if budget is not None and timeout < MATCH_TIMEOUT_S:
                raise MatchTimeout(self._over_budget(budget)) from None
            raise MatchTimeout(
                f"{self.label} did not finish matching within {MATCH_TIMEOUT_S} s "
                "(a catastrophically backtracking pattern?)"
            ) from None

    def _over_budget(self, budget: _RowBudget) -> str:
        return (
            f"the row's patterns ran past their {ROW_MATCH_BUDGET_S} s budget per "
            f"response after {budget.matches} matches (at {self.label})"
        )

    def search(self, text: str):
        return self._run("search", text)

    def findall(self, text: str) -> list:
        return self._run("findall", text)

    def split(self, text: str) -> list[str]:
        return self._run("split", text)


def register(instruction_id: str) -> Callable[[Builder], Builder]:
    return _REGISTRY.register(instruction_id)


def names() -> list[str]:
    _load_builtin()
    return list(_REGISTRY.names())


def build(instruction_id: str, kwargs: Mapping[str, Any] | None = None) -> Check:
    """The predicate for one instruction; keys whose value is None are ignored.

    Raises:
      ValueError: an unknown id, or kwargs the instruction does not take.
    """
    _load_builtin()
    if instruction_id not in _REGISTRY:
        raise ValueError(f"unknown IFEval instruction {value_shown(instruction_id)}")
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


def value_shown(value: Any) -> str:
    """A kwarg's value for a message: its repr, cut to 60 characters."""
    if isinstance(value, int) and abs(value) >= 10**40:
        return "an integer of over 40 digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compare(count: int, threshold: int, relation: str) -> bool:
    return count < threshold if relation == LESS_THAN else count >= threshold


def check_relation(instruction_id: str, relation: str, name: str = "relation") -> None:
    if relation not in (LESS_THAN, AT_LEAST):
        raise ValueError(
            f"{instruction_id}: {name} must be {LESS_THAN!r} or {AT_LEAST!r}, "
            f"got {value_shown(relation)}"
        )


def check_count(instruction_id: str, name: str, value: Any) -> None:
    """A count kwarg: an integer in ``0..COUNT_MAX`` (not a boolean or float)."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or not 0 <= value <= COUNT_MAX
    ):
        raise ValueError(
            f"{instruction_id}: {name} must be a non-negative integer up to "
            f"{COUNT_MAX}, got {value_shown(value)}"
        )


def _load_builtin() -> None:
    # The checker modules register themselves on import.
    from hat_jax.eval.ifeval import checks_content, checks_format  # noqa: F401
