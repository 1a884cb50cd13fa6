"""Supervised losses: token log-probs, masked cross-entropy, the MTP loss.

Shift convention: ``cross_entropy`` takes targets and a mask that the caller has
already shifted, so position ``t`` of ``logits`` predicts ``targets[t]`` (for plain
next-token training ``targets[t] = tokens[t + 1]``). ``mtp_loss`` takes the unshifted
tokens and does its own shift (position ``t`` predicts ``tokens[t + 1 + depth]``).
Log-probs are computed in float32 (or wider) whatever the logits' dtype.

Dims: B batch, T positions, V vocab.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

Metrics = dict[str, Array]


def upcast(x: Array) -> Array:
    """``x`` in float32, or wider if it already is (float64 under x64 stays)."""
    x = jnp.asarray(x)
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def _masked_mean(x: Float[Array, "B T"], mask: Float[Array, "B T"]) -> Float[Array, ""]:
    # Mean over masked tokens; 0 (not NaN) when the mask is empty.
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def token_logprobs(
    *, logits: Float[Array, "B T V"], targets: Int[Array, "B T"]
) -> Float[Array, "B T"]:
    """``log softmax(logits)[b, t, targets[b, t]]`` in float32."""
    logits = upcast(logits)
    lse = jax.nn.logsumexp(logits, axis=-1)  # [B, T]
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]  # [B, T]
    return picked - lse


def cross_entropy(
    *,
    logits: Float[Array, "B T V"],
    targets: Int[Array, "B T"],
    mask: Bool[Array, "B T"] | Float[Array, "B T"],
    z_loss: float = 0.0,
) -> tuple[Float[Array, ""], Metrics]:
    """Masked next-token cross-entropy, averaged over the masked tokens.

    Args:
      logits: model outputs; position ``t`` predicts ``targets[t]`` (already shifted).
      targets: target token ids.
      mask: which positions count (e.g. assistant tokens, tool calls included).
      z_loss: weight of the PaLM z-loss ``mean(logsumexp(logits)**2)`` over the same
        tokens, which keeps the softmax normaliser near 1; 0 disables it.

    Returns:
      ``(loss, metrics)``: loss = CE + z_loss term; metrics ``ce``, ``z_loss``,
      ``accuracy`` (argmax == target), ``n_tokens``.
    """
    mask = mask.astype(jnp.float32)
    logits = upcast(logits)
    lse = jax.nn.logsumexp(logits, axis=-1)  # [B, T]
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    ce = _masked_mean(lse - picked, mask)
    z = _masked_mean(jnp.square(lse), mask)
    loss = ce + z_loss * z
    correct = (jnp.argmax(logits, axis=-1) == targets).astype(jnp.float32)
    metrics = {
        "ce": ce,
        "z_loss": z,
        "accuracy": _masked_mean(correct, mask),
        "n_tokens": jnp.sum(mask),
    }
    return loss, jax.lax.stop_gradient(metrics)


def mtp_loss(
    *,
    mtp_logits: Float[Array, "B T V"],
    tokens: Int[Array, "B T"],
    mask: Bool[Array, "B T"] | Float[Array, "B T"],
    depth: int = 1,
    z_loss: float = 0.0,
) -> tuple[Float[Array, ""], Metrics]:
    """Multi-token-prediction loss: position ``t`` predicts ``tokens[t + 1 + depth]``.

    With the default ``depth=1`` (one MTP module, as in Qwen3.5/DeepSeek-V3) the MTP
    head at position ``t`` sees the trunk's state at ``t`` and the embedding of
    ``tokens[t + 1]`` and predicts ``tokens[t + 2]``.

    Args:
      mtp_logits: the MTP head's logits, aligned with ``tokens`` (unshifted).
      tokens: the input token ids, unshifted.
      mask: per-token loss mask aligned with ``tokens``: ``mask[b, s]`` says whether
        ``tokens[b, s]`` is a training target (the same mask the SFT batch marks
        assistant tokens with). Target ``s = t + 1 + depth`` is weighted by
        ``mask[s]``; the last ``1 + depth`` positions have no target and get weight
        0. Packed sequences: zero the mask at the first ``1 + depth`` tokens of each
        document so no target crosses a document boundary.
      depth: how many tokens ahead of the next-token prediction.
      z_loss: as in ``cross_entropy``.

    Returns:
      ``(loss, metrics)`` with metrics ``mtp/ce``, ``mtp/accuracy``, ``mtp/n_tokens``.
    """
    # unshifted tokens are next-token targets one position further back
    targets, weights = mtp_targets(jnp.asarray(tokens), mask, depth=1 + depth)
    loss, m = cross_entropy(
        logits=mtp_logits, targets=targets, mask=weights, z_loss=z_loss
    )
    return loss, {
        "mtp/ce": m["ce"],
        "mtp/accuracy": m["accuracy"],
        "mtp/n_tokens": m["n_tokens"],
    }


def mtp_targets(
    targets: Int[Array, "B T"],
    weights: Bool[Array, "B T"] | Float[Array, "B T"],
    segment_ids: Int[Array, "B T"] | None = None,
    *,
    depth: int = 1,
) -> tuple[Int[Array, "B T"], Float[Array, "B T"]]:
    """The MTP head's targets and weights from next-token ones: the one alignment.

    Position t's next-token target is `targets[t]` (= tokens[t + 1]); its MTP
    target is `targets[t + depth]`, weighted by `weights[t + depth]` and, with
    `segment_ids` (packed rows; 0 = padding), only inside t's own example. The
    last `depth` positions get weight 0. Used by SFT and `mtp_loss`; RL gathers
    the same pairs (the head at position p - 1 drafts the token at p).
    """
    t = targets.shape[-1]
    pad = [(0, 0)] * (targets.ndim - 1) + [(0, depth)]
    nxt_t = jnp.pad(targets[..., depth:], pad)[..., :t]
    w = jnp.asarray(weights).astype(jnp.float32)
    nxt_w = jnp.pad(w[..., depth:], pad)[..., :t]
    if segment_ids is not None:
        nxt_s = jnp.pad(segment_ids[..., depth:], pad)[..., :t]
        nxt_w = nxt_w * ((nxt_s == segment_ids) & (segment_ids > 0))
    return nxt_t, nxt_w
