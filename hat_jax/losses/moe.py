"""The MoE load-balancing loss (Switch / transformers' `load_balancing_loss_func`).

Every trainer adds it for models with routed experts (`moe_aux_term`): SFT, OPD and
RL, weighted by the model's `router_aux_loss_coef` and logged as `moe_aux_loss`.
Dims: N = B*T tokens, E experts, k experts per token.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

__all__ = ["load_balancing_loss", "moe_aux_term"]


def load_balancing_loss(
    router_logits: tuple[Float[Array, "N E"], ...],
    *,
    num_experts: int,
    top_k: int,
    mask: Bool[Array, "B T"] | None = None,
) -> Float[Array, ""]:
    """Switch-style auxiliary loss, E * sum_e f_e * p_e, pooled over MoE layers.

    f_e is the share of top-k assignments that went to expert e and p_e the mean
    router probability of e, both over (layers x real tokens). Unscaled: multiply by
    `router_aux_loss_coef` when adding it to the LM loss.
    """
    if not router_logits:
        return jnp.zeros((), jnp.float32)
    n = router_logits[0].shape[0]
    w = (
        jnp.ones((n,), jnp.float32)
        if mask is None
        else mask.reshape(-1).astype(jnp.float32)
    )
    counts = jnp.zeros((num_experts,), jnp.float32)
    prob_sum = jnp.zeros((num_experts,), jnp.float32)
    for logits in router_logits:
        probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)  # [N, E]
        _, idx = jax.lax.top_k(probs, top_k)  # [N, k]
        onehot = jax.nn.one_hot(idx, num_experts, dtype=jnp.float32).sum(1)  # [N, E]
        counts = counts + jnp.sum(onehot * w[:, None], axis=0)
        prob_sum = prob_sum + jnp.sum(probs * w[:, None], axis=0)
    rows = jnp.sum(w) * len(router_logits)
    return jnp.sum((counts / rows) * (prob_sum / rows)) * num_experts


def moe_aux_term(
    router_logits: tuple[Float[Array, "N E"], ...],
    config,
    mask: Bool[Array, "B T"] | None = None,
) -> tuple[Float[Array, ""], dict]:
    """(coef * load-balancing loss, {"moe_aux_loss": the unscaled loss}).

    `config` is the model's (`num_experts`, `num_experts_per_tok`,
    `router_aux_loss_coef`); `mask` the real tokens (padding does not count, as
    transformers' `attention_mask`). A dense model (no router logits) gives
    (0, {}): nothing to add and nothing to log.
    """
    if not router_logits:
        return jnp.zeros((), jnp.float32), {}
    aux = load_balancing_loss(
        router_logits,
        num_experts=config.num_experts,
        top_k=config.num_experts_per_tok,
        mask=mask,
    )
    return float(config.router_aux_loss_coef) * aux, {"moe_aux_loss": aux}
