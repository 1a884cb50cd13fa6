"""hat_jax: Harness-Aware Training for tool-using agents, in JAX/Flax NNX."""

__version__ = "0.1.0"

from hat_jax.loading import load_model  # noqa: E402

__all__ = ["load_model"]
