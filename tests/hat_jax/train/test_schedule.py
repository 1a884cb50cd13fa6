"""The learning-rate schedule against a brute-force recomputation (math.cos).

One cycle: linear warmup to lr, cosine to lr * end_lr_frac at total_steps.
`optim.cycles = k`: k equal cycles, cycle i peaking at lr * cycle_decay**i
(warm restarts; scale `compact_cycles` of experiments/configs/hat_tiny.py).
"""

from __future__ import annotations

import math

import ml_collections
import numpy as np
import pytest

from hat_jax.train.state import make_schedule
from hat_jax.train.workdir import RunConfigError, check_config


def _reference(step, lr, warmup, total, end_frac, cycles=1, decay=1.0):
    length = total // cycles
    i = min(step // length, cycles - 1)
    peak = lr * decay**i
    t = step - i * length
    if warmup and t < warmup:
        return peak * t / warmup
    frac = min((t - warmup) / (length - warmup), 1.0)
    end = peak * end_frac
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * frac))


def _optim(**kw):
    base = dict(lr=3e-3, warmup_steps=10, total_steps=3000, end_lr_frac=0.1)
    return ml_collections.ConfigDict(base | kw)


@pytest.mark.parametrize(
    "kw",
    [{}, {"cycles": 1, "cycle_decay": 0.5}, {"cycles": 2, "cycle_decay": 1 / 3}]
    + [{"cycles": 3, "cycle_decay": 1.0}, {"cycles": 2, "warmup_steps": 0}],
)
def test_schedule_equals_the_formula(kw):
    optim = _optim(**kw)
    sched = make_schedule(optim)
    steps = list(range(0, 3001, 7)) + [1499, 1500, 1501, 1510, 2999, 3000]
    cycles, decay = optim.get("cycles", 1), optim.get("cycle_decay", 1.0)
    warmup = optim.warmup_steps
    ref = [_reference(s, 3e-3, warmup, 3000, 0.1, cycles, decay) for s in steps]
    got = [float(sched(s)) for s in steps]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-9)


def test_two_cycles_restart_at_the_middle_with_a_lower_peak():
    sched = make_schedule(_optim(cycles=2, cycle_decay=1 / 3))
    assert float(sched(1499)) == pytest.approx(3e-4, rel=1e-3)  # end of cycle 1
    assert float(sched(1500)) == 0.0  # the second warmup starts
    assert float(sched(1510)) == pytest.approx(1e-3, rel=1e-5)  # its peak
    assert float(sched(3000)) == pytest.approx(1e-4, rel=1e-5)


@pytest.mark.parametrize("key,value", [("cycles", 0), ("cycle_decay", -0.5)])
def test_bad_cycles_are_refused_by_name(key, value):
    cfg = ml_collections.ConfigDict({"optim": _optim(**{key: value}).to_dict()})
    with pytest.raises(RunConfigError, match=f"optim.{key}"):
        check_config(cfg)
