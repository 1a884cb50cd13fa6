"""A stage's train state and step on a device mesh, from the run config.

    mesh:                     # cfg.mesh; absent, None or all 1: plain jit
      data: 1
      fsdp: -1                # -1: every device not used by the other axes
      tensor: 1
      expert: 1

    placed = place_on_mesh(cfg, state, step_fn, family)   # None without cfg.mesh
    state, step = placed.state, placed.step               # sharded, jitted
    data = placed.feed(batches)                           # batches split on B

    # OPD and RL: the batch is made in the step (rollouts on the sharded model),
    # and the step reads frozen params (the teacher, the reference policy)
    placed = place_on_mesh(cfg, state, step_fn, family, rows=B, frozen=teacher)
    state, metrics = placed.step(state, placed.put(batch), rng, placed.frozen)

`step_fn` is the stage's unjitted `(state, batch, rng[, frozen]) -> (state,
metrics)`; the partition rules are the model family's (`hat_jax.parallel.rules`)
and shard the frozen params as they shard the state's; the sharded step's result
is the single-device step's (tests/hat_jax/parallel, tests/hat_jax/train). Checkpoints
restore into the sharded state's layout (the restore template carries the
shardings), so a run resumes on the same mesh. One process: every device is
local and the whole batch is on the host. Several hosts
(`hat_jax.parallel.initialize` first): each host builds the same global batch,
and `feed` keeps the rows its devices own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from hat_jax.parallel.mesh import AXES, axis_sizes, make_mesh
from hat_jax.parallel.rules import ShardingReport, get_rules, named_shardings
from hat_jax.parallel.step import (
    batch_sharding,
    jit_sharded_step,
    shard_train_state,
)
from hat_jax.parallel.step import (
    replicated as replicated_sharding,
)

__all__ = ["Placed", "mesh_from_config", "mesh_sizes", "place_batch", "place_on_mesh"]


def mesh_sizes(cfg) -> dict[str, int] | None:
    """`cfg.mesh`'s axis sizes, read without touching JAX (multi-host start-up
    must come first); None when absent, None, or every axis is 1."""
    spec = cfg.get("mesh") if hasattr(cfg, "get") else None
    if not spec:
        return None
    spec = spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)
    unknown = set(spec) - set(AXES)
    if unknown:
        raise ValueError(f"mesh: unknown axes {sorted(unknown)}; have {AXES}")
    sizes = {a: int(spec.get(a, 1)) for a in AXES}
    return None if all(v == 1 for v in sizes.values()) else sizes


def mesh_from_config(cfg) -> Mesh | None:
    """`cfg.mesh` as a `Mesh` over all devices; -1 on one axis takes the devices
    the others leave. None (the plain single-device jit): see `mesh_sizes`."""
    sizes = mesh_sizes(cfg)
    return None if sizes is None else make_mesh(**sizes)


class _Feed:
    """Wraps a resumable batch iterator; each batch goes to the mesh split on B."""

    def __init__(self, data: Any, mesh: Mesh):
        self.data, self.mesh = data, mesh

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, jax.Array]:
        return place_batch(self.mesh, next(self.data))

    def position(self) -> dict:
        return self.data.position()

    def restore(self, pos: dict) -> None:
        self.data.restore(pos)


def place_batch(
    mesh: Mesh, batch: dict[str, Any], replicated: tuple[str, ...] = ()
) -> dict[str, jax.Array]:
    """A host batch on the mesh: arrays [B, ...] split on B, the keys in
    `replicated` (e.g. RL's per-group rewards [N, G, R]) on every device. Every
    host holds the global batch; each device takes its rows.

    Raises:
      ValueError: B does not split over the mesh's data and fsdp axes.
    """
    sizes = axis_sizes(mesh)
    split = sizes["data"] * sizes["fsdp"]
    out = {}
    for k, v in batch.items():
        x = np.asarray(v)
        if k in replicated:
            sharding = replicated_sharding(mesh)
        elif x.shape[0] % split:
            raise ValueError(
                f"mesh {sizes}: batch[{k!r}] has {x.shape[0]} rows; they "
                f"must split over data x fsdp = {split} devices"
            )
        else:
            sharding = batch_sharding(mesh)
        out[k] = jax.make_array_from_callback(x.shape, sharding, lambda i, x=x: x[i])
    return out


@dataclasses.dataclass
class Placed:
    mesh: Mesh
    state: Any  # on the mesh
    step: Callable  # jitted with the state's and the batch's shardings
    report: ShardingReport
    frozen: Any = None  # the step's frozen params on the mesh (if it takes any)

    def feed(self, data: Any) -> _Feed:
        return _Feed(data, self.mesh)

    def put(
        self, batch: dict[str, Any], replicated: tuple[str, ...] = ()
    ) -> dict[str, jax.Array]:
        """`place_batch` on this mesh (a batch made inside the step)."""
        return place_batch(self.mesh, batch, replicated)


def place_on_mesh(
    cfg,
    state: Any,
    step_fn: Callable,
    family: str,
    *,
    rows: int | None = None,
    frozen: Any = None,
    frozen_family: str | None = None,
) -> Placed | None:
    """The state sharded by `family`'s rules and `step_fn` jitted for `cfg.mesh`.

    Args:
      rows: the rows of each batch the step takes; default `cfg.batch_size /
        cfg.grad_accum` (SFT's micro-batch).
      frozen: params the step reads as its fourth argument (OPD's teacher, RL's
        reference policy), sharded by the same rules (by `frozen_family`'s when
        given: a teacher of another family); `Placed.frozen`.

    Raises:
      ValueError: the batch does not split over the mesh's data and fsdp axes.
    """
    mesh = mesh_from_config(cfg)
    if mesh is None:
        return None
    sizes = axis_sizes(mesh)
    split = sizes["data"] * sizes["fsdp"]
    made_in_step = rows is not None  # placed key by key (`put`), not fed
    if not made_in_step:  # SFT: each micro-batch splits
        rows = int(cfg.batch_size) // int(cfg.get("grad_accum", 1) or 1)
    if rows % split:
        what = (
            "each step's batch"
            if made_in_step
            else "each micro-batch (batch_size / grad_accum)"
        )
        raise ValueError(
            f"mesh {sizes}: {what} of {rows} rows must split over data x fsdp = "
            f"{split} devices"
        )
    rules = get_rules(family)
    state, shardings, report = shard_train_state(state, mesh, rules)
    frozen_sh = None
    if frozen is not None:
        frozen_rules = get_rules(frozen_family) if frozen_family else rules
        frozen_sh, _ = named_shardings(frozen, mesh, frozen_rules)
        frozen = jax.device_put(frozen, frozen_sh)
    step = jit_sharded_step(
        step_fn,
        shardings,
        None if made_in_step else batch_sharding(mesh),
        frozen_shardings=frozen_sh,
    )
    return Placed(mesh, state, step, report, frozen)
