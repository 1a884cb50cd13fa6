"""Building blocks shared by the decoder families: RMSNorm, RoPE, attention, SwiGLU.

Einsum letters: B batch, T query positions, S key positions (cache slots), D model,
N query heads, K kv heads, G query heads per kv head (N = K * G), H head dim, F ffn.
Numerics follow transformers: norms and softmax in float32, RoPE tables in float32.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models.attention_ops import fused_attention
from hat_jax.models.config import ModelConfig
from hat_jax.registry import Registry

NEG_INF = -1e30  # finite, so fully masked rows (pad queries) stay NaN-free


class RMSNorm(nnx.Module):
    """y = w * x / rms(x), normalised in float32 then cast back (as HF does)."""

    def __init__(self, dim: int, *, eps: float, param_dtype=jnp.float32):
        self.weight = nnx.Param(jnp.ones((dim,), param_dtype))
        self.eps = eps

    def __call__(self, x: Float[Array, "... D"]) -> Float[Array, "... D"]:
        x32 = x.astype(jnp.float32)
        var = jnp.mean(x32 * x32, axis=-1, keepdims=True)
        y = (x32 * jax.lax.rsqrt(var + self.eps)).astype(x.dtype)
        return self.weight[...].astype(x.dtype) * y


# ----------------------------------------------------------------------------- RoPE
_ROPE_INV_FREQ: Registry[Callable[..., jax.Array]] = Registry("rope_type")


def _register_rope(name):
    return _ROPE_INV_FREQ.register(name)


@_register_rope("default")
def _default_inv_freq(dim: int, theta: float, **_) -> jax.Array:
    return 1.0 / theta ** (jnp.arange(0, dim, 2, dtype=jnp.float32) / dim)


@_register_rope("linear")
def _linear_inv_freq(dim: int, theta: float, *, factor: float, **_) -> jax.Array:
    return _default_inv_freq(dim, theta) / factor


@_register_rope("llama3")
def _llama3_inv_freq(
    dim: int,
    theta: float,
    *,
    factor: float,
    low_freq_factor: float,
    high_freq_factor: float,
    original_max_position_embeddings: int,
    **_,
) -> jax.Array:
    inv = _default_inv_freq(dim, theta)
    low_wl = original_max_position_embeddings / low_freq_factor
    high_wl = original_max_position_embeddings / high_freq_factor
    wavelen = 2 * math.pi / inv
    scaled = jnp.where(wavelen > low_wl, inv / factor, inv)
    smooth = (original_max_position_embeddings / wavelen - low_freq_factor) / (
        high_freq_factor - low_freq_factor
    )
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    mid = (wavelen >= high_wl) & (wavelen <= low_wl)
    return jnp.where(mid, smoothed, scaled)


def rope_tables(
    positions: Int[Array, "B T"], cfg: ModelConfig, rotary_dim: int | None = None
) -> tuple[Float[Array, "B T R"], Float[Array, "B T R"]]:
    """cos/sin tables [B, T, R] (R = rotary_dim, the first R dims of each head)."""
    dim = rotary_dim or cfg.head_dim
    params = dict(cfg.rope_scaling or ())
    kind = params.pop("rope_type", params.pop("type", "default"))
    if kind not in _ROPE_INV_FREQ:
        raise ValueError(
            f"unsupported rope_type {kind!r}; have {list(_ROPE_INV_FREQ.names())}"
        )
    inv = _ROPE_INV_FREQ[kind](dim, cfg.rope_theta, **params)  # [R/2]
    freqs = positions.astype(jnp.float32)[..., None] * inv  # [B, T, R/2]
    emb = jnp.concatenate([freqs, freqs], axis=-1)  # [B, T, R]
    return jnp.cos(emb), jnp.sin(emb)


def apply_rope(x: Float[Array, "B T N H"], cos, sin) -> Float[Array, "B T N H"]:
    """Rotates the first R dims of each head ("rotate_half" layout, as HF)."""
    r = cos.shape[-1]
    rot, keep = x[..., :r], x[..., r:]
    x1, x2 = jnp.split(rot.astype(jnp.float32), 2, axis=-1)
    c, s = cos[:, :, None, :], sin[:, :, None, :]  # [B, T, 1, R]
    rotated = rot.astype(jnp.float32) * c + jnp.concatenate([-x2, x1], -1) * s
    return jnp.concatenate([rotated.astype(x.dtype), keep], axis=-1)


# ------------------------------------------------------------------------ attention
def attention_mask(
    positions: Int[Array, "B T"],
    mask: Bool[Array, "B T"] | None,
    cache_len: int | None,
    segment_ids: Int[Array, "B T"] | None = None,
) -> Bool[Array, "B T S"]:
    """Which keys each query may see: the one attention mask of every model.

    Without a cache keys are this call's tokens: causal by index, padding keys
    removed by `mask`, and with `segment_ids` (packed examples) only keys of the
    query's own example (segment 0, padding, sees earlier padding: no row is
    empty). With a cache, slot s holds position s, so a query at position p sees
    slots s <= p (right padding keeps each row's real tokens at 0..len-1).
    """
    b, t = positions.shape
    if cache_len is None:
        idx = jnp.arange(t)
        allowed = (idx[None, :] <= idx[:, None])[None]  # [1, T, T]
        if mask is not None:
            allowed = allowed & mask[:, None, :].astype(bool)
        if segment_ids is not None:
            allowed = allowed & (segment_ids[:, :, None] == segment_ids[:, None, :])
        return jnp.broadcast_to(allowed, (b, t, t))
    if segment_ids is not None:
        raise ValueError("segment_ids need a call without a cache")
    slots = jnp.arange(cache_len)
    return slots[None, None, :] <= positions[:, :, None]  # [B, T, S]


def dot_product_attention(
    q: Float[Array, "B T N H"],
    k: Float[Array, "B S K H"],
    v: Float[Array, "B S K H"],
    allowed: Bool[Array, "B T S"],
) -> Float[Array, "B T N H"]:
    """Grouped-query attention with a float32 softmax."""
    b, t, n, h = q.shape
    kv = k.shape[2]
    qg = q.reshape(b, t, kv, n // kv, h)  # [B, T, K, G, H]
    scores = jnp.einsum("btkgh,bskh->bkgts", qg, k, preferred_element_type=jnp.float32)
    scores = scores / math.sqrt(h)
    scores = jnp.where(allowed[:, None, None], scores, NEG_INF)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskh->btkgh", probs, v)
    return out.reshape(b, t, n, h)


# Calls of at least this many queries over a cache (a prefill after a cached
# prefix) run the fused kernel in query blocks; fewer (decoding, MTP drafts) the
# einsum, which reads the cache in place instead of transposing it.
FUSED_MIN_QUERIES = 32


def attend(q, k, v, allowed, cache) -> Float[Array, "B T N H"]:
    """Attention of one layer's queries [B, T, N, H]: over this call's keys `k`,
    `v` [B, T, K, H] (training, a fresh prefill: `allowed` [B, T, T]), or over
    the `cache` slots (k, v) [B, S, K, H] when `allowed` [B, T, S] spans them."""
    t = q.shape[1]
    if cache is None or allowed.shape[-1] != cache[0].shape[1]:
        return fused_attention(q, k, v, allowed)
    kc, vc = cache[0].astype(q.dtype), cache[1].astype(q.dtype)
    if t >= FUSED_MIN_QUERIES:
        return fused_attention(q, kc, vc, allowed, causal=False)
    return dot_product_attention(q, kc, vc, allowed)


def write_cache(
    cache: Float[Array, "B S K H"], new: Float[Array, "B T K H"], positions
) -> Float[Array, "B S K H"]:
    """Writes each row's new keys/values at their positions (slot = position)."""
    rows = jnp.arange(cache.shape[0])[:, None]  # [B, 1]
    return cache.at[rows, positions].set(new.astype(cache.dtype), mode="drop")


def _linear(cfg: ModelConfig, din: int, dout: int, bias: bool, rngs: nnx.Rngs):
    return nnx.Linear(
        din,
        dout,
        use_bias=bias,
        dtype=cfg.jnp_dtype,
        param_dtype=cfg.jnp_param_dtype,
        kernel_init=nnx.initializers.normal(0.02),
        rngs=rngs,
    )


class Attention(nnx.Module):
    """Multi-head attention with GQA, RoPE and optional per-head q/k RMSNorm."""

    def __init__(self, cfg: ModelConfig, *, qk_norm: bool, rngs: nnx.Rngs):
        d, n, k, h = (
            cfg.hidden_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.head_dim,
        )
        if n % k:
            raise ValueError(f"num_attention_heads={n} not divisible by kv heads={k}")
        self.n_heads, self.n_kv, self.head_dim = n, k, h
        bias = cfg.attention_bias
        self.q_proj = _linear(cfg, d, n * h, bias, rngs)
        self.k_proj = _linear(cfg, d, k * h, bias, rngs)
        self.v_proj = _linear(cfg, d, k * h, bias, rngs)
        self.o_proj = _linear(cfg, n * h, d, bias, rngs)
        pd = cfg.jnp_param_dtype
        self.q_norm = (
            RMSNorm(h, eps=cfg.rms_norm_eps, param_dtype=pd) if qk_norm else None
        )
        self.k_norm = (
            RMSNorm(h, eps=cfg.rms_norm_eps, param_dtype=pd) if qk_norm else None
        )

    def __call__(self, x: Float[Array, "B T D"], cos, sin, allowed, positions, kv=None):
        b, t, _ = x.shape
        q = self.q_proj(x).reshape(b, t, self.n_heads, self.head_dim)  # [B, T, N, H]
        k = self.k_proj(x).reshape(b, t, self.n_kv, self.head_dim)  # [B, T, K, H]
        v = self.v_proj(x).reshape(b, t, self.n_kv, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if kv is not None:
            kv = (write_cache(kv[0], k, positions), write_cache(kv[1], v, positions))
        out = attend(q, k, v, allowed, kv)
        return self.o_proj(out.reshape(b, t, -1)), kv


class MLP(nnx.Module):
    """SwiGLU: down(act(gate(x)) * up(x))."""

    def __init__(self, cfg: ModelConfig, *, ffn: int, rngs: nnx.Rngs):
        d, bias = cfg.hidden_size, cfg.mlp_bias
        self.gate_proj = _linear(cfg, d, ffn, bias, rngs)
        self.up_proj = _linear(cfg, d, ffn, bias, rngs)
        self.down_proj = _linear(cfg, ffn, d, bias, rngs)
        self.act = ACTIVATIONS[cfg.hidden_act]

    def __call__(self, x: Float[Array, "B T D"]) -> Float[Array, "B T D"]:
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


ACTIVATIONS = {"silu": jax.nn.silu, "gelu": jax.nn.gelu, "relu": jax.nn.relu}
