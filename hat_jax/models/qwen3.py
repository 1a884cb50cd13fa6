"""Qwen3 dense: the Llama decoder with per-head q/k RMSNorm and an explicit head_dim.

head_dim may differ from hidden_size / num_attention_heads (Qwen3 uses 128 for every
size), which `ModelConfig.head_dim` carries; the norms act on each head's H dims
before RoPE, exactly as transformers' `Qwen3Attention` does.
"""

from __future__ import annotations

from flax import nnx

from hat_jax.models import llama
from hat_jax.models.config import ModelConfig


def build(cfg: ModelConfig, rngs: nnx.Rngs) -> llama.CausalLM:
    return llama.CausalLM(cfg, rngs=rngs, qk_norm=True)


HF_WEIGHTS = llama.HF_WEIGHTS + [
    (
        "model.layers.{i}.self_attn.q_norm.weight",
        "layers.{i}.self_attn.q_norm.weight",
        None,
    ),
    (
        "model.layers.{i}.self_attn.k_norm.weight",
        "layers.{i}.self_attn.k_norm.weight",
        None,
    ),
]
