"""LoRA adapters on the decoder's projections, merged back into plain kernels on export.

    y = x @ W (+ b) + (alpha / rank) * (dropout(x) @ A) @ B    A [in, r], B [r, out]

`apply_lora` swaps each targeted `nnx.Linear` of the decoder layers for a `LoRALinear`
that keeps the base `kernel`/`bias` Variables at the same paths (so a LoRA model's
base weights are addressed exactly like the plain model's) and adds `lora_a`/`lora_b`
as `LoRAParam`s. B starts at zero, so the wrapped model computes the base model.
`merge_lora` folds W + (alpha / r) * A @ B back into `nnx.Linear`s: the result has the
plain `CausalLM` parameter tree and `save_hf` exports it unchanged.

Training only the adapters (`LoRAParam` subclasses `nnx.Param`, so filter by it)::

    wrt = trainable_filter(lora=True)                  # LoRAParam
    optimizer = nnx.Optimizer(model, tx, wrt=wrt)
    grads = nnx.grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model, batch)
    graphdef, trainable, frozen, rest = nnx.split(
        model, wrt, frozen_filter(lora=True), ...)     # frozen: base nnx.Params

Qwen3-MoE expert weights are stacked `nnx.Param`s [E, D, F], not Linears: LoRA on
experts (and on the router `gate`) is out of scope; their attention and dense-MLP
layers are wrapped as usual. The Qwen3.5 hybrid: its Gated DeltaNet layers'
projections (`DELTANET_TARGETS`, under `linear_attn`), its gated attention's and
its shared expert's (`mlp.shared_expert.{gate,up,down}_proj`, by the MLP names).
`embed_tokens`, `lm_head` and the MTP head are never wrapped.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jaxtyping import Array, Float

from hat_jax.models.llama import CausalLM

ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")
DELTANET_TARGETS = ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj")
ALL_TARGETS = ATTENTION_TARGETS + MLP_TARGETS + DELTANET_TARGETS


@dataclasses.dataclass(frozen=True)
class LoRAConfig:
    """Which projections get adapters and how big they are.

    Attributes:
        rank: r, the inner dimension of A [in, r] and B [r, out].
        alpha: the delta is scaled by alpha / rank.
        targets: projection names inside each decoder layer (attention, MLP or
          shared expert, Gated DeltaNet); a name a layer lacks is skipped.
        dropout: dropout rate on the adapter's input (training mode only).
    """

    rank: int
    alpha: float
    targets: tuple[str, ...] = ALL_TARGETS
    dropout: float = 0.0

    def __post_init__(self):
        if self.rank < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {self.rank}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")
        unknown = sorted(set(self.targets) - set(ALL_TARGETS))
        if unknown or not self.targets:
            raise ValueError(
                f"unknown LoRA targets {unknown}; choose from {ALL_TARGETS}"
            )

    @property
    def scale(self) -> float:
        return self.alpha / self.rank


class LoRAParam(nnx.Param):
    """An adapter weight: the only parameters a LoRA run trains."""


def trainable_filter(lora: bool):
    """The nnx filter of the parameters an optimiser should update."""
    return LoRAParam if lora else nnx.Param


def frozen_filter(lora: bool):
    """The nnx filter of the parameters held fixed (nothing without LoRA)."""
    return nnx.All(nnx.Param, nnx.Not(LoRAParam)) if lora else nnx.Nothing


# Kaiming-uniform with a = sqrt(5) on A's fan-in (bound 1 / sqrt(in)), as PEFT does.
_A_INIT = nnx.initializers.variance_scaling(1 / 3, "fan_in", "uniform")


class LoRALinear(nnx.Module):
    """`nnx.Linear` (frozen base kernel/bias) plus a scaled low-rank delta A @ B."""

    def __init__(
        self,
        base: nnx.Linear,
        *,
        rank: int,
        alpha: float,
        dropout: float,
        rngs: nnx.Rngs,
    ):
        din, dout = base.kernel.shape
        self.kernel = base.kernel  # the base Variables, same paths as before
        self.bias = base.bias
        self.in_features, self.out_features = din, dout
        self.dtype, self.param_dtype = base.dtype, base.param_dtype
        self.precision, self.dot_general = base.precision, base.dot_general
        self.promote_dtype = base.promote_dtype
        self.preferred_element_type = base.preferred_element_type
        self.rank, self.alpha, self.scale = rank, alpha, alpha / rank
        self.lora_a = LoRAParam(_A_INIT(rngs.params(), (din, rank), base.param_dtype))
        self.lora_b = LoRAParam(jnp.zeros((rank, dout), base.param_dtype))
        self.dropout = nnx.data(None)
        if dropout > 0:
            self.dropout = nnx.Dropout(dropout, rngs=rngs)

    def __call__(self, x: Float[Array, "... I"]) -> Float[Array, "... O"]:
        kernel = self.kernel[...]
        bias = None if self.bias is None else self.bias[...]
        a, b = self.lora_a[...], self.lora_b[...]
        x, kernel, bias, a, b = self.promote_dtype(
            (x, kernel, bias, a, b), dtype=self.dtype
        )
        kw = {}
        if self.preferred_element_type is not None:
            kw["preferred_element_type"] = self.preferred_element_type
        dims = (((x.ndim - 1,), (0,)), ((), ()))
        # The base product exactly as nnx.Linear computes it: identical at B = 0.
        y = self.dot_general(x, kernel, dims, precision=self.precision, **kw)
        if bias is not None:
            y += jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        h = x if self.dropout is None else self.dropout(x)
        delta = (h @ a) @ b  # [..., r] then [..., O]
        return y + (self.scale * delta).astype(y.dtype)

    def merged_kernel(self) -> jax.Array:
        """W + (alpha / r) * A @ B in float32, cast back to W's dtype."""
        w = self.kernel[...]
        ab = jnp.matmul(
            self.lora_a[...].astype(jnp.float32),
            self.lora_b[...].astype(jnp.float32),
            precision=jax.lax.Precision.HIGHEST,
        )
        return (w.astype(jnp.float32) + self.scale * ab).astype(w.dtype)

    def to_linear(self) -> nnx.Linear:
        """A plain `nnx.Linear` holding the merged kernel (same Variable metadata)."""
        lin = nnx.eval_shape(
            lambda: nnx.Linear(
                self.in_features,
                self.out_features,
                use_bias=self.bias is not None,
                dtype=self.dtype,
                param_dtype=self.param_dtype,
                precision=self.precision,
                dot_general=self.dot_general,
                promote_dtype=self.promote_dtype,
                preferred_element_type=self.preferred_element_type,
                rngs=nnx.Rngs(0),
            )
        )
        lin.kernel = self.kernel.replace(self.merged_kernel())
        lin.bias = self.bias if self.bias is not None else nnx.data(None)
        return lin


