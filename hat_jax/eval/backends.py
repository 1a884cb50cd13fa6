"""Backends an eval can run on, chosen by name: our JAX model or an endpoint.

- ``jax``: a training run's workdir (``config.json`` + ``ckpt/``: the latest
  params, LoRA merged, its tokenizer), a HF folder, a ``.gguf`` file or an
  asset name (``smollm2-135m-instruct``), sampled by our batched KV-cache
  :class:`~hat_jax.sampling.Sampler`; a ``run_turns`` batch is one
  ``generate`` call, so many cases decode together, each call starting from
  the prefix it shares with the previous one (``prefix_reuse``).
- ``openai``: an OpenAI-compatible ``/v1/completions`` server (vLLM), one
  request per conversation on a thread pool of ``concurrency`` workers; the
  served model name defaults to the first one ``/v1/models`` lists. Its API
  key is read from the environment variable ``api_key_env`` (default
  ``HAT_API_KEY``, see :func:`hat_jax.endpoint.api_key_from_env`).
- ``fixed``: answers every model call with one sentence (a floor for tests).

Decoding is greedy by default (temperature 0), so an eval is reproducible.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from hat_jax.endpoint import EndpointClient, api_key_from_env, parse_models
from hat_jax.harness import OpenAIPolicy, Policy, PolicyError, ScriptedPolicy

FIXED_SENTENCE = "Thanks for watching, see you soon!"


@dataclasses.dataclass(frozen=True)
class BackendOptions:
    """How to decode, whatever the backend.

    Attributes:
      max_new_tokens: tokens per model call.
      temperature: 0 is greedy.
      seed: the sampling seed (unused when greedy).
      enable_thinking: the thinking pre-fill (None: the template's default).
      concurrency: parallel requests to an endpoint.
      served_model: the endpoint's model name (None: ask ``/v1/models``).
      timeout_s: per-request deadline for an endpoint.
      api_key_env: the environment variable holding the endpoint's API key
        (None: ``HAT_API_KEY`` if set, else no key). The name, not the key, so
        options can be printed and saved.
      prefix_reuse: our sampler starts each call from the cache of the
        previous one (``hat_jax.sampling.prefix``); off: every prompt prefilled.
      max_prompt_cells: our sampler's calls are cut so that rows x (padded
        prompt length)^2 stays under this (``SamplerPolicy.max_cells``; 2^28 =
        16 prompts of 4,096 tokens, 64 of 2,048): the prefill's memory. 0: the
        whole batch in one call.
    """

    max_new_tokens: int = 256
    temperature: float = 0.0
    seed: int = 0
    enable_thinking: bool | None = None
    concurrency: int = 8
    served_model: str | None = None
    timeout_s: float = 120.0
    api_key_env: str | None = None
    prefix_reuse: bool = True
    max_prompt_cells: int = 2**28


def load_jax_model(path_or_name: str):
    """(model, tokenizer) from a workdir, HF folder, ``.gguf`` or asset name."""
    from hat_jax.train import build

    p = Path(path_or_name).expanduser()
    if build.is_workdir(p):
        model, _ = build.model_from_workdir(p)
        tokenizer = build.load_tokenizer(build.load_workdir_config(p).tokenizer)
        return model, tokenizer
    from hat_jax.loading import load_model

    model, _, tokenizer = load_model(path_or_name, param_dtype="float32")
    if tokenizer is None:
        raise ValueError(
            f"{path_or_name}: no tokenizer.json beside the weights; decoding "
            "needs one (copy it from the base model's folder)"
        )
    return model, tokenizer


def jax_policy(path_or_name: str, opts: BackendOptions) -> Policy:
    """Our JAX model behind a :class:`~hat_jax.harness.SamplerPolicy`."""
    from hat_jax.harness import SamplerPolicy
    from hat_jax.sampling import Sampler, SamplingParams

    model, tokenizer = load_jax_model(path_or_name)
    params = SamplingParams(
        max_new_tokens=opts.max_new_tokens,
        temperature=opts.temperature,
        seed=opts.seed,
    )
    return SamplerPolicy(
        Sampler(model, tokenizer, prefix_reuse=opts.prefix_reuse),
        tokenizer,
        params,
        enable_thinking=opts.enable_thinking,
        max_cells=opts.max_prompt_cells,
    )


def served_models(
    base_url: str, timeout_s: float = 10.0, *, api_key: str | None = None
) -> list[str]:
    """The model ids an OpenAI-compatible server lists at ``/v1/models``."""
    with EndpointClient(base_url, api_key=api_key, timeout_s=timeout_s) as client:
        return parse_models(client.get_json("models"), f"GET {client.url('models')}")


def openai_policy(base_url: str, opts: BackendOptions) -> Policy:
    """An OpenAI-compatible endpoint behind :class:`~hat_jax.harness.OpenAIPolicy`."""
    api_key = api_key_from_env(opts.api_key_env)
    model = opts.served_model
    if model is None:
        models = served_models(base_url, api_key=api_key)
        if not models:
            raise PolicyError(f"{base_url} serves no model")
        model = models[0]
    return OpenAIPolicy(
        base_url,
        model,
        api_key=api_key,
        max_tokens=opts.max_new_tokens,
        temperature=opts.temperature,
        max_workers=opts.concurrency,
        timeout_s=opts.timeout_s,
        enable_thinking=opts.enable_thinking,
        logprobs=False,
        return_token_ids=False,
    )


def fixed_policy(sentence: str = FIXED_SENTENCE, opts: BackendOptions | None = None):
    """A policy that always says ``sentence``."""
    return ScriptedPolicy(lambda messages: sentence)


# name -> (target, options) -> Policy; the target is a path, a URL or a sentence
BACKENDS: dict[str, Callable[..., Policy]] = {
    "jax": jax_policy,
    "openai": openai_policy,
    "fixed": fixed_policy,
}


def make_policy(kind: str, target: str, opts: BackendOptions | None = None) -> Policy:
    """The policy of backend ``kind`` (``BACKENDS``) for ``target``."""
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; have {sorted(BACKENDS)}")
    return BACKENDS[kind](target, opts or BackendOptions())
