"""Qwen3.5 / Qwen3.6 MoE text model: a hybrid of Gated DeltaNet and gated attention.

    tokens -> embed -> L x [x + mixer(norm(x)); x + moe(norm(x))] -> norm -> logits

`config.layer_types[i]` picks layer i's token mixer: "linear_attention" is a Gated
DeltaNet (`gated_deltanet.py`), "full_attention" output-gated attention with q/k norm
and partial RoPE (`gated_attention.py`). Every MLP is routed top-k experts (softmax,
renormalised) plus a shared expert scaled by sigmoid(shared_expert_gate(x)). Norms
are zero-centred (`norms.py`). This is transformers' `Qwen3_5MoeForCausalLM`
(`model_type` "qwen3_5_moe_text"), checked logit for logit.

The MTP head (`mtp.*`, vLLM's `Qwen3_5MoeMTP`) is a full-attention layer of this
family with zero-centred norms; `mtp.mtp_logits` runs it.

Decoding cache: a list with one entry per layer, `(k, v)` [B, S, K, H] for
full-attention layers (slot s holds position s, as `llama.KVCache`) and a
`GDNState` (convolution inputs, recurrent state) for linear-attention layers. Pass
`mask` with a right-padded prefill so padding leaves the recurrent state untouched.
"""

from __future__ import annotations

import functools

import jax
from flax import nnx

from hat_jax.models import qwen3_moe
from hat_jax.models.config import ModelConfig
from hat_jax.models.gated_attention import GatedAttention
from hat_jax.models.gated_deltanet import GatedDeltaNet, GDNState
from hat_jax.models.layers import MLP, _linear
from hat_jax.models.llama import CausalLM
from hat_jax.models.norms import ZeroCenteredRMSNorm

# layer_types value -> (attribute name, as in HF's state dict; module class)
MIXERS = {
    "linear_attention": ("linear_attn", GatedDeltaNet),
    "full_attention": ("self_attn", GatedAttention),
}