def _projections(model: CausalLM):
    """(parent module, attribute name) of every projection slot in the decoder."""
    for layer in model.layers:
        mlp = getattr(layer, "mlp", None)
        for parent, names in (
            (getattr(layer, "self_attn", None), ATTENTION_TARGETS),
            (getattr(layer, "linear_attn", None), DELTANET_TARGETS),
            (mlp, MLP_TARGETS),
            (getattr(mlp, "shared_expert", None), MLP_TARGETS),
        ):
            if parent is None:
                continue
            for name in names:
                yield parent, name


def apply_lora(model: CausalLM, cfg: LoRAConfig, *, rngs: nnx.Rngs) -> CausalLM:
    """A copy of `model` with `cfg.targets` wrapped in `LoRALinear` (B = 0).

    The input is left unchanged; arrays are shared, not copied. `rngs` needs a
    `params` stream, and a `dropout` stream when `cfg.dropout > 0` (dropout acts in
    training mode; `model.eval()` turns it off).
    """
    model = nnx.clone(model)
    wrapped = 0
    for parent, name in _projections(model):
        if name not in cfg.targets:
            continue
        base = getattr(parent, name, None)
        if isinstance(base, LoRALinear):
            raise ValueError(f"{name} already has a LoRA adapter")
        if not isinstance(base, nnx.Linear):  # MoE experts: stacked Params
            continue
        lora = LoRALinear(
            base, rank=cfg.rank, alpha=cfg.alpha, dropout=cfg.dropout, rngs=rngs
        )
        setattr(parent, name, lora)
        wrapped += 1
    if not wrapped:
        raise ValueError(f"no nnx.Linear matched LoRA targets {cfg.targets}")
    return model


def has_lora(model: nnx.Module) -> bool:
    return any(isinstance(m, LoRALinear) for _, m in nnx.iter_modules(model))


def merge_lora(model: CausalLM) -> CausalLM:
    """A copy of `model` with every adapter folded into its kernel and removed.

    The result is a plain `CausalLM` with the base parameter tree (what `save_hf`
    and `load_params` expect); the input keeps its adapters. Merge before export.
    """
    model = nnx.clone(model)
    for parent, name in _projections(model):
        module = getattr(parent, name, None)
        if isinstance(module, LoRALinear):
            setattr(parent, name, module.to_linear())
    return model


def _size(state) -> int:
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(state))


def lora_param_count(model: nnx.Module) -> int:
    """Number of adapter weights (the trainable parameters of a LoRA run)."""
    return _size(nnx.state(model, LoRAParam))


def trainable_fraction(model: nnx.Module) -> float:
    """Adapter weights / all parameters (adapters included)."""
    return lora_param_count(model) / _size(nnx.state(model, nnx.Param))
