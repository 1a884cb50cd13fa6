"""Flax NNX decoders, chosen by HF `model_type` from a registry."""

from __future__ import annotations

from types import ModuleType

from flax import nnx

from hat_jax.models import llama, qwen3, qwen3_5_moe, qwen3_moe
from hat_jax.models.config import ModelConfig, load_config
from hat_jax.models.llama import CausalLM, DecoderOutput, KVCache
from hat_jax.models.lora import (
    LoRAConfig,
    LoRAParam,
    apply_lora,
    frozen_filter,
    has_lora,
    merge_lora,
    trainable_filter,
)
from hat_jax.models.mtp import MTP, mtp_logits

FAMILIES: dict[str, ModuleType] = {
    "llama": llama,
    "qwen3": qwen3,
    "qwen3_moe": qwen3_moe,
    "qwen3_5_moe": qwen3_5_moe,
}


def family(cfg: ModelConfig) -> ModuleType:
    return FAMILIES[cfg.family]


def build_model(cfg: ModelConfig, *, seed: int = 0) -> CausalLM:
    """A randomly initialised model of `cfg`'s family."""
    return family(cfg).build(cfg, nnx.Rngs(params=seed))


def abstract_model(cfg: ModelConfig) -> CausalLM:
    """The model with ShapeDtypeStruct leaves: no memory, for loading and planning."""
    return nnx.eval_shape(lambda: build_model(cfg))


__all__ = [
    "FAMILIES",
    "CausalLM",
    "DecoderOutput",
    "KVCache",
    "LoRAConfig",
    "LoRAParam",
    "MTP",
    "apply_lora",
    "frozen_filter",
    "has_lora",
    "merge_lora",
    "mtp_logits",
    "trainable_filter",
    "ModelConfig",
    "abstract_model",
    "build_model",
    "family",
    "load_config",
]
