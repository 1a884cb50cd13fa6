"""Step kinds chosen by name: ``@register("train")`` over a step function.

A step function is ``run(params, out, *, progress) -> info``: ``params`` is the
step's spec with references resolved to paths, ``out`` its folder (created,
possibly holding a partial earlier attempt to resume from), ``info`` a small
JSON-able dict recorded in ``done.json``. A kind may add a ``fingerprint(spec)``
folded into the step's hash (e.g. the resolved stage config, so that a changed
default in a config file makes a new folder), and its ``code``: the source
files it runs (`experiments.driver.codehash` entries, or a function of the spec
giving them), whose hash is folded in too, so that an edited loss or judge
re-runs the steps that use it (and, through their hashes, what follows them).
A kind without ``code`` (the tests' toy kinds) is keyed by its spec alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hat_jax.registry import Registry

Code = Sequence[str] | Callable[[dict[str, Any]], Sequence[str]]


@dataclass(frozen=True)
class StepKind:
    name: str
    run: Callable[..., dict[str, Any] | None]
    fingerprint: Callable[[dict[str, Any]], Any] | None = None
    version: int = 1  # bump when a kind's output changes for the same spec
    code: Code = ()  # codehash entries, or spec -> entries

    def code_entries(self, spec: dict[str, Any]) -> tuple[str, ...]:
        """The code entries of a step of this kind with ``spec``."""
        return tuple(self.code(spec) if callable(self.code) else self.code)


_KINDS: Registry[StepKind] = Registry("step kind")


def register(
    name: str,
    *,
    fingerprint: Callable[[dict[str, Any]], Any] | None = None,
    version: int = 1,
    code: Code = (),
):
    """Registers the decorated step function as kind ``name``."""

    def wrap(fn):
        _KINDS.add(name, StepKind(name, fn, fingerprint, version, code))
        return fn

    return wrap


def get(name: str) -> StepKind:
    """The step kind ``name``; importing the built-in kinds on first use."""
    from experiments.driver import steps  # noqa: F401  (registers the kinds)

    return _KINDS.lookup(name)
