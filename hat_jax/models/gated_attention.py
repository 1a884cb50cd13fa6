"""Output-gated attention of Qwen3-Next / Qwen3.5 (the hybrid's full-attention layers).

    [q | gate] = q_proj(x)            per head: H query dims, then H gate dims
    q, k = zc_norm(q), zc_norm(k)     zero-centred RMSNorm per head, before RoPE
    q, k = rope(q), rope(k)           partial: only the first R = H * factor dims
    y = o_proj(attn(q, k, v) * sigmoid(gate))

GQA, the KV cache (slot = position) and the cache-free fused kernel are those of
`layers.Attention`. Dims: B batch, T/S positions, D model, N/K query/kv heads,
H head dim.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Float

from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import (
    _linear,
    apply_rope,
    attend,
    write_cache,
)
from hat_jax.models.norms import ZeroCenteredRMSNorm

KV = tuple[Float[Array, "B S K H"], Float[Array, "B S K H"]]


class GatedAttention(nnx.Module):
    """HF `Qwen3_5MoeAttention`; parameter names follow its state dict."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        d, n, k, h = (
            cfg.hidden_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        if n % k:
            raise ValueError(f"num_attention_heads={n} not divisible by kv heads={k}")
        self.n_heads, self.n_kv, self.head_dim = n, k, h
        bias, pd = cfg.attention_bias, cfg.jnp_param_dtype
        self.q_proj = _linear(cfg, d, n * h * 2, bias, rngs)  # queries and gates
        self.k_proj = _linear(cfg, d, k * h, bias, rngs)
        self.v_proj = _linear(cfg, d, k * h, bias, rngs)
        self.o_proj = _linear(cfg, n * h, d, bias, rngs)
        self.q_norm = ZeroCenteredRMSNorm(h, eps=cfg.rms_norm_eps, param_dtype=pd)
        self.k_norm = ZeroCenteredRMSNorm(h, eps=cfg.rms_norm_eps, param_dtype=pd)

    def init_cache(self, batch: int, length: int, dtype) -> KV:
        shape = (batch, length, self.n_kv, self.head_dim)
        return jnp.zeros(shape, dtype), jnp.zeros(shape, dtype)

    def __call__(
        self,
        x: Float[Array, "B T D"],
        *,
        cos,
        sin,
        allowed,
        positions,
        cache: KV | None = None,
        **_,
    ) -> tuple[Float[Array, "B T D"], KV | None]:
        """(output [B, T, D], updated (k, v) or None). `allowed` [B, T, S]."""
        b, t, _ = x.shape
        n, h = self.n_heads, self.head_dim
        qg = self.q_proj(x).reshape(b, t, n, 2 * h)  # [B, T, N, 2H]
        q, gate = qg[..., :h], qg[..., h:].reshape(b, t, n * h)
        q = self.q_norm(q)
        k = self.k_norm(self.k_proj(x).reshape(b, t, self.n_kv, h))  # [B, T, K, H]
        v = self.v_proj(x).reshape(b, t, self.n_kv, h)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            cache = (
                write_cache(cache[0], k, positions),
                write_cache(cache[1], v, positions),
            )
        out = attend(q, k, v, allowed, cache)
        out = out.reshape(b, t, n * h) * jax.nn.sigmoid(gate)
        return self.o_proj(out), cache
