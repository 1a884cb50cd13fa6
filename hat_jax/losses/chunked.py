"""Cross-entropy from hidden states, the LM head applied chunk by chunk.

The full [B, T, V] float32 logits of a 49k-152k vocabulary dominate training memory
(SmolLM2 at 8 x 512: 805 MB, held several times by the backward pass). Here the
rows B*T are cut into chunks of `chunk`; a `lax.scan` runs head -> logsumexp ->
picked logit per chunk, and in the same pass takes the chunk's gradient: the
gradient of CE with respect to the logits is known in closed form (softmax minus
one-hot), so the forward pass pulls it back through the head at once (`jax.vjp`
of the head on the chunk) and keeps only d(hidden) [N, D] and d(head params).
The backward pass then just scales them by the loss's cotangent. Peak logits
memory is [chunk, V], and no chunk's logits are computed twice (a rematerialised
`jax.checkpoint` scan would redo the [chunk, D] x [D, V] matmul and the softmax in
the backward: about 6 % of SmolLM2-135M's step).

With `rows`, the counted positions are gathered first (a stable sort puts them
ahead, in order) and only `rows` of them go through the head: SFT trains ~10 % of
a trajectory's tokens, so most of the head's [N, D] x [D, V] work is skipped. A
batch with more counted positions than `rows` takes the full path instead
(`lax.cond`: the result never depends on the capacity).

The result equals `hat_jax.losses.sft.cross_entropy(logits=head(hidden), ...)`
(tested, values and gradients, with and without `rows`). Dims: B batch, T
positions, D model, V vocab, C chunks, R rows per chunk, N = B*T rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from hat_jax.losses.sft import Metrics, upcast

__all__ = ["chunked_cross_entropy"]


def _sums(logits, tgt, w):
    """logits [R, V], tgt [R], w [R] -> (sums [3]: weighted CE, weighted lse^2,
    weighted correct; lse [R])."""
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, tgt[:, None], axis=-1)[:, 0]
    correct = (jnp.argmax(logits, axis=-1) == tgt).astype(jnp.float32)
    sums = [jnp.sum(w * (lse - picked)), jnp.sum(w * jnp.square(lse))]
    return jnp.stack([*sums, jnp.sum(w * correct)]), lse


def _chunk(head, consts, h, tgt, w, z_loss, denom):
    """Sums over one chunk, and their gradient with respect to h and consts.

    h [R, D], tgt [R], w [R] -> (sums [3]; d(loss)/dh [R, D]; d(loss)/d(consts))
    where loss = sum of w (CE + z lse^2) / denom.
    """
    logits, pull = jax.vjp(lambda x, *c: upcast(head(x, *c)), h, *consts)  # [R, V]
    sums, lse = _sums(logits, tgt, w)
    # d/dlogits of w (lse - picked + z lse^2) / denom
    p = jnp.exp(logits - lse[:, None])
    g = p * (1.0 + 2.0 * z_loss * lse)[:, None]
    g = g - jax.nn.one_hot(tgt, logits.shape[-1], dtype=g.dtype)
    g = g * (w / denom)[:, None]
    dh, *dconsts = pull(g)  # g is fp32, as the upcast logits
    return sums, dh, dconsts


def _scan(head, consts, h, tgt, w, z_loss, denom):
    zeros = [
        jnp.zeros(c.shape, jnp.promote_types(c.dtype, jnp.float32)) for c in consts
    ]

    def step(carry, xs):
        sums, dc = carry
        s, dh, dcs = _chunk(head, consts, *xs, z_loss, denom)
        return (sums + s, [a + b for a, b in zip(dc, dcs, strict=True)]), dh

    init = (jnp.zeros((3,), jnp.float32), zeros)
    (sums, dconsts), dh = jax.lax.scan(step, init, (h, tgt, w))
    # summed over chunks in fp32, returned in each parameter's dtype
    return sums, dh, [d.astype(c.dtype) for d, c in zip(dconsts, consts, strict=True)]


def _loss(sums, z_loss, denom):
    return (sums[0] + z_loss * sums[1]) / denom


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 5))
def _fused(head, h, tgt, w, denom, z_loss, *consts):
    # h [C, R, D]; the loss (CE + z lse^2 summed over rows / denom) and the sums
    def one(xs):
        hh, tt, ww = xs
        return _sums(upcast(head(hh, *consts)), tt, ww)[0]

    sums = jax.lax.map(one, (h, tgt, w)).sum(0)
    return _loss(sums, z_loss, denom), sums


def _fused_fwd(head, h, tgt, w, denom, z_loss, *consts):
    sums, dh, dconsts = _scan(head, consts, h, tgt, w, z_loss, denom)
    return (_loss(sums, z_loss, denom), sums), (dh, dconsts, tgt, w, denom)


def _fused_bwd(head, z_loss, res, ct):
    dh, dconsts, tgt, w, denom = res
    c = ct[0]  # the sums are metrics: no gradient flows through them
    zero_tgt = jnp.zeros(tgt.shape, jax.dtypes.float0)

    def scale(x):  # keep each cotangent in its primal's dtype (bf16 compute)
        return (x * c).astype(x.dtype)

    return (
        scale(dh),
        zero_tgt,
        jnp.zeros_like(w),
        jnp.zeros_like(denom),
        *(scale(d) for d in dconsts),
    )


_fused.defvjp(_fused_fwd, _fused_bwd)


def chunked_cross_entropy(
    *,
    hidden: Float[Array, "B T D"],
    head: Callable[[Float[Array, "R D"]], Float[Array, "R V"]],
    targets: Int[Array, "B T"],
    mask: Bool[Array, "B T"] | Float[Array, "B T"],
    chunk: int = 1024,
    z_loss: float = 0.0,
    rows: int = 0,
) -> tuple[Float[Array, ""], Metrics]:
    """Masked next-token CE of `head(hidden)`, never holding all the logits.

    Args:
      hidden: final hidden states (after the final norm); position t predicts
        `targets[t]` (already shifted, as in `cross_entropy`).
      head: rows [R, D] -> logits [R, V] (e.g. `model.logits`); it may close over
        parameters, whose gradients flow as usual (`jax.closure_convert` lifts
        them into explicit inputs of the fused gradient).
      targets: target ids.
      mask: which positions count (weights; they get no gradient).
      chunk: rows per chunk; B*T is padded up to a multiple of it.
      z_loss: weight of mean(logsumexp**2) over the counted tokens (a Python
        number: it is static in the fused gradient).
      rows: 0, or the most counted positions the head sees: gathered first, with
        the full path when a batch has more (module docstring).

    Returns:
      (loss, metrics) as `cross_entropy`: ce, z_loss, accuracy, n_tokens.
    """
    b, t, d = hidden.shape
    n = b * t
    rows = int(rows)
    if 0 < rows < n:
        w = jax.lax.stop_gradient(mask.astype(jnp.float32)).reshape(n)
        at = jnp.argsort(w == 0, stable=True)[:rows]  # counted positions first

        def gathered(hidden, targets, w):
            h = hidden.reshape(n, d)[at][None]  # [1, rows, D]
            return _ce(
                h, head, targets.reshape(n)[at][None], w[at][None], chunk, z_loss
            )

        def full(hidden, targets, w):
            return _ce(hidden, head, targets, w.reshape(b, t), chunk, z_loss)

        fits = jnp.count_nonzero(w) <= rows
        return jax.lax.cond(fits, gathered, full, hidden, targets, w)
    return _ce(hidden, head, targets, mask, chunk, z_loss)


def _ce(hidden, head, targets, mask, chunk, z_loss):
    b, t, d = hidden.shape
    n = b * t
    chunk = max(1, min(int(chunk), n))
    c = -(-n // chunk)
    pad = c * chunk - n
    h = jnp.pad(hidden.reshape(n, d), ((0, pad), (0, 0))).reshape(c, chunk, d)
    tgt = jnp.pad(targets.reshape(n), (0, pad)).reshape(c, chunk)
    w = jax.lax.stop_gradient(mask.astype(jnp.float32)).reshape(n)
    w = jnp.pad(w, (0, pad)).reshape(c, chunk)
    count = jnp.sum(w)
    denom = jnp.maximum(count, 1.0)
    pure_head, consts = jax.closure_convert(head, h[0])
    loss, sums = _fused(pure_head, h, tgt, w, denom, float(z_loss), *consts)
    sums = jax.lax.stop_gradient(sums)
    ce, z, acc = sums[0] / denom, sums[1] / denom, sums[2] / denom
    metrics = {"ce": ce, "z_loss": z, "accuracy": acc, "n_tokens": count}
    return loss, metrics
