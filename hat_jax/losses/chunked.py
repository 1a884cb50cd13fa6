"""Cross-entropy from hidden states, the LM head applied chunk by chunk.

The full [B, T, V] float32 logits of a 49k-152k vocabulary dominate training memory
(SmolLM2 at 8 x 512: 805 MB, held several times by the backward pass). Here the
rows B*T are cut into chunks of `chunk`; a `lax.scan` runs head -> logsumexp ->
picked logit per chunk under `jax.checkpoint`, so the backward recomputes a chunk's
logits instead of storing them: peak logits memory is [chunk, V].

The result equals `hat_jax.losses.sft.cross_entropy(logits=head(hidden), ...)`
(tested, values and gradients). Dims: B batch, T positions, D model, V vocab,
C chunks, R rows per chunk.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from hat_jax.losses.sft import Metrics, upcast

__all__ = ["chunked_cross_entropy"]


def _chunk_sums(head, h, tgt, w):
    # h [R, D], tgt [R], w [R] -> sums over the chunk's weighted rows
    logits = upcast(head(h))  # [R, V]
    lse = jax.nn.logsumexp(logits, axis=-1)  # [R]
    picked = jnp.take_along_axis(logits, tgt[:, None], axis=-1)[:, 0]
    correct = (jnp.argmax(logits, axis=-1) == tgt).astype(jnp.float32)
    return jnp.stack(
        [
            jnp.sum(w * (lse - picked)),
            jnp.sum(w * jnp.square(lse)),
            jax.lax.stop_gradient(jnp.sum(w * correct)),
        ]
    )


def chunked_cross_entropy(
    *,
    hidden: Float[Array, "B T D"],
    head: Callable[[Float[Array, "R D"]], Float[Array, "R V"]],
    targets: Int[Array, "B T"],
    mask: Bool[Array, "B T"] | Float[Array, "B T"],
    chunk: int = 1024,
    z_loss: float = 0.0,
) -> tuple[Float[Array, ""], Metrics]:
    """Masked next-token CE of `head(hidden)`, never holding all the logits.

    Args:
      hidden: final hidden states (after the final norm); position t predicts
        `targets[t]` (already shifted, as in `cross_entropy`).
      head: rows [R, D] -> logits [R, V] (e.g. `model.logits`); it may close over
        parameters, whose gradients flow as usual.
      targets: target ids.
      mask: which positions count.
      chunk: rows per chunk; B*T is padded up to a multiple of it.
      z_loss: weight of mean(logsumexp**2) over the counted tokens.

    Returns:
      (loss, metrics) as `cross_entropy`: ce, z_loss, accuracy, n_tokens.
    """
    b, t, d = hidden.shape
    n = b * t
    chunk = max(1, min(int(chunk), n))
    c = -(-n // chunk)
    pad = c * chunk - n
    h = jnp.pad(hidden.reshape(n, d), ((0, pad), (0, 0))).reshape(c, chunk, d)
    tgt = jnp.pad(targets.reshape(n), (0, pad)).reshape(c, chunk)
    w = mask.astype(jnp.float32).reshape(n)
    w = jnp.pad(w, (0, pad)).reshape(c, chunk)

    body = jax.checkpoint(lambda hh, tt, ww: _chunk_sums(head, hh, tt, ww))

    def step(acc, xs):
        return acc + body(*xs), None

    sums, _ = jax.lax.scan(step, jnp.zeros((3,), jnp.float32), (h, tgt, w))
    count = jnp.sum(w)
    denom = jnp.maximum(count, 1.0)
    ce, z, acc = sums[0] / denom, sums[1] / denom, sums[2] / denom
    metrics = {"ce": ce, "z_loss": z, "accuracy": acc, "n_tokens": count}
    return ce + z_loss * z, jax.lax.stop_gradient(metrics)
