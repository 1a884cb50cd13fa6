"""The tiny world's general assets: base-stage data, OPD prompts, a BPE tokenizer."""

from experiments.world.base_data import base_example, write_base_data
from experiments.world.prompts import prompt_at, write_prompts
from experiments.world.tokenizer import train_tokenizer, world_texts

__all__ = [
    "base_example",
    "prompt_at",
    "train_tokenizer",
    "world_texts",
    "write_base_data",
    "write_prompts",
]
