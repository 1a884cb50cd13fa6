"""A machine's physical limits, measured in the benchmark's own run.

The CPU changes between sessions (an Intel part with AMX one day, an AMD EPYC
another), so each benchmark measures what bounds it beside its own figures:

- `matmul_gflops`: the fp32 matmul rate through XLA (compute-bound work:
  prefill, training);
- `bandwidth_gbs`: memory bandwidth, as a numpy copy (read + write bytes, one
  thread) and a jitted fp32 matrix-vector product over a 512 MB matrix (the
  batch-1 decode pattern, all threads).

Run from a benchmark script (`from limits import ...`; the script's folder is on
the path).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np


def best_seconds(fn, reps: int) -> float:
    """The fastest of `reps` calls of `fn()` (other load only ever adds time)."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def matmul_gflops(n: int = 1024, reps: int = 5) -> float:
    """fp32 [n, n] x [n, n] through XLA, GFLOP/s (best of `reps`)."""
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    return 2 * n**3 / best_seconds(lambda: f(a).block_until_ready(), reps) / 1e9


def bandwidth_gbs(reps: int = 5) -> dict[str, float]:
    """Memory bandwidth (GB/s): numpy copy (read + write) and a jitted GEMV."""
    src = np.ones(64 * 2**20, np.float32)  # 256 MB
    dst = np.empty_like(src)
    copy = best_seconds(lambda: np.copyto(dst, src), reps)
    mat = jnp.ones((32768, 4096), jnp.float32)  # 512 MB
    vec = jnp.ones((4096,), jnp.float32)
    f = jax.jit(lambda m, v: m @ v)
    f(mat, vec).block_until_ready()
    gemv = best_seconds(lambda: f(mat, vec).block_until_ready(), reps)
    return {"copy": 2 * src.nbytes / copy / 1e9, "gemv": mat.nbytes / gemv / 1e9}