class SparseMoeBlock(qwen3_moe.SparseMoeBlock):
    """Routed experts plus a sigmoid-gated shared expert: (y [B, T, D], router)."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        super().__init__(cfg, rngs=rngs)
        self.shared_expert = MLP(
            cfg, ffn=cfg.shared_expert_intermediate_size, rngs=rngs
        )
        self.shared_expert_gate = _linear(cfg, cfg.hidden_size, 1, False, rngs)

    def __call__(self, x):
        routed, logits = super().__call__(x)
        shared = jax.nn.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
        return routed + shared, logits


class DecoderLayer(nnx.Module):
    def __init__(self, cfg: ModelConfig, layer_type: str, *, rngs: nnx.Rngs):
        if layer_type not in MIXERS:
            raise ValueError(f"unknown layer type {layer_type!r}; have {list(MIXERS)}")
        norm = functools.partial(
            ZeroCenteredRMSNorm, eps=cfg.rms_norm_eps, param_dtype=cfg.jnp_param_dtype
        )
        self.layer_type = layer_type
        self.mixer, cls = MIXERS[layer_type]
        self.input_layernorm = norm(cfg.hidden_size)
        setattr(self, self.mixer, cls(cfg, rngs=rngs))
        self.post_attention_layernorm = norm(cfg.hidden_size)
        self.mlp = SparseMoeBlock(cfg, rngs=rngs)

    def init_cache(self, batch: int, length: int, dtype):
        return getattr(self, self.mixer).init_cache(batch, length, dtype)

    def __call__(self, x, cos, sin, allowed, positions, cache=None, *, mask=None, **kw):
        """(x [B, T, D], this layer's updated cache or None, router logits).

        `kw`: passed to the token mixer (`keep_states` for the DeltaNet layers).
        """
        h, cache = getattr(self, self.mixer)(
            self.input_layernorm(x),
            cos=cos,
            sin=sin,
            allowed=allowed,
            positions=positions,
            mask=mask,
            cache=cache,
            **kw,
        )
        x = x + h
        out, router = self.mlp(self.post_attention_layernorm(x))
        return x + out, cache, router


HybridCache = list  # per layer: (k, v) [B, S, K, H] or GDNState


def kv_slots(cache: HybridCache | None) -> int | None:
    """S, the KV slots of the full-attention layers (None: no cache or none)."""
    for entry in cache or ():
        if not isinstance(entry, GDNState):
            return entry[0].shape[1]
    return None


class Qwen35MoeLM(CausalLM):
    """The hybrid causal LM: `CausalLM` with this family's layers and norms.

    Layer i's token mixer is `config.layer_types[i]`; every MTP layer is full
    attention (as vLLM's); norms are zero-centred. The forward pass, the LM head
    and the layer loop are `CausalLM`'s.
    """

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        if len(cfg.layer_types) != cfg.num_hidden_layers:
            raise ValueError(
                f"layer_types has {len(cfg.layer_types)} entries for "
                f"{cfg.num_hidden_layers} layers"
            )
        super().__init__(cfg, rngs=rngs)

    def make_layer(self, i: int, rngs: nnx.Rngs) -> DecoderLayer:
        return DecoderLayer(self.config, self.config.layer_types[i], rngs=rngs)

    def make_mtp_layer(self, i: int, rngs: nnx.Rngs) -> DecoderLayer:
        return DecoderLayer(self.config, "full_attention", rngs=rngs)

    def make_norm(self, dim: int) -> ZeroCenteredRMSNorm:
        c = self.config
        return ZeroCenteredRMSNorm(
            dim, eps=c.rms_norm_eps, param_dtype=c.jnp_param_dtype
        )

    def kv_slots(self, cache: HybridCache) -> int | None:
        return kv_slots(cache)

    def init_cache(self, batch: int, length: int, dtype=None) -> HybridCache:
        """Zeroed per-layer caches: KV [B, S, K, H] or a DeltaNet `GDNState`."""
        dt = dtype or self.config.jnp_dtype
        return [layer.init_cache(batch, length, dt) for layer in self.layers]


def build(cfg: ModelConfig, rngs: nnx.Rngs) -> Qwen35MoeLM:
    return Qwen35MoeLM(cfg, rngs=rngs)


def _layer_rows(rows):
    return [
        (f"model.layers.{{i}}.{hf}", f"layers.{{i}}.{ours}", t) for hf, ours, t in rows
    ]


# HF name <-> our path (see llama.HF_WEIGHTS); the MTP head's rows are derived
# from the layer rows by `mtp.hf_weights`. Experts load from either HF layout.
HF_WEIGHTS = [
    ("model.embed_tokens.weight", "embed_tokens.embedding", None),
    ("model.norm.weight", "norm.weight", None),
    ("lm_head.weight", "lm_head.kernel", "T"),
] + _layer_rows(
    [
        ("input_layernorm.weight", "input_layernorm.weight", None),
        ("post_attention_layernorm.weight", "post_attention_layernorm.weight", None),
        *[
            (f"self_attn.{p}.{w}", f"self_attn.{p}.{ours}", t)
            for p in ("q_proj", "k_proj", "v_proj", "o_proj")
            for w, ours, t in (("weight", "kernel", "T"), ("bias", "bias", None))
        ],
        ("self_attn.q_norm.weight", "self_attn.q_norm.weight", None),
        ("self_attn.k_norm.weight", "self_attn.k_norm.weight", None),
        *[
            (f"linear_attn.{p}.weight", f"linear_attn.{p}.kernel", "T")
            for p in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")
        ],
        ("linear_attn.conv1d.weight", "linear_attn.conv1d.weight", None),
        ("linear_attn.dt_bias", "linear_attn.dt_bias", None),
        ("linear_attn.A_log", "linear_attn.A_log", None),
        ("linear_attn.norm.weight", "linear_attn.norm.weight", None),
        ("mlp.gate.weight", "mlp.gate.kernel", "T"),
        *[
            (f"mlp.experts.{{e}}.{p}.weight", f"mlp.{p}", "T")
            for p in ("gate_proj", "up_proj", "down_proj")
        ],
        *[
            (f"mlp.shared_expert.{p}.weight", f"mlp.shared_expert.{p}.kernel", "T")
            for p in ("gate_proj", "up_proj", "down_proj")
        ],
        ("mlp.shared_expert_gate.weight", "mlp.shared_expert_gate.kernel", "T"),
    ]
)
