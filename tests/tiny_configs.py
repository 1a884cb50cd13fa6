"""Tiny model configs several test folders share (random weights: shapes matter)."""

from hat_jax.models import ModelConfig

# A 2-layer Qwen3.5 hybrid in HF field names: one Gated DeltaNet layer (2 key and
# 4 value heads of 8), one gated-attention layer, 4 routed experts (top 2) and a
# shared expert, RoPE on half of each head.
HYBRID_HF = {
    "model_type": "qwen3_5_moe_text",
    "vocab_size": 101,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "moe_intermediate_size": 24,
    "shared_expert_intermediate_size": 40,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "layer_types": ["linear_attention", "full_attention"],
    "rope_parameters": {"rope_theta": 10000.0, "partial_rotary_factor": 0.5},
}


def tiny_hybrid(**hf) -> ModelConfig:
    """`HYBRID_HF` with `hf` (HF config fields) changed, as a ModelConfig."""
    return ModelConfig.from_hf({**HYBRID_HF, **hf})


def tiny_dense(**fields) -> ModelConfig:
    """A 2-layer Qwen3 (6 query heads over 2 KV heads of 16), `fields` changed."""
    base = dict(
        model_type="qwen3",
        vocab_size=101,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=6,
        num_key_value_heads=2,
        head_dim=16,
    )
    return ModelConfig(**{**base, **fields})


def rl_overrides(tokenizer, **kw) -> list[str]:
    """`KEY=VALUE` overrides for a fast CPU run of rl_tiny: width 32, 8-token
    rollouts under the compact harness rendering and tool results (episodes
    about a third as long as the default's), no held-out evaluation; `kw` adds
    or replaces keys."""
    base = {
        "tokenizer": str(tokenizer),
        "model.hidden_size": 32,
        "model.intermediate_size": 64,
        "model.head_dim": 8,
        "rollout.tasks": 1,
        "rollout.group": 2,
        "rollout.n_cases": 2,
        "rollout.max_new_tokens": 8,
        "rollout.prompt_format": "compact",
        "rollout.compact_results": True,
        "eval.n_cases": 0,
        "rl.on_mismatch": "splice",  # a random model's outputs never round-trip
    }
    base.update(kw)
    return [f"{k}={v}" for k, v in base.items()]
