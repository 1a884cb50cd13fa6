"""Trainers: the shared state and loop, and one module per stage (sft, opd, rl).

RL is environment-agnostic: `rl_run.run_rl` trains in any agent task
(`agent_task`; the simulator is `experiments.sim_task`, entry point `sim`).
"""

from hat_jax.train.data import PackedBatches, pack_rows, select_trajectories, tokenize
from hat_jax.train.loop import train
from hat_jax.train.metrics import MetricsWriter, NonFiniteError, check_finite
from hat_jax.train.opd import jit_opd_step, opd_train_step, run_opd
from hat_jax.train.rl import compute_advantages, jit_rl_step, rl_train_step
from hat_jax.train.rl_batch import Episode, episode_from_trajectory, episodes_to_batch
from hat_jax.train.rl_run import run_rl
from hat_jax.train.sft import jit_sft_step, run_sft, sft_train_step
from hat_jax.train.state import TrainState, init_state, make_optimizer

__all__ = [
    "Episode",
    "compute_advantages",
    "episode_from_trajectory",
    "episodes_to_batch",
    "jit_opd_step",
    "jit_rl_step",
    "opd_train_step",
    "rl_train_step",
    "run_opd",
    "run_rl",
    "MetricsWriter",
    "NonFiniteError",
    "PackedBatches",
    "TrainState",
    "check_finite",
    "init_state",
    "jit_sft_step",
    "make_optimizer",
    "pack_rows",
    "run_sft",
    "select_trajectories",
    "sft_train_step",
    "tokenize",
    "train",
]
