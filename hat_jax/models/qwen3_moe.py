"""Qwen3-MoE: Qwen3 with routed SwiGLU experts in the sparse layers.

Router: softmax over E experts in float32, keep the top k, renormalise them when
`norm_topk_prob`. Two ways to run the experts (`cfg.moe_impl`), equal up to float
rounding (tests/hat_jax/models/test_moe_dispatch.py):

  dense  every expert on every token, weighted by the routing weights (0 off the
         top k): N x E x F work; exact and simple, the right trade for tiny models.
  topk   top-k dispatch: the N x k (token, expert) pairs sorted by expert, each
         expert's rows through its SwiGLU as one group of `jax.lax.ragged_dot`,
         the results scattered back to their tokens weighted: N x k x F work, what
         a model with many experts (Qwen3.6: 256, k = 8) needs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jaxtyping import Array, Float

from hat_jax.models import llama, qwen3
from hat_jax.models.config import ModelConfig
from hat_jax.models.layers import ACTIVATIONS, MLP


class SparseMoeBlock(nnx.Module):
    """Top-k routed experts. Returns (y [B, T, D], router_logits [B*T, E])."""

    def __init__(self, cfg: ModelConfig, *, rngs: nnx.Rngs):
        e, d, f = cfg.num_experts, cfg.hidden_size, cfg.moe_intermediate_size
        init = nnx.initializers.normal(0.02)
        pd = cfg.jnp_param_dtype
        self.top_k, self.norm_topk_prob = cfg.num_experts_per_tok, cfg.norm_topk_prob
        if cfg.moe_impl not in ("dense", "topk"):
            raise ValueError(
                f"moe_impl must be 'dense' or 'topk', got {cfg.moe_impl!r}"
            )
        self.impl = cfg.moe_impl
        self.dtype = cfg.jnp_dtype
        self.act = ACTIVATIONS[cfg.hidden_act]
        self.gate = nnx.Linear(
            d,
            e,
            use_bias=False,
            dtype=cfg.jnp_dtype,
            param_dtype=pd,
            kernel_init=init,
            rngs=rngs,
        )
        self.gate_proj = nnx.Param(init(rngs.params(), (e, d, f), pd))  # [E, D, F]
        self.up_proj = nnx.Param(init(rngs.params(), (e, d, f), pd))  # [E, D, F]
        self.down_proj = nnx.Param(init(rngs.params(), (e, f, d), pd))  # [E, F, D]

    def select(self, x: Float[Array, "N D"]):
        """The routing of both implementations: (router logits [N, E], the top-k
        experts' weights [N, k] (float32; renormalised with `norm_topk_prob`),
        their indices [N, k])."""
        logits = self.gate(x)  # [N, E]
        probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
        top, idx = jax.lax.top_k(probs, self.top_k)  # [N, k]
        if self.norm_topk_prob:
            top = top / jnp.sum(top, axis=-1, keepdims=True)
        return logits, top, idx

    def route(self, x: Float[Array, "N D"]):
        """Router logits [N, E] and dense combine weights [N, E] (0 off the top k)."""
        logits, top, idx = self.select(x)
        rows = jnp.arange(x.shape[0])[:, None]
        weights = jnp.zeros(logits.shape, jnp.float32).at[rows, idx].set(top)
        return logits, weights.astype(self.dtype)

    def __call__(self, x: Float[Array, "B T D"]):
        b, t, d = x.shape
        flat = x.reshape(b * t, d)  # [N, D]
        if self.impl == "topk":
            y, logits = self._topk(flat)
            return y.reshape(b, t, d), logits
        logits, weights = self.route(flat)
        dt = self.dtype
        g = jnp.einsum("nd,edf->nef", flat, self.gate_proj[...].astype(dt))
        u = jnp.einsum("nd,edf->nef", flat, self.up_proj[...].astype(dt))
        h = self.act(g) * u * weights[:, :, None]  # [N, E, F]
        y = jnp.einsum("nef,efd->nd", h, self.down_proj[...].astype(dt))
        return y.reshape(b, t, d), logits

    def _topk(self, flat: Float[Array, "N D"]):
        """Top-k dispatch: (y [N, D], router logits [N, E])."""
        n, _ = flat.shape
        e, k, dt = self.gate_proj.shape[0], self.top_k, self.dtype
        logits, top, idx = self.select(flat)  # [N, E], [N, k], [N, k]
        expert = idx.reshape(-1)  # [N*k], pair p = (token p // k, its expert)
        order = jnp.argsort(expert, stable=True)  # pairs grouped by expert
        token = order // k  # [N*k]
        sizes = jnp.bincount(expert, length=e).astype(jnp.int32)  # [E]
        xs = flat[token].astype(dt)  # [N*k, D]
        g = jax.lax.ragged_dot(xs, self.gate_proj[...].astype(dt), sizes)  # [N*k, F]
        u = jax.lax.ragged_dot(xs, self.up_proj[...].astype(dt), sizes)
        h = self.act(g) * u
        out = jax.lax.ragged_dot(h, self.down_proj[...].astype(dt), sizes)  # [N*k, D]
        w = top.reshape(-1)[order].astype(dt)  # [N*k]
        y = jnp.zeros((n, out.shape[-1]), out.dtype).at[token].add(out * w[:, None])
        return y, logits


def moe_mlp(cfg: ModelConfig, layer: int, rngs: nnx.Rngs) -> nnx.Module:
    if cfg.is_moe_layer(layer):
        return SparseMoeBlock(cfg, rngs=rngs)
    return MLP(cfg, ffn=cfg.intermediate_size, rngs=rngs)


def build(cfg: ModelConfig, rngs: nnx.Rngs) -> llama.CausalLM:
    return llama.CausalLM(cfg, rngs=rngs, qk_norm=True, mlp_factory=moe_mlp)


HF_WEIGHTS = qwen3.HF_WEIGHTS + [
    ("model.layers.{i}.mlp.gate.weight", "layers.{i}.mlp.gate.kernel", "T"),
    (
        "model.layers.{i}.mlp.experts.{e}.gate_proj.weight",
        "layers.{i}.mlp.gate_proj",
        "T",
    ),
    ("model.layers.{i}.mlp.experts.{e}.up_proj.weight", "layers.{i}.mlp.up_proj", "T"),
    (
        "model.layers.{i}.mlp.experts.{e}.down_proj.weight",
        "layers.{i}.mlp.down_proj",
        "T",
    ),
]
