"""Train state (a pytree dataclass) and the optimiser built from a config.

The model is split once with `nnx.split(model, trainable, ...)`: the graphdef stays
outside the state (static, passed to the jitted step as a keyword), the trainable
params are optimised, and whatever the `trainable` filter leaves out is carried in
`frozen` unchanged (empty for full fine-tuning; the frozen base weights under LoRA).

Gradient accumulation is an explicit micro-batch `lax.scan` inside the jitted step
(`hat_jax.train.sft`), not `optax.MultiSteps`: the optimiser updates once per step,
`step` counts optimiser updates, and the schedule and metrics need no bookkeeping.
The steps' norm metrics are `optax.tree.norm` (`optax.global_norm`, which is
deprecated for it; float32 params and grads).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx, struct

from hat_jax.models.config import DTYPES

__all__ = [
    "TrainState",
    "cast_floats",
    "init_state",
    "make_optimizer",
    "make_schedule",
]


def cast_floats(tree, compute_dtype: str):
    """`tree`'s floating leaves in `compute_dtype` (a `DTYPES` name).

    The trainers' low-precision compute: fp32 master params cast for the forward
    pass get fp32 gradients. float32 returns `tree` unchanged.
    """
    dtype = DTYPES[compute_dtype]
    if dtype == jnp.float32:
        return tree
    return jax.tree.map(
        lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x,
        tree,
    )


@struct.dataclass
class TrainState:
    """Everything a step reads and writes; the graphdef is kept outside.

    Attributes:
      step: optimiser updates done, int32 scalar.
      params: the trainable variables (`nnx.State`), float32 master copies.
      frozen: variables the optimiser does not touch (`nnx.State`, maybe empty).
      opt_state: optax state of `params`.
      rng: base PRNG key (raw uint32[2]); step `s` uses `fold_in(rng, s)`.
    """

    step: jax.Array
    params: Any
    frozen: Any
    opt_state: Any
    rng: jax.Array


def make_schedule(optim) -> optax.Schedule:
    """Linear warmup to `lr`, cosine decay to `lr * end_lr_frac` at `total_steps`.

    With ``optim.cycles = k > 1`` (default 1) the steps are cut into k equal
    cycles, each a warmup and a cosine decay (warm restarts, SGDR); cycle i
    peaks at ``lr * cycle_decay**i`` and ends at that peak times `end_lr_frac`.
    """
    warmup = int(optim.warmup_steps)
    total = max(int(optim.total_steps), warmup + 1)
    cycles = max(int(optim.get("cycles", 1)), 1)
    if cycles == 1:
        return _cosine(float(optim.lr), warmup, total, float(optim.end_lr_frac))
    length = max(total // cycles, warmup + 1)
    decay = float(optim.get("cycle_decay", 1.0))
    parts = [
        _cosine(float(optim.lr) * decay**i, warmup, length, float(optim.end_lr_frac))
        for i in range(cycles)
    ]
    return optax.join_schedules(parts, [length * i for i in range(1, cycles)])


def _cosine(peak: float, warmup: int, total: int, end_frac: float) -> optax.Schedule:
    return optax.warmup_cosine_decay_schedule(
        init_value=0.0 if warmup else peak,
        peak_value=peak,
        warmup_steps=warmup,
        decay_steps=total,
        end_value=peak * end_frac,
    )


def _decay_mask(params):
    # Weight decay on matrices only; norms' scales and biases are left alone.
    return jax.tree.map(lambda p: jnp.ndim(p) >= 2, params)


def make_optimizer(optim) -> optax.GradientTransformation:
    """Global-norm clipping, then AdamW on the warmup-cosine schedule.

    Args:
      optim: config group with lr, b1, b2, eps, weight_decay, warmup_steps,
        total_steps, end_lr_frac, clip_norm (0 disables clipping).
    """
    parts = []
    if float(optim.clip_norm) > 0:
        parts.append(optax.clip_by_global_norm(float(optim.clip_norm)))
    parts.append(
        optax.adamw(
            make_schedule(optim),
            b1=float(optim.b1),
            b2=float(optim.b2),
            eps=float(optim.eps),
            weight_decay=float(optim.weight_decay),
            mask=_decay_mask,
        )
    )
    return optax.chain(*parts)


def init_state(
    model: nnx.Module,
    optimizer: optax.GradientTransformation,
    *,
    seed: int,
    trainable: Any = nnx.Param,
) -> tuple[nnx.GraphDef, TrainState]:
    """Splits `model` once and builds the initial state.

    Args:
      model: the NNX model (float32 params).
      optimizer: from `make_optimizer`.
      seed: seeds the state's base key.
      trainable: an `nnx` filter choosing what the optimiser updates (the LoRA
        hook: pass a filter for the adapter params; the rest goes to `frozen`).

    Returns:
      (graphdef, state); `nnx.merge(graphdef, state.params, state.frozen)` gives the
      model back.
    """
    graphdef, params, frozen = nnx.split(model, trainable, ...)
    state = TrainState(
        step=jnp.zeros((), jnp.int32),
        params=params,
        frozen=frozen,
        opt_state=optimizer.init(params),
        rng=jax.random.PRNGKey(seed),
    )
    return graphdef, state
