"""Attention for whole sequences (training, prefill): one kernel, hand-written VJP.

`jax.grad` of the plain einsum/softmax attention leaves XLA:CPU with batched dots
whose batch dims sit between the contracted ones ([B, K, G, T, S] against
[B, S, K, H]), so it transposes every operand and runs well below its matmul rate
(SmolLM2-135M at 2 x 512: 74 ms per layer for forward + backward against 36 ms here,
`benchmarks/train_step.py --breakdown`). This version puts heads first once, folds the
G query heads of a KV group into the row axis, so every product is a canonical batched
matmul [B, K, rows, H] x [B, K, S, H], and writes the backward out:

    P = softmax(Q K^T / sqrt(H) + mask)        O = P V
    dV = P^T dO    dP = dO V^T    dS = P * (dP - rowsum(dO * O))
    dQ = dS K / sqrt(H)           dK = dS^T Q / sqrt(H)

Scores, softmax and the backward run in float32 whatever the input dtype (as the
plain version and transformers do); the results are cast back. Dims: B batch, T query
positions, S key positions, N query heads, K kv heads, G = N / K, H head dim.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

# Query rows per block. Blocks skip the masked upper triangle and keep a block's
# scores in cache: fwd + bwd of one SmolLM2 layer at 2 x 512 took 37 ms at 64,
# 41 ms at 128, 95 ms unblocked; the tiny model at 1 x 3,072 0.25 s at 64-128,
# 0.64 s unblocked and 1.57 s for the plain einsum version (2 busy cores).
Q_BLOCK = 128
NEG_INF = -1e30  # finite: a fully masked row gives a uniform, NaN-free softmax

__all__ = ["fused_attention"]


def _scores(qh, kh, allowed, g: int):
    # qh [B, K, G*T, H] (pre-scaled), kh [B, K, S, H], allowed [B, T, S] -> fp32 P
    b, kv, rows, _ = qh.shape
    s = jnp.einsum("bkrh,bksh->bkrs", qh, kh, preferred_element_type=jnp.float32)
    s = s.reshape(b, kv, g, rows // g, -1)  # [B, K, G, T, S]
    s = jnp.where(allowed[:, None, None], s, NEG_INF)
    s = s - jnp.max(s, axis=-1, keepdims=True)
    e = jnp.exp(s)
    p = e / jnp.sum(e, axis=-1, keepdims=True)
    return p.reshape(b, kv, rows, -1)  # [B, K, G*T, S] float32


F32 = {"preferred_element_type": jnp.float32}


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _attend(qh, kh, vh, allowed, g):
    return _attend_fwd(qh, kh, vh, allowed, g)[0]


def _attend_fwd(qh, kh, vh, allowed, g):
    p = _scores(qh, kh, allowed, g)
    o = jnp.einsum("bkrs,bksh->bkrh", p.astype(vh.dtype), vh)  # [B, K, G*T, H]
    return o, (qh, kh, vh, allowed, p, o)


def _attend_bwd(g, res, do):
    del g
    qh, kh, vh, allowed, p, o = res
    do32 = do.astype(jnp.float32)
    dv = jnp.einsum("bkrs,bkrh->bksh", p, do32, **F32)
    dp = jnp.einsum("bkrh,bksh->bkrs", do32, vh.astype(jnp.float32), **F32)
    delta = jnp.sum(do32 * o.astype(jnp.float32), axis=-1, keepdims=True)
    ds = p * (dp - delta)  # [B, K, G*T, S]; masked entries have p = 0
    dq = jnp.einsum("bkrs,bksh->bkrh", ds, kh.astype(jnp.float32), **F32)
    dk = jnp.einsum("bkrs,bkrh->bksh", ds, qh.astype(jnp.float32), **F32)
    cast = (dq.astype(qh.dtype), dk.astype(kh.dtype), dv.astype(vh.dtype))
    return (*cast, None)


_attend.defvjp(_attend_fwd, _attend_bwd)


def fused_attention(
    q: Float[Array, "B T N H"],
    k: Float[Array, "B S K H"],
    v: Float[Array, "B S K H"],
    allowed: Bool[Array, "B T S"],
    *,
    q_block: int = Q_BLOCK,
    causal: bool = True,
) -> Float[Array, "B T N H"]:
    """Grouped-query attention with a float32 softmax and a hand-written VJP.

    Equal to `hat_jax.models.layers.dot_product_attention` (tested, values and
    gradients).

    Args:
      q, k, v: queries and keys/values; S = T unless `causal` is False.
      allowed: which keys each query sees; with `causal` (keys are this call's
        tokens) it must be causal by index (no key after its query).
      q_block: if > 0 and < T, queries go in blocks of this many positions. With
        `causal`, block i only scores keys [0, end of block i): about (n+1)/2n of
        the work for n blocks, skipping the all-masked upper triangle; without,
        every block scores all S keys (a cache whose slots hold positions); 0 =
        one block.
      causal: keys are this call's tokens, key j at query index j.
    """
    b, t, n, h = q.shape
    kv = k.shape[2]
    g = n // kv
    scale = 1.0 / math.sqrt(h)
    qh = (q * scale).reshape(b, t, kv, g, h).transpose(0, 2, 3, 1, 4)  # [B,K,G,T,H]
    kh, vh = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)  # [B, K, S, H]
    step = q_block if 0 < q_block < t else t
    outs = []
    for lo in range(0, t, step):  # static blocks: [lo, hi) queries, keys [0, end)
        hi = min(lo + step, t)
        end = hi if causal else kh.shape[2]
        rows = qh[:, :, :, lo:hi].reshape(b, kv, g * (hi - lo), h)
        o = _attend(rows, kh[:, :, :end], vh[:, :, :end], allowed[:, lo:hi, :end], g)
        outs.append(o.reshape(b, kv, g, hi - lo, h))
    o = outs[0] if len(outs) == 1 else jnp.concatenate(outs, axis=3)
    return o.transpose(0, 3, 1, 2, 4).reshape(b, t, n, h)  # [B, T, N, H]
