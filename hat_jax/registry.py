"""The one registry and the one ``name(key=value, ...)`` parser of the project.

Every part chosen by name (a divergence, an advantage, a reward, a suite, a
hook, an augmentation op, a tool-call format, a driver step kind, an editor,
...) lives in a `Registry`: names are unique, an unknown name is an error that
lists the known ones, and a function registry binds the parameters a spec
string gives (``"jsd(0.5)"``, ``"gdpo(renorm=none)"``).

Spec grammar (`parse_call`): ``name`` or ``name(args)``; args are comma-
separated, each ``key=value`` or a bare value; commas inside quotes do not
split, a parenthesis inside the arguments is an error. Values (`literal`):
``true``/``false``, ``none``, ASCII integers and floats (finite, at most
`MAX_NUMBER` characters), strings quoted with ``"`` or ``'``, else the bare
text. Values are parsed, never evaluated.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

__all__ = [
    "CALL",
    "Registry",
    "literal",
    "parse_call",
    "parse_name",
    "split_top",
    "unbalanced",
]

T = TypeVar("T")
CALL = re.compile(r"^\s*([A-Za-z_][\w\-]*)\s*(?:\((.*)\))?\s*$", re.S)
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
MAX_NUMBER = 30  # characters in a number


def split_top(
    text: str, sep: str, *, args: bool = False, brackets: bool = False
) -> list[str]:
    """Splits on ``sep`` outside quotes and parentheses (and, with ``brackets``,
    outside ``[]`` and ``{}``: config values such as ``b=[1,2]``).

    Raises:
      ValueError: with ``args`` (a call's arguments), a parenthesis outside
        quotes or an unclosed quote.
    """
    opening, closing = ("([{", ")]}") if brackets else ("(", ")")
    out, cur, quote, depth = [], [], None, 0
    for col, ch in enumerate(text, 1):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "()" and args:
            raise ValueError(f"unexpected {ch!r} at column {col} of the arguments")
        elif ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if quote and args:
        raise ValueError(f"unclosed quote {quote} in the arguments")
    out.append("".join(cur))
    return out


def unbalanced(text: str) -> str:
    """What is unbalanced in ``text`` (parentheses outside quotes, quotes), or ""."""
    quote, depth = None, 0
    for col, ch in enumerate(text, 1):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
            if depth < 0:
                return f"unbalanced ')' at column {col}"
    if quote:
        return f"unclosed quote {quote}"
    return "unbalanced '(': a ')' is missing" if depth else ""


def literal(text: str) -> Any:
    """A value's Python form (module docstring): never evaluated."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if _INT.fullmatch(t) or _FLOAT.fullmatch(t):
        if len(t) > MAX_NUMBER:
            raise ValueError(f"number {t[:MAX_NUMBER]}... is too long")
        value = int(t) if _INT.fullmatch(t) else float(t)
        if not math.isfinite(value):
            raise ValueError(f"number {t} is out of range")
        return value
    return t


def parse_call(text: str) -> tuple[str, list[str]]:
    """``"name(a, k=b)"`` -> ``("name", ["a", " k=b"])``: the raw arguments.

    Raises:
      ValueError: not a name or a call, saying what is unbalanced.
    """
    m = CALL.match(text)
    if not m:
        why = unbalanced(text)
        raise ValueError(
            f"cannot parse {text!r}; expected 'name' or 'name(args)'"
            + (f": {why}" if why else "")
        )
    raw = m.group(2)
    args = split_top(raw, ",", args=True) if raw is not None and raw.strip() else []
    return m.group(1), args


def parse_name(spec: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """``"name(a, k=b)"`` -> ``("name", (a,), {"k": b})``, values `literal`."""
    name, raw = parse_call(spec)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for part in raw:
        if not part.strip():
            raise ValueError(f"empty argument in {spec!r} (two ',' in a row?)")
        key, eq, value = part.partition("=")
        if eq and key.strip().isidentifier():
            kwargs[key.strip()] = literal(value)
        elif kwargs:
            raise ValueError(f"positional argument after keyword in {spec!r}")
        else:
            args.append(literal(part))
    return name, tuple(args), kwargs


class Registry(MutableMapping[str, T], Generic[T]):
    """Named things of one kind: unique names, errors that list the known ones.

    Args:
      kind: what is registered, for messages ("reward", "suite", ...).
      fixed: for a registry of functions, the keyword-only parameters the caller
        always passes itself; `bind(spec)` may set the other keyword-only ones.
    """

    def __init__(self, kind: str, fixed: tuple[str, ...] = ()):
        self.kind = kind
        self.fixed = frozenset(fixed)
        self._items: dict[str, T] = {}

    def add(self, name: str, value: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = value
        return value

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator: ``@REG.register("name")``."""
        return lambda value: self.add(name, value)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._items))

    def __getitem__(self, name: str) -> T:
        if name not in self._items:
            raise KeyError(f"unknown {self.kind} {name!r}; have {list(self.names())}")
        return self._items[name]

    def lookup(self, name: str) -> T:
        """`self[name]`, with a ValueError (not a KeyError) for an unknown name."""
        if name not in self._items:
            raise ValueError(f"unknown {self.kind} {name!r}; have {list(self.names())}")
        return self._items[name]

    def __setitem__(self, name: str, value: T) -> None:
        """Sets or replaces `name` unchecked: for tests (`monkeypatch.setitem`);
        code registers with `add` / `register`."""
        self._items[name] = value

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def params(self, name: str) -> tuple[str, ...]:
        """The keyword-only parameters a spec may set, in order."""
        sig = inspect.signature(self.lookup(name))
        return tuple(
            p.name
            for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in self.fixed
        )

    def bind(self, spec: str) -> Any:
        """The function named by ``spec`` with the parameters in ``spec`` bound."""
        name, args, kwargs = parse_name(spec)
        fn = self.lookup(name)
        allowed = self.params(name)
        if len(args) > len(allowed):
            raise ValueError(f"{spec!r}: {name} takes parameters {allowed}")
        bound = dict(zip(allowed, args))
        for key, value in kwargs.items():
            if key not in allowed or key in bound:
                raise ValueError(f"{spec!r}: bad parameter {key!r}; have {allowed}")
            bound[key] = value
        sig = inspect.signature(fn)
        missing = [
            p
            for p in allowed
            if p not in bound and sig.parameters[p].default is inspect.Parameter.empty
        ]
        if missing:
            raise ValueError(f"{spec!r}: {name} needs parameters {missing}")
        if not bound:
            return fn
        return functools.update_wrapper(functools.partial(fn, **bound), fn)
