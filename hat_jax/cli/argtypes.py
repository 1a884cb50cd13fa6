"""argparse value types that refuse nonsense at the flag: ``--seed -1``, ``--timeout
inf``, ``--rate nan``, ``--concurrency ,`` are usage errors naming the flag, not a
numpy message or a hang later.

    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--timeout", type=finite(low=0, open_low=True), default=30.0)
    p.add_argument("--limit", type=count(low=1))
    p.add_argument("--concurrency", type=int_list(low=1), default="1")
    p.add_argument("--mesh", type=parsed(parse_mesh))  # its ValueError: usage error
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

SEED_MAX = 2**32 - 1  # numpy's SeedSequence and jax's PRNGKey both take this range


def _int(text: str) -> int:
    s = text.strip()
    if not s or not (s.isascii() and s.lstrip("+-").isdigit()) or len(s) > 20:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(s)


def count(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """An integer in ``[low, high]``."""

    def parse(text: str) -> int:
        v = _int(text)
        if v < low or (high is not None and v > high):
            upper = f"..{high}" if high is not None else " or more"
            raise argparse.ArgumentTypeError(
                f"expected an integer {low}{upper}, got {v}"
            )
        return v

    parse.__name__ = "integer"  # argparse names the type in "invalid integer value"
    return parse


seed = count(0, SEED_MAX)
seed.__name__ = "seed"


def finite(
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
) -> Callable[[str], float]:
    """A finite float in ``[low, high]`` (``(low, high]`` with ``open_low``)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number, got {text!r}"
            ) from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if low is not None and (v < low or (open_low and v == low)):
            op = ">" if open_low else ">="
            raise argparse.ArgumentTypeError(
                f"expected a number {op} {low:g}, got {v:g}"
            )
        if high is not None and v > high:
            raise argparse.ArgumentTypeError(
                f"expected a number <= {high:g}, got {v:g}"
            )
        return v

    parse.__name__ = "number"
    return parse


def int_list(low: int = 0, high: int | None = None) -> Callable[[str], list[int]]:
    """A comma-separated, non-empty list of integers in ``[low, high]``."""
    one = count(low, high)

    def parse(text: str) -> list[int]:
        parts = text.split(",")
        if not text.strip() or any(not p.strip() for p in parts):
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers like 1,4,8, got {text!r}"
            )
        return [one(p) for p in parts]

    parse.__name__ = "integer list"
    return parse


def nonblank(text: str) -> str:
    """A string with something other than whitespace in it."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty value, got {text!r}")
    return text


def parsed(parse: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse type from a parser that raises ValueError (its message kept)."""

    def typed(text: str):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    typed.__name__ = parse.__name__
    return typed
