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
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from hat_jax.endpoint import MAX_BYTES, EndpointClient, parse_completion, stream_text
from hat_jax.endpoint import PolicyError as PolicyError  # defined with the client
from hat_jax.text.chat import render_chat
from hat_jax.text.tokenizer import TURN_END_TOKENS

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


@dataclasses.dataclass
class CallStats:
    """What one batched model call cost (`generate_measured`). Times in seconds
    (compile time apart), tokens summed over rows."""

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

    @classmethod
    def merged(cls, parts: Sequence[CallStats]) -> CallStats:
        """Calls run one after another as one: a later call's rows wait for the
        earlier calls (their TTFT includes that wait); counts add up."""
        if len(parts) == 1:
            return parts[0]
        ttft, before = [], 0.0
        for p in parts:
            ttft += [before + t for t in p.ttft_s]
            before += p.wall_s
        width = max((len(p.accepted_per_pos) for p in parts), default=0)
        per_pos = [0] * width
        for p in parts:
            for i, v in enumerate(p.accepted_per_pos):
                per_pos[i] += v
        return cls(
            batch=sum(p.batch for p in parts),
            wall_s=before,
            ttft_s=ttft,
            row_decode_s=sum(p.row_decode_s for p in parts),
            new_tokens=sum(p.new_tokens for p in parts),
            prompt_tokens=sum(p.prompt_tokens for p in parts),
            drafts_proposed=sum(p.drafts_proposed for p in parts),
            drafts_accepted=sum(p.drafts_accepted for p in parts),
            row_verifies=sum(p.row_verifies for p in parts),
            accepted_per_pos=tuple(per_pos),
            compile_s=sum(p.compile_s for p in parts),
            cached_tokens=sum(p.cached_tokens for p in parts),
        )


class Policy(Protocol):
    """Writes the next assistant message of many conversations in one call."""

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]: ...


class MeasuredPolicy:
    """A policy whose `generate` is `generate_measured` without the cost."""

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> list[PolicyOutput]:
        return self.generate_measured(conversations, fmt=fmt, seed=seed)[0]


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


# ------------------------------------------------------------------------ openai
class OpenAIPolicy(MeasuredPolicy):
    """An OpenAI-compatible completions endpoint (vLLM's ``/v1/completions``).

    Each conversation is rendered with :func:`render_prompt` and sent as a raw
    ``prompt`` (the server applies no chat template, so the tool-call format and
    the prompt are exactly ours). Requests run concurrently on a thread pool,
    through :class:`hat_jax.endpoint.EndpointClient` (no redirects, one
    deadline per request, a reply-size cap, every bad reply a PolicyError).
    With ``stream`` the replies come as server-sent events, so
    ``generate_measured`` has each row's time to first text (the latency
    replay: ``stream=True, retries=0``, since a replay measures what the server
    does); without, a row's TTFT is its whole request.

    Args:
      base_url: ``http://host:port`` or ``http://host:port/v1``.
      model: the served model name.
      max_tokens, temperature, top_p: sampling settings sent with each request.
      stop: stop strings (the chat turn-end tokens by default).
      logprobs: ask for the sampled tokens' log-probs (not streamed).
      return_token_ids: ask for the sampled ids (vLLM's ``return_token_ids``;
        not streamed).
      stream: stream the replies (module docstring).
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
        stream: bool = False,
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
        self.model, self.stream = model, bool(stream)
        self.body = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "stop": list(stop),
            **({"logprobs": 0} if logprobs and not stream else {}),
            **({"return_token_ids": True} if return_token_ids and not stream else {}),
            **(
                {"stream": True, "stream_options": {"include_usage": True}}
                if stream
                else {}
            ),
            **dict(extra_body or {}),
        }
        self.max_workers = max_workers
        self.enable_thinking = enable_thinking

    def _one(self, prompt: str, seed: int | None) -> tuple[PolicyOutput, tuple]:
        """One request: its output and (wall s, TTFT s, new tokens, prompt tokens)."""
        body = {"model": self.model, "prompt": prompt, **self.body}
        if seed is not None:
            body["seed"] = seed
        prefill = thinking_prefill(self.enable_thinking)
        where = f"POST {self.url}"
        t0 = time.monotonic()
        if self.stream:
            events = self.client.post_events("completions", body)
            wall = time.monotonic() - t0
            parts, first, usage, finish = stream_text(events, where)
            ttft = wall if first is None else first - t0
            out = PolicyOutput(
                prefill + "".join(parts),
                finish_reason="length" if finish == "length" else "stop",
            )
            n_new = usage.get("completion_tokens") or len(parts)
            return out, (wall, ttft, n_new, usage.get("prompt_tokens") or 0)
        c = parse_completion(self.client.post_json("completions", body), where)
        wall = time.monotonic() - t0
        out = PolicyOutput(
            prefill + c.text,
            c.token_ids,
            c.logprobs,
            "length" if c.finish_reason == "length" else "stop",
            prompt_tokens=c.prompt_token_ids,
        )
        n_prompt = len(c.prompt_token_ids or ())
        return out, (wall, wall, len(c.token_ids or ()), n_prompt)

    def generate_measured(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> tuple[list[PolicyOutput], CallStats]:
        """The outputs and what the requests cost (module docstring)."""
        fmts = formats(fmt, len(conversations))
        prompts = [
            render_prompt(c, fmt=f, enable_thinking=self.enable_thinking)
            for c, f in zip(conversations, fmts)
        ]
        seeds = [None if seed is None else seed + i for i in range(len(prompts))]
        t0 = time.perf_counter()
        rows = []
        if prompts:
            workers = max(1, min(self.max_workers, len(prompts)))
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                rows = list(pool.map(self._one, prompts, seeds))
        stats = CallStats(
            batch=len(rows),
            wall_s=time.perf_counter() - t0,
            ttft_s=[r[1][1] for r in rows],
            row_decode_s=sum(r[1][0] - r[1][1] for r in rows),
            new_tokens=sum(r[1][2] for r in rows),
            prompt_tokens=sum(r[1][3] for r in rows),
        )
        return [r[0] for r in rows], stats
