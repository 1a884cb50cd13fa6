"""Weights in and out (HF safetensors, GGUF) and orbax train-state checkpoints."""

from hat_jax.checkpoints.gguf import load_gguf
from hat_jax.checkpoints.hf import load_hf, save_hf
from hat_jax.checkpoints.train_state import Checkpointer, abstract_like

__all__ = ["Checkpointer", "abstract_like", "load_gguf", "load_hf", "save_hf"]
