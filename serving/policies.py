"""Measured policies: one batched model call, its outputs and what it cost.

``generate_measured(conversations, fmt=...) -> (outputs, CallStats)`` is the
contract the replay schedulers use; both policies also satisfy
``hat_jax.harness.Policy`` (``generate``).

- :class:`EmbeddedPolicy`: our JAX sampler (greedy). With an MTP head and
  ``mtp_k`` it uses ``SpeculativeSampler`` and adds its acceptance counts;
  without, ``prefix_reuse`` starts each call from the cache of the prefix it
  shares with the previous call (``cached_tokens``, vLLM's prefix-cache hits). TTFT
  is the prefill: the wall time until the sampler's first ``on_chunk`` call.
  XLA compile time (JAX's ``/jax/core/compile/*`` monitoring events) is taken
  out of every time and reported apart (``compile_s``): a server compiles once
  at start-up, not per request. Batches are padded to a power of two rows (the
  padding rows' compute is counted in the times, not in the MTP acceptance) so
  few batch shapes are compiled.
- :class:`EndpointPolicy`: an OpenAI-compatible ``/v1/completions`` server,
  streamed (server-sent events) so TTFT is the first text chunk; the prompt is
  rendered by us, as in ``hat_jax.harness.OpenAIPolicy``. One request per
  conversation, concurrently, through ``hat_jax.endpoint.EndpointClient`` (no
  redirects, one deadline per request, a reply-size cap, no retries: a replay
  measures what the server does).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from hat_jax.endpoint import EndpointClient, check_text
from hat_jax.endpoint import PolicyTimeout as PolicyTimeout  # serving.schedule's
from hat_jax.harness import PolicyError, PolicyOutput, render_prompt
from hat_jax.harness.policy import formats
from hat_jax.text.tokenizer import TURN_END_TOKENS

_COMPILE_S = [0.0]  # seconds JAX spent tracing/lowering/compiling, process-wide
_LISTENING = [False]


def _on_jax_event(event: str, duration: float, **kwargs) -> None:
    if event.startswith("/jax/core/compile/"):
        _COMPILE_S[0] += duration


def compile_seconds() -> float:
    """JAX compile time so far in this process (from the first EmbeddedPolicy)."""
    return _COMPILE_S[0]


@dataclasses.dataclass
class CallStats:
    """One batched model call. Times in seconds; tokens summed over rows."""

    batch: int
    wall_s: float
    ttft_s: list[float]  # per row
    row_decode_s: float  # summed over rows: time after each row's first token
    new_tokens: int
    prompt_tokens: int = 0
    drafts_proposed: int = 0
    drafts_accepted: int = 0
    row_verifies: int = 0  # vLLM's num_drafts: one per live row per verify step
    # [i]: verify steps (over rows) that accepted >= i + 1 drafts; () without MTP
    accepted_per_pos: tuple[int, ...] = ()
    compile_s: float = 0.0  # excluded from the times above
    cached_tokens: int = 0  # prompt tokens served from the prefix cache


class EmbeddedPolicy:
    """Our JAX model (module docstring). ``mtp_k`` 0 decodes without drafts."""

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_new_tokens: int = 128,
        mtp_k: int = 0,
        prefix_reuse: bool = False,
    ):
        from hat_jax.sampling import Sampler, SamplingParams, SpeculativeSampler

        self.tokenizer = tokenizer
        self.mtp_k = mtp_k
        if mtp_k > 0:  # (no prefix reuse in speculative decoding yet)
            self.sampler = SpeculativeSampler(model, tokenizer, k=mtp_k, chunk=16)
        else:
            self.sampler = Sampler(
                model, tokenizer, chunk=16, prefix_reuse=prefix_reuse
            )
        self.params = SamplingParams(
            max_new_tokens=max_new_tokens, stop_ids=tuple(tokenizer.stop_ids)
        )
        if not _LISTENING[0]:
            import jax

            jax.monitoring.register_event_duration_secs_listener(_on_jax_event)
            _LISTENING[0] = True

    def generate_measured(
        self, conversations: Sequence[Sequence[dict]], *, fmt="qwen_xml", seed=None
    ) -> tuple[list[PolicyOutput], CallStats]:
        fmts = formats(fmt, len(conversations))
        texts = [render_prompt(c, fmt=f) for c, f in zip(conversations, fmts)]
        prompts = self.tokenizer.encode_batch(texts)
        n = len(prompts)
        padded = prompts + [prompts[-1]] * ((1 << (n - 1).bit_length()) - n)
        first: list[float] = []
        t0, c0 = time.perf_counter(), compile_seconds()

        def on_chunk(_tokens):
            if not first:
                first.append(time.perf_counter() - t0 - (compile_seconds() - c0))

        completions = self.sampler.generate(padded, self.params, on_chunk=on_chunk)
        compile_s = compile_seconds() - c0
        wall = time.perf_counter() - t0 - compile_s
        completions = completions[:n]
        ttft = first[0] if first else wall
        stop = set(self.params.stop_ids)
        outs = []
        for prompt, c in zip(prompts, completions):
            body = c.tokens[:-1] if c.tokens and c.tokens[-1] in stop else c.tokens
            text = c.text if c.text is not None else self.tokenizer.decode(body)
            outs.append(
                PolicyOutput(text, list(c.tokens), None, c.finish_reason, list(prompt))
            )
        stats = CallStats(
            batch=len(prompts),
            wall_s=wall,
            ttft_s=[ttft] * len(prompts),
            row_decode_s=(wall - ttft) * len(prompts),
            new_tokens=sum(len(c.tokens) for c in completions),
            prompt_tokens=sum(len(p) for p in prompts),
            compile_s=compile_s,
        )
        info = getattr(self.sampler, "last_call", None)
        if self.mtp_k == 0 and info is not None:
            stats.cached_tokens = sum(info.reused[:n])
        # Padding rows repeat the last prompt: the acceptance counts are those
        # of the real rows only.
        if self.mtp_k > 0:
            spec = self.sampler.stats_of_rows(n)
            stats.drafts_proposed = spec.proposed
            stats.drafts_accepted = spec.accepted
            stats.row_verifies = spec.num_drafts
            stats.accepted_per_pos = spec.accepted_per_pos
        return outs, stats

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        return self.generate_measured(conversations, fmt=fmt, seed=seed)[0]


class EndpointPolicy:
    """An OpenAI-compatible completions endpoint, streamed (module docstring).

    ``timeout_s`` is each request's deadline; ``api_key`` is sent as a bearer
    token to ``base_url``'s origin only.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        max_new_tokens: int = 128,
        timeout_s: float = 60.0,
        max_workers: int = 8,
        api_key: str | None = None,
    ):
        self.client = EndpointClient(
            base_url, api_key=api_key, timeout_s=timeout_s, retries=0
        )
        self.url = self.client.url("completions")
        self.model, self.max_new_tokens = model, max_new_tokens
        self.timeout_s, self.max_workers = timeout_s, max_workers

    def _one(self, prompt: str) -> tuple[PolicyOutput, float, float, int, int]:
        body = {
            "model": self.model, "prompt": prompt, "max_tokens": self.max_new_tokens,
            "temperature": 0.0, "stop": list(TURN_END_TOKENS), "stream": True,
            "stream_options": {"include_usage": True},
        }  # fmt: skip
        t0 = time.monotonic()
        events = self.client.post_events("completions", body)
        wall = time.monotonic() - t0
        parts, ttft, usage, finish = stream_text(events, f"POST {self.url}")
        ttft = wall if ttft is None else ttft - t0
        n_new = usage.get("completion_tokens") or len(parts)
        out = PolicyOutput("".join(parts), None, None,
                           "length" if finish == "length" else "stop")  # fmt: skip
        return out, wall, ttft, n_new, usage.get("prompt_tokens") or 0

    def generate_measured(
        self, conversations: Sequence[Sequence[dict]], *, fmt="qwen_xml", seed=None
    ) -> tuple[list[PolicyOutput], CallStats]:
        fmts = formats(fmt, len(conversations))
        prompts = [render_prompt(c, fmt=f) for c, f in zip(conversations, fmts)]
        t0 = time.perf_counter()
        workers = max(1, min(self.max_workers, len(prompts)))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            rows = list(pool.map(self._one, prompts))
        stats = CallStats(
            batch=len(rows),
            wall_s=time.perf_counter() - t0,
            ttft_s=[r[2] for r in rows],
            row_decode_s=sum(r[1] - r[2] for r in rows),
            new_tokens=sum(r[3] for r in rows),
            prompt_tokens=sum(r[4] for r in rows),
        )
        return [r[0] for r in rows], stats

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        return self.generate_measured(conversations, fmt=fmt, seed=seed)[0]


