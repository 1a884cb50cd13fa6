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

import jax.numpy as jnp
from flax import nnx, struct
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import (
    MLP,
    Attention,
    RMSNorm,
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

    def __call__(self, x, cos, sin, allowed, positions, kv):
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
    """A decoder-only causal language model built from a `ModelConfig`."""

    def __init__(
        self,
        cfg: ModelConfig,
        *,
        rngs: nnx.Rngs,
        qk_norm: bool = False,
        mlp_factory: Callable = dense_mlp,
    ):
        self.config = cfg
        self.embed_tokens = nnx.Embed(
            cfg.vocab_size,
            cfg.hidden_size,
            dtype=cfg.jnp_dtype,
            param_dtype=cfg.jnp_param_dtype,
            embedding_init=nnx.initializers.normal(0.02),
            rngs=rngs,
        )
        self.layers = nnx.List(
            [
                DecoderLayer(
                    cfg, i, qk_norm=qk_norm, mlp_factory=mlp_factory, rngs=rngs
                )
                for i in range(cfg.num_hidden_layers)
            ]
        )
        self.norm = RMSNorm(
            cfg.hidden_size, eps=cfg.rms_norm_eps, param_dtype=cfg.jnp_param_dtype
        )
        self.lm_head = nnx.data(None)
        if not cfg.tie_word_embeddings:
            self.lm_head = nnx.Linear(
                cfg.hidden_size,
                cfg.vocab_size,
                use_bias=False,
                dtype=cfg.jnp_dtype,
                param_dtype=cfg.jnp_param_dtype,
                kernel_init=nnx.initializers.normal(0.02),
                rngs=rngs,
            )
        # Built last, so the trunk's initial weights do not depend on it.
        self.mtp = nnx.data(None)
        if cfg.mtp_num_hidden_layers:
            self.mtp = MTP(
                cfg,
                make_layer=lambda i: DecoderLayer(
                    cfg, i, qk_norm=qk_norm, mlp_factory=mlp_factory, rngs=rngs
                ),
                rngs=rngs,
            )

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
    ) -> DecoderOutput:
        """Full forward. With `cache`, keys/values are written at `positions`."""
        hidden, cache, routers = self.hidden_states(tokens, positions, mask, cache)
        return DecoderOutput(
            logits=self.logits(hidden),
            hidden=hidden,
            cache=cache,
            router_logits=routers,
        )

    def hidden_states(
        self, tokens, positions=None, mask=None, cache=None, *, prefill=False
    ):
        """The decoder without the LM head: (hidden [B, T, D], cache, router logits).

        `prefill=True` promises an empty `cache` and `tokens` at positions 0..T-1
        (right-padded): attention then runs over this call's keys with the fused
        kernel (not over all cache slots) while the keys are written to the cache.
        """
        b, t = tokens.shape
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(t, dtype=jnp.int32), (b, t))
        cache_len = None if cache is None or prefill else cache[0][0].shape[1]
        allowed = attention_mask(positions, mask, cache_len)  # [B, T, S]
        cos, sin = rope_tables(positions, self.config)
        x = self.embed_tokens(tokens)  # [B, T, D]
        new_cache, routers = [], []
        for i, layer in enumerate(self.layers):
            kv = None if cache is None else cache[i]
            x, kv, router = layer(x, cos, sin, allowed, positions, kv)
            new_cache.append(kv)
            if router is not None:
                routers.append(router)
        return self.norm(x), (None if cache is None else new_cache), tuple(routers)

    def init_cache(self, batch: int, length: int, dtype=None) -> KVCache:
        """Zeroed per-layer KV buffers [B, S, K, H] (slot s holds position s)."""
        c = self.config
        shape = (batch, length, c.num_key_value_heads, c.head_dim)
        dt = dtype or c.jnp_dtype
        return [(jnp.zeros(shape, dt), jnp.zeros(shape, dt)) for _ in self.layers]


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
