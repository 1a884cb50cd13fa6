"""Step kinds chosen by name: ``@register("train")`` over a step function.

A step function is ``run(params, out, *, progress) -> info``: ``params`` is the
step's spec with references resolved to paths, ``out`` its folder (created,
possibly holding a partial earlier attempt to resume from), ``info`` a small
JSON-able dict recorded in ``done.json``. A kind may add a ``fingerprint(spec)``
folded into the step's hash (e.g. the resolved stage config, so that a changed
default in a config file makes a new folder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StepKind:
    name: str
    run: Callable[..., dict[str, Any] | None]
    fingerprint: Callable[[dict[str, Any]], Any] | None = None
    version: int = 1  # bump when a kind's output changes for the same spec


_KINDS: dict[str, StepKind] = {}


def register(
    name: str,
    *,
    fingerprint: Callable[[dict[str, Any]], Any] | None = None,
    version: int = 1,
):
    """Registers the decorated step function as kind ``name``."""

    def wrap(fn):
        if name in _KINDS:
            raise ValueError(f"step kind {name!r} is registered twice")
        _KINDS[name] = StepKind(name, fn, fingerprint, version)
        return fn

    return wrap


def get(name: str) -> StepKind:
    """The step kind ``name``; importing the built-in kinds on first use."""
    from experiments.driver import steps  # noqa: F401  (registers the kinds)

    if name not in _KINDS:
        raise ValueError(f"unknown step kind {name!r}; have {sorted(_KINDS)}")
    return _KINDS[name]
