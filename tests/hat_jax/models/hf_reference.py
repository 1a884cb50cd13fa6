"""Tiny random transformers models, the independent numerical reference."""

from __future__ import annotations

import numpy as np
import torch
import transformers

TINY = dict(
    vocab_size=97,
    hidden_size=48,
    intermediate_size=80,
    num_hidden_layers=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-6,
)

# family -> (config class, extra kwargs)
FAMILIES = {
    "llama": (transformers.LlamaConfig, {}),
    "qwen3": (transformers.Qwen3Config, {}),
    "qwen3_moe": (
        transformers.Qwen3MoeConfig,
        dict(
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            decoder_sparse_step=1,
            mlp_only_layers=[1],
            norm_topk_prob=True,
        ),
    ),
}


def make_hf(family, *, heads=6, kv_heads=2, head_dim=None, tie=True, seed=0, **kw):
    cls, extra = FAMILIES[family]
    args = dict(
        TINY,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        tie_word_embeddings=tie,
        **extra,
    )
    args["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    if head_dim is not None:
        args["head_dim"] = head_dim
    args.update(kw)
    cfg = cls(**args)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    with torch.no_grad():  # HF inits norms to 1 and some weights to 0: randomise all
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.2)
    return model.eval()


def hf_logits(model, tokens: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(tokens),
            attention_mask=None if mask is None else torch.tensor(mask),
        )
    return out.logits.float().numpy()
