"""A machine's physical limits, measured in the benchmark's own run.

The CPU changes between sessions (an Intel part with AMX one day, an AMD EPYC
another), so each benchmark measures what bounds it beside its own figures:

- `matmul_gflops`: the fp32 matmul rate through XLA (compute-bound work:
  prefill, training);
- `bandwidth_gbs`: memory bandwidth, as a numpy copy (read + write bytes, one
  thread) and a jitted fp32 matrix-vector product over a 512 MB matrix (the
  batch-1 decode pattern, all threads);
- `dots_gbs`: the rate XLA's dot kernels reach on a model's own products at
  M rows (M = 1: a decode step; M = k + 1: a speculative verify pass), with
  nothing else in the step.

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


def dots_gbs(cfg, reps: int = 8, rows: int = 1) -> float:
    """GB/s XLA reaches on the model's own products at `rows` tokens, nothing
    else: per layer the seven projections (q, k, v, o, gate, up, down) chained,
    then the LM head, all at their real shapes (weights ~0.001, so values stay
    finite), in one jitted loop of `reps` passes, best of 5. Weight bytes / this
    rate is the time XLA's dot kernels alone need for one step of `rows` tokens
    at these shapes: the ceiling a JAX decode (rows = 1) or verify pass can
    reach, beside the bandwidth limit."""
    d, f, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    q, kv = (
        cfg.num_attention_heads * cfg.head_dim,
        cfg.num_key_value_heads * cfg.head_dim,
    )
    layer = [(d, q), (d, kv), (d, kv), (q, d), (d, f), (d, f), (f, d)]
    ws = [
        jnp.full(s, 1e-3, jnp.float32)
        for _ in range(cfg.num_hidden_layers)
        for s in layer
    ]
    head = jnp.full((v, d), 1e-3, jnp.float32)  # tied embedding [V, D], as the model

    def one(x, ws, head):  # x [M, D]; the layer's data flow, without norms
        for i in range(0, len(ws), 7):
            wq, wk, wv, wo, wg, wu, wd = ws[i : i + 7]
            kk, vv = x @ wk, x @ wv  # kept alive through a scalar
            x = jnp.tanh(x + (x @ wq) @ wo + kk[:, :1] + vv[:, :1])  # stays finite
            x = jnp.tanh(x + (jax.nn.silu(x @ wg) * (x @ wu)) @ wd)
        return x + 1e-6 * jnp.max(x @ head.T)

    fn = jax.jit(
        lambda x, ws, head: jax.lax.fori_loop(0, reps, lambda _, x: one(x, ws, head), x)
    )
    x = jnp.ones((rows, d), jnp.float32)
    fn(x, ws, head).block_until_ready()
    best = best_seconds(lambda: fn(x, ws, head).block_until_ready(), 5)
    return reps * (sum(w.nbytes for w in ws) + head.nbytes) / best / 1e9
