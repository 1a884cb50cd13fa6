"""Trainers: the shared state and loop, and one module per stage (sft, ...)."""

from hat_jax.train.data import PackedBatches, pack_rows, select_trajectories, tokenize
from hat_jax.train.loop import train
from hat_jax.train.metrics import MetricsWriter, NonFiniteError, check_finite
from hat_jax.train.sft import jit_sft_step, packed_forward, run_sft, sft_train_step
from hat_jax.train.state import TrainState, init_state, make_optimizer

__all__ = [
    "MetricsWriter",
    "NonFiniteError",
    "PackedBatches",
    "TrainState",
    "check_finite",
    "init_state",
    "jit_sft_step",
    "make_optimizer",
    "pack_rows",
    "packed_forward",
    "run_sft",
    "select_trajectories",
    "sft_train_step",
    "tokenize",
    "train",
]
