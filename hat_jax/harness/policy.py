"""Policies: whatever writes the assistant's next message, behind one batched call.

The contract. ``generate`` takes a batch of conversations, each a list of chat
messages in :func:`hat_jax.text.render_chat`'s format (system prompt first, tools
already described inside it, so prompts are rendered with ``tools=None``), and
returns one :class:`PolicyOutput` per conversation, in order. ``fmt`` is the
tool-call format the harness uses (one name, or one per conversation): earlier
assistant tool calls are rendered in it. The output text is the raw assistant
body (reasoning, content, tool calls; no ``<|im_end|>``); the agent loop parses
it. Message lists rather than prompt strings, so scripted policies can look at
the conversation and HTTP chat endpoints stay possible; token-level policies
render with :func:`render_prompt`, the one place the prompt string is made.

Thinking pre-fill: with ``enable_thinking`` True/False the prompt ends in an
open/empty ``<think>`` block; the returned text starts with that pre-fill so it is
the whole assistant body, while ``tokens``/``logprobs`` cover only the sampled
part (the pre-fill is prompt, not policy output).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hat_jax.endpoint import MAX_BYTES, EndpointClient, parse_completion
from hat_jax.endpoint import PolicyError as PolicyError  # defined with the client
from hat_jax.text.chat import render_chat
from hat_jax.text.tokenizer import TURN_END_TOKENS

if TYPE_CHECKING:  # the sampler pulls in JAX; only SamplerPolicy needs it
    from hat_jax.sampling.sampler import Sampler, SamplingParams
    from hat_jax.text.tokenizer import Tokenizer

Message = Mapping[str, Any]


@dataclasses.dataclass
class PolicyOutput:
    """One generated assistant message.

    Attributes:
      text: the assistant body (thinking pre-fill included, no turn-end token).
      tokens: the sampled ids, the stop token included (None if unknown).
      logprobs: the log-probability of each sampled id (None if unknown).
      finish_reason: "stop" | "length".
      prompt_tokens: the prompt's ids, when the policy tokenised it.
    """

    text: str
    tokens: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    prompt_tokens: list[int] | None = None


class Policy(Protocol):
    """Writes the next assistant message of many conversations in one call."""

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]: ...


def formats(fmt: str | Sequence[str], n: int) -> list[str]:
    """``fmt`` broadcast to one format name per conversation."""
    if isinstance(fmt, str):
        return [fmt] * n
    if len(fmt) != n:
        raise ValueError(f"{len(fmt)} formats for {n} conversations")
    return list(fmt)


def render_prompt(
    messages: Sequence[Message],
    *,
    fmt: str = "qwen_xml",
    enable_thinking: bool | None = None,
) -> str:
    """The prompt string a token-level policy completes (an open assistant turn)."""
    return render_chat(
        messages,
        tools=None,
        fmt=fmt,
        add_generation_prompt=True,
        enable_thinking=enable_thinking,
    )


def thinking_prefill(enable_thinking: bool | None) -> str:
    """What the generation prompt pre-fills after the assistant header."""
    open_turn = len(render_prompt([], enable_thinking=None))
    return render_prompt([], enable_thinking=enable_thinking)[open_turn:]


# ---------------------------------------------------------------------- scripted
def first_user_message(messages: Sequence[Message]) -> str:
    """The viewer message a conversation answers (its first user turn)."""
    for m in messages:
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    raise ValueError("conversation has no user message")


class ScriptedPolicy:
    """Replies from a script; for tests and gold-trajectory replays.

    Args:
      script: either a function ``(messages) -> text``, or a mapping from a
        conversation's first user message to its outputs in order (output k is
        returned when the conversation holds k assistant messages), or one list
        of outputs used for every conversation.

    ``self.batches`` records the batch size of every ``generate`` call, and
    ``self.seen`` every conversation passed in (copied), for assertions.
    """

    def __init__(
        self,
        script: Callable[[list[dict[str, Any]]], str]
        | Mapping[str, Sequence[str]]
        | Sequence[str],
    ):
        self.script = script
        self.batches: list[int] = []
        self.seen: list[list[dict[str, Any]]] = []

    def _next(self, messages: list[dict[str, Any]]) -> str:
        if callable(self.script):
            return self.script(messages)
        step = sum(m.get("role") == "assistant" for m in messages)
        if isinstance(self.script, Mapping):
            key = first_user_message(messages)
            if key not in self.script:
                raise KeyError(f"no script for user message {key!r}")
            outputs = self.script[key]
        else:
            outputs = self.script
        if step >= len(outputs):
            raise IndexError(
                f"script has {len(outputs)} outputs, model call {step + 1} asked"
            )
        return outputs[step]

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]:
        formats(fmt, len(conversations))
        self.batches.append(len(conversations))
        out = []
        for conv in conversations:
            messages = [dict(m) for m in conv]
            self.seen.append(messages)
            out.append(PolicyOutput(self._next(messages)))
        return out


# ----------------------------------------------------------------------- sampler
class SamplerPolicy:
    """Our JAX sampler: renders, tokenises and generates the batch in one call.

    Args:
      sampler: a :class:`Sampler` (its tokenizer, if any, is the default).
      tokenizer: the tokenizer matching the model.
      params: sampling parameters; stop tokens default to the tokenizer's.
      enable_thinking: the thinking pre-fill (see the module docstring).
    """

    def __init__(
        self,
        sampler: Sampler,
        tokenizer: Tokenizer | None = None,
        params: SamplingParams | None = None,
        *,
        enable_thinking: bool | None = None,
    ):
        from hat_jax.sampling.sampler import SamplingParams

        self.sampler = sampler
        self.tokenizer = tokenizer or sampler.tokenizer
        if self.tokenizer is None:
            raise ValueError("SamplerPolicy needs a tokenizer")
        self.params = params or SamplingParams()
        self.enable_thinking = enable_thinking
        self.calls = 0

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]:
        if not conversations:
            return []
        fmts = formats(fmt, len(conversations))
        texts = [
            render_prompt(c, fmt=f, enable_thinking=self.enable_thinking)
            for c, f in zip(conversations, fmts)
        ]
        prompts = self.tokenizer.encode_batch(texts)
        sp = self.params
        if sp.stop_ids is None:
            sp = dataclasses.replace(sp, stop_ids=self.tokenizer.stop_ids)
        # A fresh key per call unless the caller fixes one: retries must differ.
        seed = sp.seed + self.calls if seed is None else seed
        sp = dataclasses.replace(sp, seed=seed)
        self.calls += 1
        completions = self.sampler.generate(prompts, sp)
        prefill = thinking_prefill(self.enable_thinking)
        stop = set(sp.stop_ids or ())
        out = []
        for prompt, c in zip(prompts, completions):
            text = c.text
            if text is None:
                body = c.tokens[:-1] if c.tokens and c.tokens[-1] in stop else c.tokens
                text = self.tokenizer.decode(body)
            out.append(
                PolicyOutput(
                    prefill + text,
                    list(c.tokens),
                    list(c.logprobs),
                    c.finish_reason,
                    prompt_tokens=list(prompt),
                )
            )
        return out


# ------------------------------------------------------------------------ openai
class OpenAIPolicy:
    """An OpenAI-compatible completions endpoint (vLLM's ``/v1/completions``).

    Each conversation is rendered with :func:`render_prompt` and sent as a raw
    ``prompt`` (the server applies no chat template, so the tool-call format and
    the prompt are exactly ours). Requests run concurrently on a thread pool,
    through :class:`hat_jax.endpoint.EndpointClient` (no redirects, one
    deadline per request, a reply-size cap, every bad reply a PolicyError).

    Args:
      base_url: ``http://host:port`` or ``http://host:port/v1``.
      model: the served model name.
      max_tokens, temperature, top_p: sampling settings sent with each request.
      stop: stop strings (the chat turn-end tokens by default).
      logprobs: ask for the sampled tokens' log-probs.
      return_token_ids: ask for the sampled ids (vLLM's ``return_token_ids``).
      timeout_s: the deadline of one request, its retries included.
      retries: extra attempts after HTTP 429 or 5xx or a refused connection,
        with exponential back-off from ``backoff_s``; other errors fail at once.
      max_workers: concurrent requests.
      api_key: sent as a bearer token to ``base_url``'s origin when given.
      extra_body: more request fields (e.g. ``{"top_k": 20}``).
      max_bytes: the largest reply read.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: Sequence[str] = TURN_END_TOKENS,
        logprobs: bool = True,
        return_token_ids: bool = True,
        timeout_s: float = 60.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_workers: int = 8,
        api_key: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        enable_thinking: bool | None = None,
        max_bytes: int = MAX_BYTES,
    ):
        self.client = EndpointClient(
            base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
            backoff_s=backoff_s,
            max_bytes=max_bytes,
        )
        self.url = self.client.url("completions")
        self.model = model
        self.body = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "stop": list(stop),
            **({"logprobs": 0} if logprobs else {}),
            **({"return_token_ids": True} if return_token_ids else {}),
            **dict(extra_body or {}),
        }
        self.max_workers = max_workers
        self.enable_thinking = enable_thinking

    def _one(self, prompt: str, seed: int | None) -> PolicyOutput:
        body = {"model": self.model, "prompt": prompt, **self.body}
        if seed is not None:
            body["seed"] = seed
        c = parse_completion(
            self.client.post_json("completions", body), f"POST {self.url}"
        )
        return PolicyOutput(
            thinking_prefill(self.enable_thinking) + c.text,
            c.token_ids,
            c.logprobs,
            "length" if c.finish_reason == "length" else "stop",
            prompt_tokens=c.prompt_token_ids,
        )

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]:
        if not conversations:
            return []
        fmts = formats(fmt, len(conversations))
        prompts = [
            render_prompt(c, fmt=f, enable_thinking=self.enable_thinking)
            for c, f in zip(conversations, fmts)
        ]
        seeds = [None if seed is None else seed + i for i in range(len(prompts))]
        workers = max(1, min(self.max_workers, len(prompts)))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            return list(pool.map(self._one, prompts, seeds))
