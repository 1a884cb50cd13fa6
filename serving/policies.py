"""The replay's policies: our JAX sampler or an OpenAI-compatible server, measured.

``generate_measured(conversations, fmt=...) -> (outputs, CallStats)`` is the
contract the replay schedulers use; both policies are the project's one policy
abstraction (``hat_jax.harness``), built here with the replay's settings:

- :func:`embedded_policy`: ``SamplerPolicy`` over our JAX sampler, greedy, its
  batches padded to a power of two rows. With an MTP head and ``mtp_k`` it
  decodes with ``SpeculativeSampler`` and adds its acceptance counts; without,
  ``prefix_reuse`` starts each call from the cache of the prefix it shares with
  the previous call (``cached_tokens``, vLLM's prefix-cache hits). TTFT is the
  prefill; XLA compile time is reported apart
  (``hat_jax.harness.sampler_policy``).
- :func:`endpoint_policy`: ``OpenAIPolicy`` on ``/v1/completions``, streamed
  (server-sent events) so TTFT is the first text chunk, greedy, one request per
  conversation, concurrently, no retries (a replay measures what the server
  does).
"""

from __future__ import annotations

from hat_jax.endpoint import PolicyTimeout as PolicyTimeout  # serving.schedule's
from hat_jax.harness import CallStats, OpenAIPolicy, PolicyError, SamplerPolicy

__all__ = ["CallStats", "embedded_policy", "endpoint_policy", "served_model"]


def embedded_policy(
    model,
    tokenizer,
    *,
    max_new_tokens: int = 128,
    mtp_k: int = 0,
    prefix_reuse: bool = False,
) -> SamplerPolicy:
    """Our JAX model, greedy (module docstring). ``mtp_k`` 0: no drafts."""
    from hat_jax.sampling import Sampler, SamplingParams, SpeculativeSampler

    if mtp_k > 0:  # (prefix reuse on attention-only models; a hybrid: none)
        sampler = SpeculativeSampler(
            model, tokenizer, k=mtp_k, chunk=16, prefix_reuse=prefix_reuse
        )
    else:
        sampler = Sampler(model, tokenizer, chunk=16, prefix_reuse=prefix_reuse)
    params = SamplingParams(
        max_new_tokens=max_new_tokens, stop_ids=tuple(tokenizer.stop_ids)
    )
    return SamplerPolicy(sampler, tokenizer, params, pad_rows=True)


def endpoint_policy(
    base_url: str,
    model: str,
    *,
    max_new_tokens: int = 128,
    timeout_s: float = 60.0,
    max_workers: int = 8,
    api_key: str | None = None,
) -> OpenAIPolicy:
    """A served model, streamed, greedy, no retries (module docstring).
    ``api_key`` is sent as a bearer token to ``base_url``'s origin only."""
    return OpenAIPolicy(
        base_url,
        model,
        max_tokens=max_new_tokens,
        temperature=0.0,
        stream=True,
        timeout_s=timeout_s,
        retries=0,
        max_workers=max_workers,
        api_key=api_key,
    )


def served_model(
    base_url: str, timeout_s: float = 10.0, api_key: str | None = None
) -> str:
    """The first model id the server lists at ``/v1/models``."""
    from hat_jax.eval.backends import served_models

    models = served_models(base_url, timeout_s, api_key=api_key)
    if not models:
        raise PolicyError(f"{base_url} serves no model")
    return models[0]
