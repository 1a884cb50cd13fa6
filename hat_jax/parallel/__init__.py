"""Meshes, partition rules, sharded train steps, multi-host start-up, memory plans."""

from hat_jax.parallel.distributed import initialize
from hat_jax.parallel.mesh import AXES, axis_sizes, make_mesh
from hat_jax.parallel.rules import (
    RULES,
    ShardingReport,
    get_rules,
    named_shardings,
    shard_specs,
)
from hat_jax.parallel.step import (
    batch_sharding,
    jit_sharded_step,
    replicated,
    shard_train_state,
    state_shardings,
)

__all__ = [
    "AXES",
    "RULES",
    "ShardingReport",
    "axis_sizes",
    "batch_sharding",
    "get_rules",
    "initialize",
    "jit_sharded_step",
    "make_mesh",
    "named_shardings",
    "replicated",
    "shard_specs",
    "shard_train_state",
    "state_shardings",
]
