"""The Qwen3.5 / Qwen3-Next RMSNorms: zero-centred, and gated by silu(z).

    ZeroCenteredRMSNorm:  y = x / rms(x) * (1 + w)     (w starts at 0)
    GatedRMSNorm:         y = w * x / rms(x) * silu(z)  (w starts at 1)

Both normalise in float32 and cast back, exactly where transformers' `Qwen3_5MoeRMSNorm`
and `Qwen3_5MoeRMSNormGated` do (the plain `layers.RMSNorm` casts before scaling).
The stored `weight` is HF's tensor as is, so weight tables need no transform.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Float


def _normed32(x, eps: float):
    x32 = x.astype(jnp.float32)
    return x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)


class ZeroCenteredRMSNorm(nnx.Module):
    """y = (x / rms(x)) * (1 + w), all in float32, cast back once."""

    def __init__(self, dim: int, *, eps: float, param_dtype=jnp.float32):
        self.weight = nnx.Param(jnp.zeros((dim,), param_dtype))
        self.eps = eps

    def __call__(self, x: Float[Array, "... D"]) -> Float[Array, "... D"]:
        scale = 1.0 + self.weight[...].astype(jnp.float32)
        return (_normed32(x, self.eps) * scale).astype(x.dtype)


class GatedRMSNorm(nnx.Module):
    """y = w * (x / rms(x)) * silu(z): the Gated DeltaNet's output norm per head."""

    def __init__(self, dim: int, *, eps: float, param_dtype=jnp.float32):
        self.weight = nnx.Param(jnp.ones((dim,), param_dtype))
        self.eps = eps

    def __call__(
        self, x: Float[Array, "... H"], z: Float[Array, "... H"]
    ) -> Float[Array, "... H"]:
        y = self.weight[...] * _normed32(x, self.eps).astype(x.dtype)  # as HF: w * x
        return (y * jax.nn.silu(z.astype(jnp.float32))).astype(x.dtype)
