"""Multi-token prediction head (Qwen3.5 / Qwen3-Next `mtp.*`): one token further.

    h[t]: trunk hidden after its final norm        tok[t + 1]
              |                                       |
      pre_fc_norm_hidden                  embed_tokens (shared) -> pre_fc_norm_embedding
              \\________ concat([e, h], -1) [B, T, 2D] ________/   (embedding first)
                                  |
                          fc: 2D -> D, no bias
                                  |
          decoder layer (the trunk's family, full attention, RoPE at positions[t],
                         causal inside the document)
                                  |
                         norm -> shared lm head -> logits[t], a guess at tok[t + 2]

This is vLLM's `Qwen3_5MultiTokenPredictor` / `Qwen3NextMultiTokenPredictor`: the
target model's returned hidden states are already normed by its final norm, the
concat puts the embedding first, and draft slot t holds token t + 1 at the target's
position t. With several MTP layers vLLM runs one per draft step (`layers[step % n]`)
with fc and norms shared; `MTP.__call__` takes that `step`, `mtp_logits` is step 0.
The HF names are `mtp.fc.weight`, `mtp.pre_fc_norm_{embedding,hidden}.weight`,
`mtp.norm.weight` and `mtp.layers.{i}.*` named like the trunk's `model.layers.{i}.*`
(`hf_weights`). The norms are the trunk family's (`norm`): plain `RMSNorm` for the
llama/qwen3 trunks, zero-centred (`x * (1 + w)`) for Qwen3.5 (`models.qwen3_5_moe`).
RoPE covers the trunk's `config.rotary_dim` (partial for Qwen3.5).

Dims: B batch, T positions, D model, V vocab.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import RMSNorm, attention_mask, rope_tables

if TYPE_CHECKING:
    from hat_jax.models.llama import CausalLM

__all__ = ["MTP", "graft_head", "hf_weights", "mtp_hidden", "mtp_logits"]


class MTP(nnx.Module):
    """The MTP block: two input norms, the fusing `fc`, decoder layer(s), a norm.

    Args:
      cfg: the trunk's config (`mtp_num_hidden_layers` >= 1 layers are built).
      make_layer: `i -> decoder layer`, the trunk family's layer for MTP layer i
        (vLLM numbers them from 0, which decides MoE vs dense MLP).
      rngs: needs a `params` stream.
      norm: `dim -> norm module` for the three norms (default: `RMSNorm`).
    """

    def __init__(
        self,
        cfg: ModelConfig,
        *,
        make_layer: Callable[[int], nnx.Module],
        rngs: nnx.Rngs,
        norm: Callable[[int], nnx.Module] | None = None,
    ):
        n = cfg.mtp_num_hidden_layers
        if n < 1:
            raise ValueError(f"MTP needs mtp_num_hidden_layers >= 1, got {n}")
        d, pd = cfg.hidden_size, cfg.jnp_param_dtype
        if norm is None:
            norm = functools.partial(RMSNorm, eps=cfg.rms_norm_eps, param_dtype=pd)
        self.pre_fc_norm_embedding = norm(d)
        self.pre_fc_norm_hidden = norm(d)
        self.fc = nnx.Linear(
            2 * d,
            d,
            use_bias=False,
            dtype=cfg.jnp_dtype,
            param_dtype=pd,
            kernel_init=nnx.initializers.normal(0.02),
            rngs=rngs,
        )
        self.layers = nnx.List([make_layer(i) for i in range(n)])
        self.norm = norm(d)

    def __call__(
        self,
        hidden: Float[Array, "B T D"],
        embeds: Float[Array, "B T D"],
        cos: Float[Array, "B T R"],
        sin: Float[Array, "B T R"],
        allowed: Bool[Array, "B T S"],
        positions: Int[Array, "B T"],
        kv=None,
        *,
        step: int = 0,
    ) -> tuple[Float[Array, "B T D"], object]:
        """One draft step: (normed MTP hidden [B, T, D], updated kv or None).

        `hidden[t]` is the trunk's (or the previous step's) normed hidden state,
        `embeds[t]` the embedding of the token after position t; `cos`, `sin`,
        `allowed` and `positions` are those of the trunk's tokens at the same t.
        """
        e = self.pre_fc_norm_embedding(embeds)
        h = self.pre_fc_norm_hidden(hidden.astype(embeds.dtype))
        x = self.fc(jnp.concatenate([e, h], axis=-1))  # [B, T, 2D] -> [B, T, D]
        layer = self.layers[step % len(self.layers)]
        x, kv, _ = layer(x, cos, sin, allowed, positions, kv)  # MoE router unused
        return self.norm(x), kv


def mtp_logits(
    model: CausalLM,
    hidden: Float[Array, "B T D"],
    tokens: Int[Array, "B T"],
    positions: Int[Array, "B T"],
    segment_ids: Int[Array, "B T"] | None = None,
    *,
    allowed: Bool[Array, "B T T"] | None = None,
) -> Float[Array, "B T V"]:
    """The MTP head's logits, aligned with `tokens` (unshifted), float32.

    Position t sees `hidden[t]` and the embedding of `tokens[t + 1]` and predicts
    `tokens[t + 2]`: exactly what `hat_jax.losses.sft.mtp_loss(mtp_logits=...,
    tokens=tokens, mask=..., depth=1)` scores. The last position has no next token
    (id 0 stands in; `mtp_loss` gives it no target).

    Args:
      model: a `CausalLM` with an MTP head (`config.mtp_num_hidden_layers` >= 1).
      hidden: the trunk's last hidden states after its final norm
        (`model.norm(x)`, i.e. `DecoderOutput.hidden`).
      tokens: the input ids the trunk ran on.
      positions: their RoPE positions (the MTP reuses them, as vLLM does).
      segment_ids: packed documents (0 = padding); attention stays causal and
        inside each document. None: one causal sequence per row.
      allowed: an explicit [B, T, T] attention mask instead of `segment_ids`.

    Returns:
      logits [B, T, V] in float32.
    """
    if getattr(model, "mtp", None) is None:
        raise ValueError("model has no MTP head (config.mtp_num_hidden_layers = 0)")
    b, t = tokens.shape
    if hidden.shape[:2] != (b, t) or positions.shape != (b, t):
        raise ValueError(
            f"hidden {hidden.shape[:2]}, tokens {tokens.shape} and positions "
            f"{positions.shape} must share [B, T]"
        )
    if allowed is None:
        allowed = attention_mask(positions, None, None, segment_ids)
    elif segment_ids is not None:
        raise ValueError("pass segment_ids or allowed, not both")
    return model.logits(_mtp_states(model, hidden, tokens, positions, allowed))


def mtp_hidden(
    model: CausalLM,
    hidden: Float[Array, "B T D"],
    tokens: Int[Array, "B T"],
    positions: Int[Array, "B T"],
    segment_ids: Int[Array, "B T"] | None = None,
) -> Float[Array, "B T D"]:
    """`mtp_logits` before the shared LM head (after `mtp.norm`), [B, T, D].

    For losses that apply the head chunk by chunk
    (`hat_jax.losses.chunked.chunked_cross_entropy`); same alignment.
    """
    if getattr(model, "mtp", None) is None:
        raise ValueError("model has no MTP head (config.mtp_num_hidden_layers = 0)")
    allowed = attention_mask(positions, None, None, segment_ids)
    return _mtp_states(model, hidden, tokens, positions, allowed)


def _mtp_states(model, hidden, tokens, positions, allowed):
    nxt = jnp.concatenate([tokens[:, 1:], jnp.zeros_like(tokens[:, :1])], axis=1)
    cos, sin = rope_tables(positions, model.config, model.config.rotary_dim)
    x, _ = model.mtp(hidden, model.embed_tokens(nxt), cos, sin, allowed, positions)
    return x


# HF name <-> our path for the head's own weights; its layers follow the trunk's.
HF_WEIGHTS = [
    ("mtp.fc.weight", "mtp.fc.kernel", "T"),
    (
        "mtp.pre_fc_norm_embedding.weight",
        "mtp.pre_fc_norm_embedding.weight",
        None,
    ),
    ("mtp.pre_fc_norm_hidden.weight", "mtp.pre_fc_norm_hidden.weight", None),
    ("mtp.norm.weight", "mtp.norm.weight", None),
]


def hf_weights(trunk: list[tuple[str, str, str | None]]):
    """The MTP rows of a weight table: `HF_WEIGHTS` plus each trunk layer rule
    `model.layers.{i}.X <-> layers.{i}.X` as `mtp.layers.{i}.X <-> mtp.layers.{i}.X`.
    """
    rows = list(HF_WEIGHTS)
    for hf, ours, transform in trunk:
        if hf.startswith("model.layers.{i}.") and ours.startswith("layers.{i}."):
            rows.append(("mtp." + hf.removeprefix("model."), "mtp." + ours, transform))
    return rows


def graft_head(model, donor):
    """A copy of ``model`` drafting with ``donor``'s MTP head (e.g. the base's).

    The latency table's "base head" row: the final model with the head its base
    stage left. The head must have the shapes ``model``'s own config would give
    a head of that many layers; the copy's config counts the head's layers (so an
    export keeps it), and it shares no module with either model.
    """
    from hat_jax.models import abstract_model

    if getattr(donor, "mtp", None) is None:
        raise ValueError("the donor model has no MTP head")
    n = donor.config.mtp_num_hidden_layers
    cfg = model.config.replace(mtp_num_hidden_layers=n)
    want = jax.tree.map(jnp.shape, nnx.state(abstract_model(cfg).mtp, nnx.Param))
    have = jax.tree.map(jnp.shape, nnx.state(donor.mtp, nnx.Param))
    if want != have:
        raise ValueError("the donor's MTP head does not fit the model's")
    grafted = nnx.merge(*nnx.split(model))
    grafted.mtp = nnx.merge(*nnx.split(donor.mtp))
    grafted.config = cfg
    return grafted
