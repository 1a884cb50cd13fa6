"""Shared fixtures of the simulator tests."""

import pytest

from hat_jax.harness import load_harness
from sim.datasets import generate, make_cases


@pytest.fixture(scope="session")
def compact_golds():
    """The tiny world's pilots' setting: taolive_v1 rendered compact, 96 train
    cases, and their golds with compact results and reply plans.

    Returns (harness, cases, generate kwargs, golds)."""
    h = load_harness("taolive_v1").in_format("compact")
    cases = make_cases("train", 0, 96)
    kw = dict(compact_results=True, reply_plan=True)
    return h, cases, kw, generate(h, cases, **kw)


@pytest.fixture(scope="session")
def compact_first_golds(compact_golds):
    """The same cases' golds with ``skills_first`` (skills read before the calls)."""
    h, cases, kw, _ = compact_golds
    return generate(h, cases, skills_first=True, **kw)
