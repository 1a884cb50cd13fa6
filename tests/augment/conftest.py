"""Shared fixtures: both builtin harnesses and their gold trajectories."""

import pytest

from augment.gold import gold_trajectories
from hat_jax.harness.builtin import BUILTIN
from hat_jax.harness.loader import load_harness


@pytest.fixture(scope="session")
def harnesses():
    return {name: load_harness(name) for name in BUILTIN}


@pytest.fixture(scope="session")
def golds(harnesses):
    return {name: gold_trajectories(h) for name, h in harnesses.items()}
