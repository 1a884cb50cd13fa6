"""Batched KV-cache sampling."""

from hat_jax.sampling.sampler import Completion, Sampler, SamplingParams, sample_token

__all__ = ["Completion", "Sampler", "SamplingParams", "sample_token"]
