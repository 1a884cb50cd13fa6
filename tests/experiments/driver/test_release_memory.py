"""The driver frees JAX's caches after a step only when the process is large."""

import jax
import jax.numpy as jnp

from experiments.driver.pipeline import release_memory, resident_bytes


def _cached():
    f = jax.jit(lambda x: x * 2 + 1)
    f(jnp.ones(3))
    assert f._cache_size() == 1
    return f


def test_a_small_process_keeps_its_compiled_functions():
    size = resident_bytes()
    assert size is not None and 0 < size < 64 << 30
    f = _cached()
    assert release_memory(above=size + (1 << 30)) is False
    assert f._cache_size() == 1


def test_a_large_process_clears_them():
    f = _cached()
    assert release_memory(above=0) is True
    assert f._cache_size() == 0
