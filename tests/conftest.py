"""Test-wide settings: CPU, float32 matmuls at full precision, deterministic."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")
