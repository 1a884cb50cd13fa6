"""Batched KV-cache sampling and MTP self-speculative decoding."""

from hat_jax.sampling.sampler import Completion, Sampler, SamplingParams, sample_token
from hat_jax.sampling.speculative import SpecStats, SpeculativeSampler

__all__ = [
    "Completion",
    "Sampler",
    "SamplingParams",
    "SpecStats",
    "SpeculativeSampler",
    "sample_token",
]
