"""The registry of the paper's tables: ``@register("main")`` over a builder."""

from __future__ import annotations

from collections.abc import Callable

from paper.render import Table
from paper.results import Sweep

Builder = Callable[[Sweep], Table]
TABLES: dict[str, Builder] = {}


def register(name: str) -> Callable[[Builder], Builder]:
    """Registers a table builder ``sweep -> Table`` under ``name``."""

    def wrap(fn: Builder) -> Builder:
        if name in TABLES:
            raise ValueError(f"table {name!r} is already registered")
        TABLES[name] = fn
        return fn

    return wrap


def get(name: str) -> Builder:
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; have {', '.join(TABLES)}")
    return TABLES[name]


def skipped_note(sweep: Sweep) -> list[str]:
    """A footnote naming the runs left out (not done), if any."""
    if not sweep.skipped:
        return []
    names = ", ".join(f"{n} ({why})" for n, why in sweep.skipped)
    return [f"Runs not done, left out: {names}."]
