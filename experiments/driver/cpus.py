"""CPU pinning: a `hat run` process on its own cores (`hat sweep --pin-cores`).

XLA:CPU sizes its thread pool to the CPUs the process may run on, so two runs
pinned to one core each share a 2-core machine without contending; a small
model's step gains little from a second core, so two pinned runs train more
tokens a second than one run on both (measured: docs/results/hat_tiny_pilot.md,
fifteenth pilot).

    slices([0, 1, 2, 3], 2) == [(0, 1), (2, 3)]
    pin(parse("0-1,3"))  # before JAX starts its backend
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

__all__ = ["allowed", "parse", "pin", "slices"]


def allowed() -> list[int]:
    """The CPUs this process may run on, ascending."""
    return sorted(os.sched_getaffinity(0))


def parse(text: str) -> tuple[int, ...]:
    """``"0,2-3"`` -> ``(0, 2, 3)``; an argparse type (usage error otherwise)."""
    out: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not (lo.isdigit() and (not sep or hi.isdigit())) or len(part) > 20:
            raise argparse.ArgumentTypeError(
                f"expected CPU numbers like 0,2-3, got {text!r}"
            )
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b - a > 4096:
            raise argparse.ArgumentTypeError(f"bad CPU range {part.strip()!r}")
        out.update(range(a, b + 1))
    return tuple(sorted(out))


def slices(cpus: Sequence[int], workers: int) -> list[tuple[int, ...]]:
    """``cpus`` cut into ``workers`` disjoint, contiguous, near-equal slices."""
    cpus = sorted(cpus)
    if not 1 <= workers <= len(cpus):
        raise ValueError(
            f"cannot pin {workers} workers to {len(cpus)} CPUs ({cpus}): "
            "use at most one worker per CPU"
        )
    q, r = divmod(len(cpus), workers)
    out, i = [], 0
    for w in range(workers):
        n = q + (w < r)
        out.append(tuple(cpus[i : i + n]))
        i += n
    return out


def pin(cpus: Sequence[int]) -> None:
    """Runs this process (and the threads it starts later) on ``cpus`` only."""
    have = allowed()
    extra = sorted(set(cpus) - set(have))
    if not cpus or extra:
        raise ValueError(f"--cpus {list(cpus)}: this process may run only on {have}")
    os.sched_setaffinity(0, cpus)