def stream_text(
    events: Sequence[tuple[float, Any]], where: str
) -> tuple[list[str], float | None, dict[str, int], str]:
    """A streamed completion's text parts, the first text's arrival time, its
    usage and finish reason; a PolicyError names a malformed field."""
    parts, first, usage, finish = [], None, {}, "stop"
    for k, (t, event) in enumerate(events, 1):
        got = event.get("usage")
        if got is not None:
            if not isinstance(got, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31
                for key, v in got.items()
                if key in ("prompt_tokens", "completion_tokens")
            ):
                raise _bad_event(where, k, "usage", got)
            usage = got
        choices = event.get("choices") or []
        if not isinstance(choices, list):
            raise _bad_event(where, k, "choices", choices)
        for choice in choices:
            if not isinstance(choice, dict):
                raise _bad_event(where, k, "choices[]", choice)
            text, why = choice.get("text"), choice.get("finish_reason")
            if text is not None and not isinstance(text, str):
                raise _bad_event(where, k, "choices[].text", text)
            if text:
                check_text(text, where, f"event {k} choices[].text")
            if why is not None and not isinstance(why, str):
                raise _bad_event(where, k, "choices[].finish_reason", why)
            if text and first is None:
                first = t
            parts.append(text or "")
            finish = why or finish
    return parts, first, usage, finish


def _bad_event(where: str, k: int, field: str, value: Any) -> PolicyError:
    text = json.dumps(value, default=str)[:200]  # ASCII: escapes everything odd
    return PolicyError(f"{where}: event {k} {field} is malformed: {text}")


def served_model(
    base_url: str, timeout_s: float = 10.0, api_key: str | None = None
) -> str:
    """The first model id the server lists at ``/v1/models``."""
    from hat_jax.eval.backends import served_models

    models = served_models(base_url, timeout_s, api_key=api_key)
    if not models:
        raise PolicyError(f"{base_url} serves no model")
    return models[0]


def as_dict(stats: CallStats) -> dict[str, Any]:
    return dataclasses.asdict(stats)
