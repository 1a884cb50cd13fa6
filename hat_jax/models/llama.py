"""Llama-style decoder (SmolLM2 is one): the causal LM every dense family reuses.

    tokens -> embed -> L x [x + attn(norm(x)); x + mlp(norm(x))] -> norm -> logits

Qwen3 is this with per-head q/k RMSNorm; Qwen3-MoE swaps some MLPs for a routed
mixture of experts (`mlp_factory`). With `mtp_num_hidden_layers` > 0 the model also
holds a multi-token-prediction head (`self.mtp`, `hat_jax.models.mtp`) made of the
same decoder layers; `forward` never runs it (`mtp.mtp_logits` does). Module names
follow HF so weight tables stay short.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx, struct
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import (
    MLP,
    Attention,
    RMSNorm,
    _linear,
    attention_mask,
    rope_tables,
)
from hat_jax.models.mtp import MTP

KVCache = list[tuple[jnp.ndarray, jnp.ndarray]]  # per layer (k, v), each [B, S, K, H]


@struct.dataclass
class DecoderOutput:
    logits: Float[Array, "B T V"]  # float32
    hidden: Float[Array, "B T D"]  # after the final norm
    cache: KVCache | None
    router_logits: tuple[Float[Array, "BT E"], ...]  # one per MoE layer; () if dense


def dense_mlp(cfg: ModelConfig, layer: int, rngs: nnx.Rngs) -> nnx.Module:
    del layer
    return MLP(cfg, ffn=cfg.intermediate_size, rngs=rngs)


class DecoderLayer(nnx.Module):
    def __init__(self, cfg, layer: int, *, qk_norm: bool, mlp_factory, rngs):
        pd = cfg.jnp_param_dtype
        self.input_layernorm = RMSNorm(
            cfg.hidden_size, eps=cfg.rms_norm_eps, param_dtype=pd
        )
        self.self_attn = Attention(cfg, qk_norm=qk_norm, rngs=rngs)
        self.post_attention_layernorm = RMSNorm(
            cfg.hidden_size, eps=cfg.rms_norm_eps, param_dtype=pd
        )
        self.mlp = mlp_factory(cfg, layer, rngs)

    def __call__(self, x, cos, sin, allowed, positions, kv=None, **_):
        """(x [B, T, D], this layer's updated kv or None, router logits or None).

        Keyword arguments (`mask`, `keep_states`: the hybrid's layers use them)
        are accepted and unused: full attention reads padding from `allowed`.
        """
        h, kv = self.self_attn(
            self.input_layernorm(x), cos, sin, allowed, positions, kv
        )
        x = x + h
        out = self.mlp(self.post_attention_layernorm(x))
        router = None
        if isinstance(out, tuple):  # MoE blocks also return their router logits
            out, router = out
        return x + out, kv, router


class CausalLM(nnx.Module):
    """A decoder-only causal language model built from a `ModelConfig`.

    Subclasses supply their parts through `make_layer`, `make_mtp_layer` and
    `make_norm` (the Qwen3.5 hybrid does); `hidden_states` is every family's one
    layer loop, for training (packed, remat), prefill and decoding.
    """

    def __init__(
        self,
        cfg: ModelConfig,
        *,
        rngs: nnx.Rngs,
        qk_norm: bool = False,
        mlp_factory: Callable = dense_mlp,
    ):
        self.config = cfg
        self.qk_norm, self.mlp_factory = qk_norm, mlp_factory
        self.embed_tokens = nnx.Embed(
            cfg.vocab_size,
            cfg.hidden_size,
            dtype=cfg.jnp_dtype,
            param_dtype=cfg.jnp_param_dtype,
            embedding_init=nnx.initializers.normal(0.02),
            rngs=rngs,
        )
        n = cfg.num_hidden_layers
        self.layers = nnx.List([self.make_layer(i, rngs) for i in range(n)])
        self.norm = self.make_norm(cfg.hidden_size)
        self.lm_head = nnx.data(None)
        if not cfg.tie_word_embeddings:
            self.lm_head = _linear(cfg, cfg.hidden_size, cfg.vocab_size, False, rngs)
        # Built last, so the trunk's initial weights do not depend on it.
        self.mtp = nnx.data(None)
        if cfg.mtp_num_hidden_layers:
            self.mtp = MTP(
                cfg,
                make_layer=lambda i: self.make_mtp_layer(i, rngs),
                rngs=rngs,
                norm=self.make_norm,
            )

    def make_layer(self, i: int, rngs: nnx.Rngs) -> nnx.Module:
        """Decoder layer i: `(x, cos, sin, allowed, positions, cache, *, mask,
        keep_states) -> (x, cache, router logits or None)`."""
        return DecoderLayer(
            self.config,
            i,
            qk_norm=self.qk_norm,
            mlp_factory=self.mlp_factory,
            rngs=rngs,
        )

    def make_mtp_layer(self, i: int, rngs: nnx.Rngs) -> nnx.Module:
        """MTP layer i (`models.mtp`): the trunk's layer i by default."""
        return self.make_layer(i, rngs)

    def make_norm(self, dim: int) -> nnx.Module:
        c = self.config
        return RMSNorm(dim, eps=c.rms_norm_eps, param_dtype=c.jnp_param_dtype)

    def __call__(
        self,
        tokens: Int[Array, "B T"],
        positions: Int[Array, "B T"] | None = None,
        mask: Bool[Array, "B T"] | None = None,
    ) -> Float[Array, "B T V"]:
        """Logits for every position (float32). `mask` marks real (non-pad) tokens."""
        return self.forward(tokens, positions, mask).logits

    def logits(self, hidden: Float[Array, "B T D"]) -> Float[Array, "B T V"]:
        if self.lm_head is None:
            out = self.embed_tokens.attend(hidden)
        else:
            out = self.lm_head(hidden)
        return out.astype(jnp.float32)

    def forward(
        self,
        tokens: Int[Array, "B T"],
        positions: Int[Array, "B T"] | None = None,
        mask: Bool[Array, "B T"] | None = None,
        cache: KVCache | None = None,
        **kw,
    ) -> DecoderOutput:
        """`hidden_states` (same arguments) then the LM head."""
        hidden, cache, routers = self.hidden_states(
            tokens, positions, mask, cache, **kw
        )
        return DecoderOutput(
            logits=self.logits(hidden),
            hidden=hidden,
            cache=cache,
            router_logits=routers,
        )

    def hidden_states(
        self,
        tokens: Int[Array, "B T"],
        positions: Int[Array, "B T"] | None = None,
        mask: Bool[Array, "B T"] | None = None,
        cache: list | None = None,
        *,
        segment_ids: Int[Array, "B T"] | None = None,
        prefill: bool = False,
        remat: bool = False,
        keep_states: bool = False,
    ) -> tuple[Float[Array, "B T D"], list | None, tuple]:
        """The decoder without the LM head: (hidden [B, T, D] after the final norm,
        the updated cache or None, router logits [B*T, E] per MoE layer).

        Args:
          tokens, positions: ids and their positions (default 0..T-1).
          mask: real (non-pad) tokens; attention ignores padded keys (and the
            hybrid's DeltaNet layers skip padded steps, also when writing a cache).
          cache: per-layer decoding cache (`init_cache`); keys/values are written
            at `positions` (slot s holds position s).
          segment_ids: packed examples (training; 0 = padding): attention stays
            inside each one, so every example's states equal those of running it
            alone (tested). Not with a cache.
          prefill: promises an empty `cache` and positions 0..T-1 (right-padded):
            attention runs over this call's keys (fused kernel) while the keys are
            written to the cache.
          remat: recompute each layer in the backward pass instead of storing its
            activations (training, no cache).
          keep_states: the hybrid's DeltaNet layers return their state after every
            prefix of the T tokens (speculative decoding's rollback).
        """
        b, t = tokens.shape
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32), (b, t))
        if segment_ids is not None and cache is not None:
            raise ValueError("segment_ids (packed training) cannot go with a cache")
        slots = None if cache is None or prefill else self.kv_slots(cache)
        allowed = attention_mask(positions, mask, slots, segment_ids)  # [B, T, S]
        cos, sin = rope_tables(positions, self.config, self.config.rotary_dim)
        x = self.embed_tokens(tokens)  # [B, T, D]
        kw = {"mask": mask, "keep_states": keep_states}  # the hybrid's layers read them
        new_cache, routers = [], []
        for i, layer in enumerate(self.layers):
            entry = None if cache is None else cache[i]
            args = (x, cos, sin, allowed, positions, entry)
            if remat and cache is None:
                x, entry, router = _remat_call(layer, args, kw)
            else:
                x, entry, router = layer(*args, **kw)
            new_cache.append(entry)
            if router is not None:
                routers.append(router)
        return self.norm(x), (None if cache is None else new_cache), tuple(routers)

    def kv_slots(self, cache: KVCache) -> int | None:
        """S, the cache's KV slots (the hybrid counts its attention layers')."""
        return cache[0][0].shape[1]

    def init_cache(self, batch: int, length: int, dtype=None) -> KVCache:
        """Zeroed per-layer KV buffers [B, S, K, H] (slot s holds position s)."""
        c = self.config
        shape = (batch, length, c.num_key_value_heads, c.head_dim)
        dt = dtype or c.jnp_dtype
        return [(jnp.zeros(shape, dt), jnp.zeros(shape, dt)) for _ in self.layers]


