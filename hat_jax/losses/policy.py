"""GRPO-family policy-gradient pieces for HSA-RL.

Advantages (``get_advantage``): ``grpo``, ``dr_grpo``, ``gdpo``. KL-to-reference
estimators (``get_kl_estimator``): ``k1``, ``k2``, ``k3``. Importance ratios
(``get_ratio``): ``token`` (PPO) and ``sequence`` (GSPO). Plus segment-wise
advantages for the tool-call and reply segments, the clipped surrogate
``policy_loss`` and the chain-of-thought ``length_penalty``.

Layout: a batch holds N groups (tasks) of G rollouts each, flattened row-major into
B = N * G sequences (sequence ``b = n * G + g``). Dims: N groups, G rollouts per
group, R reward components, B sequences, T positions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from hat_jax.registry import Registry

Metrics = dict[str, Array]
Mask = Bool[Array, "B T"] | Float[Array, "B T"]

TOOL_SEGMENT = 1
REPLY_SEGMENT = 2

# ---------------------------------------------------------------- advantages

_ADVANTAGES = Registry("advantage", fixed=("weights", "eps"))
register_advantage = _ADVANTAGES.register
get_advantage = _ADVANTAGES.bind
advantage_names = _ADVANTAGES.names


def _combine(rewards: Array, weights: Array | None) -> Float[Array, "N G"]:
    # [N, G] passes through; [N, G, R] -> weighted sum over R (weights default to 1)
    rewards = jnp.asarray(rewards, jnp.float32)
    if rewards.ndim == 2:
        return rewards
    w = jnp.ones(rewards.shape[-1]) if weights is None else jnp.asarray(weights)
    return jnp.einsum("ngr,r->ng", rewards, w.astype(jnp.float32))


def _group_norm(x: Float[Array, "N G ..."], eps: float, scale: bool = True) -> Array:
    # (x - mean_g) / (std_g + eps) within each group (axis 1); population std
    centred = x - jnp.mean(x, axis=1, keepdims=True)
    if not scale:
        return centred
    return centred / (jnp.std(x, axis=1, keepdims=True) + eps)


@register_advantage("grpo")
def grpo(
    rewards: Float[Array, "N G"] | Float[Array, "N G R"],
    *,
    weights: Float[Array, " R"] | None = None,
    eps: float = 1e-6,
) -> Float[Array, "N G"]:
    """GRPO: ``(r - mean_g r) / (std_g r + eps)`` within each group.

    Reward components (``[N, G, R]``) are first summed with ``weights``; the std is
    the population std (ddof 0), so a group of identical rewards gets advantage 0.
    """
    return _group_norm(_combine(rewards, weights), eps)


@register_advantage("dr_grpo")
def dr_grpo(
    rewards: Float[Array, "N G"] | Float[Array, "N G R"],
    *,
    weights: Float[Array, " R"] | None = None,
    eps: float = 1e-6,
) -> Float[Array, "N G"]:
    """Dr. GRPO: ``r - mean_g r``, no division by the group std (``eps`` unused)."""
    del eps
    return _group_norm(_combine(rewards, weights), 0.0, scale=False)


@register_advantage("gdpo")
def gdpo(
    rewards: Float[Array, "N G"] | Float[Array, "N G R"],
    *,
    weights: Float[Array, " R"] | None = None,
    eps: float = 1e-6,
    renorm: str | None = "batch",
) -> Float[Array, "N G"]:
    """GDPO: normalise each reward component within its group, then weight and sum.

    ``A = sum_r w_r (r_r - mean_g r_r) / (std_g r_r + eps)``, so a reward with a
    large range cannot drown the others. Then, by ``renorm``: ``"batch"`` (default)
    re-normalises A over the whole batch, ``(A - mean) / (std + eps)``; ``"group"``
    re-normalises within each group; ``"none"`` (or None) keeps the weighted sum.
    """
    r = jnp.asarray(rewards, jnp.float32)
    if r.ndim == 2:
        r = r[..., None]  # [N, G, 1]
    w = jnp.ones(r.shape[-1]) if weights is None else jnp.asarray(weights)
    adv = jnp.einsum("ngr,r->ng", _group_norm(r, eps), w.astype(jnp.float32))
    if renorm == "batch":
        return (adv - jnp.mean(adv)) / (jnp.std(adv) + eps)
    if renorm == "group":
        return _group_norm(adv, eps)
    if renorm in ("none", None):
        return adv
    raise ValueError(f"renorm must be 'batch', 'group' or 'none', not {renorm!r}")


# ---------------------------------------------------------------- segments


def check_segments(segment_ids: Int[Array, "B T"]) -> None:
    """Raises if any id is outside {0, 1, 2} (a token in no segment).

    Only concrete arrays are checked; under ``jit`` this is a no-op.
    """
    try:
        ids = np.asarray(segment_ids)
    except jax.errors.TracerArrayConversionError:
        return
    bad = ~np.isin(ids, (0, TOOL_SEGMENT, REPLY_SEGMENT))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"segment id {ids[where]} at {where}: ids must be 0 (not trained), "
            f"{TOOL_SEGMENT} (tool call) or {REPLY_SEGMENT} (reply)"
        )


def segment_masks(segment_ids: Int[Array, "B T"]) -> dict[str, Bool[Array, "B T"]]:
    """Boolean masks ``tool``, ``reply`` and ``trained`` (= tool | reply).

    Ids: 0 not trained, 1 tool-call segment, 2 reply segment; each trained token is
    in exactly one segment (checked on concrete inputs).
    """
    check_segments(segment_ids)
    tool = segment_ids == TOOL_SEGMENT
    reply = segment_ids == REPLY_SEGMENT
    return {"tool": tool, "reply": reply, "trained": tool | reply}


def segment_advantages(
    *,
    tool_advantages: Float[Array, "N G"],
    reply_advantages: Float[Array, "N G"],
    segment_ids: Int[Array, "B T"],
    fold_missing_tool: bool = False,
) -> Float[Array, "B T"]:
    """Per-token advantages: each token takes its sequence's advantage for its segment.

    Sequence ``b = n * G + g`` gets ``tool_advantages[n, g]`` on its tool-call tokens,
    ``reply_advantages[n, g]`` on its reply tokens and 0 elsewhere.

    ``fold_missing_tool``: a sequence with no tool-call token takes
    ``tool + reply`` advantage on its reply tokens. Not calling a tool (or skill) is
    decided by the reply's first tokens; without the fold, the tool-side rewards
    (tool rationality, skill selection) of such a sequence reach no token at all,
    and a policy learns to skip tools whenever the reply alone scores.
    """
    masks = segment_masks(segment_ids)
    tool = tool_advantages.reshape(-1)[:, None]  # [B, 1]
    reply = reply_advantages.reshape(-1)[:, None]  # [B, 1]
    if fold_missing_tool:
        no_tool = ~jnp.any(masks["tool"], axis=1, keepdims=True)  # [B, 1]
        reply = jnp.where(no_tool, reply + tool, reply)
    return jnp.where(masks["tool"], tool, jnp.where(masks["reply"], reply, 0.0))


# ---------------------------------------------------------------- ratios

_RATIOS = Registry("ratio", fixed=("logp", "old_logp", "mask"))
register_ratio = _RATIOS.register
get_ratio = _RATIOS.bind


def _masked_mean(x: Array, mask: Array, axis=None) -> Array:
    return jnp.sum(x * mask, axis=axis) / jnp.maximum(jnp.sum(mask, axis=axis), 1.0)


@register_ratio("token")
def token_ratio(
    *, logp: Float[Array, "B T"], old_logp: Float[Array, "B T"], mask: Mask
) -> Float[Array, "B T"]:
    """PPO's per-token ratio ``exp(logp - old_logp)`` (``mask`` unused)."""
    del mask
    return jnp.exp(logp - old_logp)


