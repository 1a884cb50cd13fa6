"""The registry of the paper's tables: ``@register("main")`` over a builder."""

from __future__ import annotations

from collections.abc import Callable

from hat_jax.registry import Registry
from paper.render import Table
from paper.results import Sweep

Builder = Callable[[Sweep], Table]
TABLES: Registry[Builder] = Registry("table")


def register(name: str) -> Callable[[Builder], Builder]:
    """Registers a table builder ``sweep -> Table`` under ``name``."""

    return TABLES.register(name)


def get(name: str) -> Builder:
    return TABLES.lookup(name)


def skipped_note(sweep: Sweep) -> list[str]:
    """A footnote naming the runs left out (not done), if any."""
    if not sweep.skipped:
        return []
    names = ", ".join(f"{n} ({why})" for n, why in sweep.skipped)
    return [f"Runs not done, left out: {names}."]