def _remat_call(layer, args, kw):
    """`layer(*args, **kw)` with its activations recomputed in the backward."""
    graphdef, state = nnx.split(layer)

    @jax.checkpoint
    def run(state, args):
        return nnx.merge(graphdef, state)(*args, **kw)

    return run(state, args)


def build(cfg: ModelConfig, rngs: nnx.Rngs) -> CausalLM:
    return CausalLM(cfg, rngs=rngs)


# HF safetensors name <-> our parameter path. {i} layer, {e} expert (stacked on
# axis 0). "T": HF stores Linear weights [out, in]; NNX kernels are [in, out].
HF_WEIGHTS = [
    ("model.embed_tokens.weight", "embed_tokens.embedding", None),
    (
        "model.layers.{i}.input_layernorm.weight",
        "layers.{i}.input_layernorm.weight",
        None,
    ),
    (
        "model.layers.{i}.self_attn.q_proj.weight",
        "layers.{i}.self_attn.q_proj.kernel",
        "T",
    ),
    (
        "model.layers.{i}.self_attn.k_proj.weight",
        "layers.{i}.self_attn.k_proj.kernel",
        "T",
    ),
    (
        "model.layers.{i}.self_attn.v_proj.weight",
        "layers.{i}.self_attn.v_proj.kernel",
        "T",
    ),
    (
        "model.layers.{i}.self_attn.o_proj.weight",
        "layers.{i}.self_attn.o_proj.kernel",
        "T",
    ),
    (
        "model.layers.{i}.self_attn.q_proj.bias",
        "layers.{i}.self_attn.q_proj.bias",
        None,
    ),
    (
        "model.layers.{i}.self_attn.k_proj.bias",
        "layers.{i}.self_attn.k_proj.bias",
        None,
    ),
    (
        "model.layers.{i}.self_attn.v_proj.bias",
        "layers.{i}.self_attn.v_proj.bias",
        None,
    ),
    (
        "model.layers.{i}.self_attn.o_proj.bias",
        "layers.{i}.self_attn.o_proj.bias",
        None,
    ),
    (
        "model.layers.{i}.post_attention_layernorm.weight",
        "layers.{i}.post_attention_layernorm.weight",
        None,
    ),
    ("model.layers.{i}.mlp.gate_proj.weight", "layers.{i}.mlp.gate_proj.kernel", "T"),
    ("model.layers.{i}.mlp.up_proj.weight", "layers.{i}.mlp.up_proj.kernel", "T"),
    ("model.layers.{i}.mlp.down_proj.weight", "layers.{i}.mlp.down_proj.kernel", "T"),
    ("model.layers.{i}.mlp.gate_proj.bias", "layers.{i}.mlp.gate_proj.bias", None),
    ("model.layers.{i}.mlp.up_proj.bias", "layers.{i}.mlp.up_proj.bias", None),
    ("model.layers.{i}.mlp.down_proj.bias", "layers.{i}.mlp.down_proj.bias", None),
    ("model.norm.weight", "norm.weight", None),
    ("lm_head.weight", "lm_head.kernel", "T"),
]
