"""Modelled tool latency for the replay: the simulator's tools answer at once.

A real deployment's product and order tools take tens to hundreds of milliseconds
a call. The replay can charge each backend tool call a modelled delay: lognormal
with a given median and log-standard-deviation (``sigma`` 0: the median every
time), drawn from a generator seeded by (seed, turn, call), so both clocks and
every run see the same delays. The numbers are assumptions a user sets
(``hat replay --tool-latency-ms``), not measurements; the default is none.

On the virtual clock (``serving.schedule.run_virtual``) a delay advances the turn's
clock; on the wall clock (``run_real``) the turn's thread sleeps it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from hat_jax.harness.backend import ToolContext, ToolOutcome


@dataclasses.dataclass(frozen=True)
class ToolLatency:
    """Seconds a tool call takes: ``median_s * exp(sigma * N(0, 1))``."""

    median_s: float = 0.0
    sigma: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for name in ("median_s", "sigma"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0 <= v <= 60):
                raise ValueError(f"tool latency {name} must be in [0, 60], got {v}")

    def delay(self, turn: int, call: int) -> float:
        """The modelled seconds of call ``call`` in turn ``turn``."""
        if self.median_s == 0:
            return 0.0
        z = np.random.default_rng((self.seed, turn, call)).standard_normal()
        return float(self.median_s * math.exp(self.sigma * z))


class TimedBackend:
    """A tool backend whose calls each charge a modelled delay to ``charge``."""

    def __init__(
        self, inner, latency: ToolLatency, turn: int, charge: Callable[[float], Any]
    ):
        self.inner, self.latency, self.turn, self.charge = inner, latency, turn, charge
        self.calls = 0

    def call(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext
    ) -> ToolOutcome:
        out = self.inner.call(name, arguments, context=context)
        self.charge(self.latency.delay(self.turn, self.calls))
        self.calls += 1
        return out