@register_ratio("sequence")
def sequence_ratio(
    *, logp: Float[Array, "B T"], old_logp: Float[Array, "B T"], mask: Mask
) -> Float[Array, "B T"]:
    """GSPO: ``exp(mean_t (logp - old_logp))`` over each sequence's masked tokens.

    The length-normalised sequence likelihood ratio, broadcast to every token of the
    sequence (1 for a sequence with no masked token).
    """
    mask = mask.astype(jnp.float32)
    log_ratio = _masked_mean(logp - old_logp, mask, axis=-1)  # [B]
    return jnp.broadcast_to(jnp.exp(log_ratio)[:, None], logp.shape)


# ---------------------------------------------------------------- surrogate


def policy_loss(
    *,
    logp: Float[Array, "B T"],
    old_logp: Float[Array, "B T"],
    advantages: Float[Array, "B T"],
    mask: Mask,
    clip_eps: float = 0.2,
    clip_eps_high: float | None = None,
    ratio: str = "token",
    aggregation: str = "token-mean",
) -> tuple[Float[Array, ""], Metrics]:
    """PPO clipped surrogate ``-min(rho A, clip(rho, 1 - eps, 1 + eps_high) A)``.

    Args:
      logp: log-probs of the sampled tokens under the current policy (with grad).
      old_logp: the same under the policy that sampled them (constants).
      advantages: per-token advantages (e.g. from ``segment_advantages``).
      mask: tokens that are trained.
      clip_eps: lower clip range; also the upper one unless ``clip_eps_high`` is set
        (DAPO's "clip-higher").
      ratio: ``"token"`` (PPO) or ``"sequence"`` (GSPO), see ``get_ratio``.
      aggregation: ``"token-mean"`` averages the per-token loss over all masked
        tokens of the batch (each token weighs the same, so long sequences weigh
        more); ``"seq-mean-token-mean"`` averages within each sequence first, then
        over the sequences that have a masked token (GRPO's original form).

    Returns:
      ``(loss, metrics)``: ``clip_fraction`` (masked tokens whose gradient the clip
      zeroes: rho > 1 + eps_high with A > 0, or rho < 1 - eps with A < 0),
      ``ratio_mean``, ``approx_kl`` (k3 estimate of KL(old || current)),
      ``n_tokens``.
    """
    eps_high = clip_eps if clip_eps_high is None else clip_eps_high
    mask = mask.astype(jnp.float32)
    old_logp = jax.lax.stop_gradient(old_logp)
    advantages = jax.lax.stop_gradient(advantages)
    rho = get_ratio(ratio)(logp=logp, old_logp=old_logp, mask=mask)  # [B, T]
    unclipped = rho * advantages
    clipped = jnp.clip(rho, 1.0 - clip_eps, 1.0 + eps_high) * advantages
    per_token = -jnp.minimum(unclipped, clipped)  # [B, T]
    if aggregation == "token-mean":
        loss = _masked_mean(per_token, mask)
    elif aggregation == "seq-mean-token-mean":
        per_seq = _masked_mean(per_token, mask, axis=-1)  # [B]
        has = (jnp.sum(mask, axis=-1) > 0).astype(jnp.float32)
        loss = jnp.sum(per_seq * has) / jnp.maximum(jnp.sum(has), 1.0)
    else:
        raise ValueError(
            f"aggregation must be 'token-mean' or 'seq-mean-token-mean', "
            f"not {aggregation!r}"
        )
    was_clipped = ((rho > 1.0 + eps_high) & (advantages > 0)) | (
        (rho < 1.0 - clip_eps) & (advantages < 0)
    )
    log_r = logp - old_logp
    metrics = {
        "clip_fraction": _masked_mean(was_clipped.astype(jnp.float32), mask),
        "ratio_mean": _masked_mean(rho, mask),
        "approx_kl": _masked_mean(jnp.expm1(log_r) - log_r, mask),
        "n_tokens": jnp.sum(mask),
    }
    return loss, jax.lax.stop_gradient(metrics)


