"""Small name -> function registries with parameters in the name: ``"jsd(0.5)"``.

A config names a part (``"reverse_kl"``, ``"jsd(beta=0.25)"``, ``"gdpo(renorm=none)"``)
and the registry returns the function with those keyword arguments bound. Arguments
are parsed as literals (numbers, ``true``/``false``, ``none``, bare strings), never
evaluated. Positional arguments bind, in order, to the function's keyword-only
parameters that come after the ones the caller always passes.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

_NAME = re.compile(r"^\s*([A-Za-z_][\w\-]*)\s*(?:\((.*)\))?\s*$")


def _literal(text: str) -> Any:
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text.strip("'\"")


def parse_name(spec: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """Splits ``"name(a, k=b)"`` into ``("name", (a,), {"k": b})``."""
    match = _NAME.match(spec)
    if match is None:
        raise ValueError(f"cannot parse {spec!r}; expected 'name' or 'name(args)'")
    name, inner = match.group(1), match.group(2)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for part in (p for p in (inner or "").split(",") if p.strip()):
        if "=" in part:
            key, value = part.split("=", 1)
            kwargs[key.strip()] = _literal(value)
        elif kwargs:
            raise ValueError(f"positional argument after keyword in {spec!r}")
        else:
            args.append(_literal(part))
    return name, tuple(args), kwargs


class Registry:
    """A registry of functions of one kind (divergences, advantages, ...).

    Args:
      kind: what is registered, for error messages.
      fixed: keyword-only parameters the caller always passes itself; the remaining
        keyword-only parameters are the ones a name string may set.
    """

    def __init__(self, kind: str, fixed: tuple[str, ...] = ()):
        self.kind = kind
        self.fixed = frozenset(fixed)
        self._fns: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._fns:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._fns[name] = fn
            return fn

        return register

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._fns))

    def params(self, name: str) -> tuple[str, ...]:
        """The keyword-only parameters a name string may set, in order."""
        sig = inspect.signature(self._raw(name))
        return tuple(
            p.name
            for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in self.fixed
        )

    def _raw(self, name: str) -> Callable[..., Any]:
        if name not in self._fns:
            raise ValueError(f"unknown {self.kind} {name!r}; have {self.names()}")
        return self._fns[name]

    def get(self, spec: str) -> Callable[..., Any]:
        """The function named by ``spec`` with the parameters in ``spec`` bound."""
        name, args, kwargs = parse_name(spec)
        fn = self._raw(name)
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
