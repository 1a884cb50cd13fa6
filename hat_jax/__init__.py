"""hat_jax: Harness-Aware Training for tool-using agents, in JAX/Flax NNX."""

__version__ = "0.1.0"
__all__ = ["load_model"]


def __getattr__(name):
    # Lazy, so `import hat_jax.harness` (data, hooks, the agent loop) needs no JAX.
    if name == "load_model":
        from hat_jax.loading import load_model

        return load_model
    raise AttributeError(f"module 'hat_jax' has no attribute {name!r}")