# ---------------------------------------------------------------- KL to reference

_KL_ESTIMATORS = Registry("kl estimator", fixed=("logp", "ref_logp"))
register_kl_estimator = _KL_ESTIMATORS.register
get_kl_estimator = _KL_ESTIMATORS.bind
kl_estimator_names = _KL_ESTIMATORS.names


@register_kl_estimator("k1")
def k1(*, logp: Float[Array, "B T"], ref_logp: Float[Array, "B T"]) -> Array:
    """``logp - ref_logp``: unbiased for KL(pi || ref) on samples from pi."""
    return logp - ref_logp


@register_kl_estimator("k2")
def k2(*, logp: Float[Array, "B T"], ref_logp: Float[Array, "B T"]) -> Array:
    """``(logp - ref_logp)**2 / 2``: biased, low variance, >= 0."""
    return 0.5 * jnp.square(logp - ref_logp)


@register_kl_estimator("k3")
def k3(*, logp: Float[Array, "B T"], ref_logp: Float[Array, "B T"]) -> Array:
    """Schulman's ``exp(ref - logp) - (ref - logp) - 1``: unbiased and >= 0."""
    d = ref_logp - logp
    return jnp.expm1(d) - d


def kl_penalty(
    *,
    logp: Float[Array, "B T"],
    ref_logp: Float[Array, "B T"],
    mask: Mask,
    estimator: str = "k3",
) -> tuple[Float[Array, ""], Metrics]:
    """Masked token-mean of a KL(pi || ref) estimator; ``ref_logp`` is constant."""
    per = get_kl_estimator(estimator)(
        logp=logp, ref_logp=jax.lax.stop_gradient(ref_logp)
    )
    mask = mask.astype(jnp.float32)
    loss = _masked_mean(per, mask)
    return loss, {"kl": jax.lax.stop_gradient(loss)}


# ---------------------------------------------------------------- length penalty


def length_penalty(
    *, lengths: Int[Array, " B"] | Float[Array, " B"], target: float, coef: float
) -> Float[Array, " B"]:
    """Linear chain-of-thought length penalty, ``coef * max(0, lengths - target)``.

    ``lengths`` counts the reasoning (``<think>``) tokens of a segment; reasoning up
    to ``target`` tokens is free and each token beyond it costs ``coef``. The result
    is >= 0 and is *subtracted* from that sequence's (or segment's) reward before
    the advantages are computed.
    """
    excess = jnp.asarray(lengths, jnp.float32) - target
    return coef * jnp.maximum(excess, 0.0)
