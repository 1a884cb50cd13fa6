"""Our JAX sampler as a policy: render, tokenise, generate the batch in one call.

One policy for every use of our own model: RL rollouts (sampled, with the
sampled tokens' log-probs), evaluation (greedy), and the latency replay, which
reads `generate_measured`'s `CallStats`. The sampler is any object with
`generate(prompts, params, on_chunk=...)`: `hat_jax.sampling.Sampler` (with
`prefix_reuse`, a call starts from the cache of the prefix it shares with the
previous one; `CallStats.cached_tokens`) or `SpeculativeSampler` (MTP drafts;
its acceptance counts go into `CallStats`).

- `max_rows` > 0 cuts a call into chunks of at most that many conversations;
  `max_cells` > 0 also caps each chunk's rows x (padded prompt length)^2, the
  size of a prefill's attention scores per head and layer (a batch of 64
  prompts padded to 4,096 tokens peaked at 12.6 GB; cut to 16 rows, 4.0 GB).
  Chunks are consecutive conversations; chunk `c` of a call seeded `s` is
  seeded from `(s, c)` whenever a call is cut (always under `max_rows`).
- `pad_rows` pads each chunk to a power of two rows (repeating its last prompt)
  so few batch shapes are compiled; the padding rows' compute is in the times,
  not in the outputs or the acceptance counts.
- TTFT is the prefill: the wall time until the sampler's first `on_chunk` call.
  XLA compile time (JAX's `/jax/core/compile/*` monitoring events) is taken out
  of every time and reported apart (`compile_s`): a server compiles once at
  start-up, not per request.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hat_jax.harness.policy import (
    CallStats,
    MeasuredPolicy,
    Message,
    PolicyOutput,
    formats,
    render_prompt,
    thinking_prefill,
)

if TYPE_CHECKING:  # the sampler pulls in JAX
    from hat_jax.sampling.sampler import Sampler, SamplingParams
    from hat_jax.text.tokenizer import Tokenizer

__all__ = ["SamplerPolicy", "compile_seconds"]

_COMPILE_S = [0.0]  # seconds JAX spent tracing/lowering/compiling, process-wide
_LISTENING = [False]


def _on_jax_event(event: str, duration: float, **kwargs) -> None:
    if event.startswith("/jax/core/compile/"):
        _COMPILE_S[0] += duration


def compile_seconds() -> float:
    """JAX compile time so far in this process (from the first SamplerPolicy)."""
    return _COMPILE_S[0]


def _listen() -> None:
    if not _LISTENING[0]:
        import jax

        jax.monitoring.register_event_duration_secs_listener(_on_jax_event)
        _LISTENING[0] = True


class SamplerPolicy(MeasuredPolicy):
    """Our JAX sampler behind the policy contract (module docstring).

    Args:
      sampler: a `Sampler` or `SpeculativeSampler` (its tokenizer, if any, is
        the default).
      tokenizer: the tokenizer matching the model.
      params: sampling parameters; stop tokens default to the tokenizer's.
      enable_thinking: the thinking pre-fill (`hat_jax.harness.policy`).
      max_rows: conversations per sampler call (0 = all at once).
      max_cells: rows x padded-prompt-length^2 per sampler call (0 = no cap;
        a single conversation always goes, whatever its length).
      pad_rows: pad each sampler call to a power of two rows.
    """

    def __init__(
        self,
        sampler: Sampler,
        tokenizer: Tokenizer | None = None,
        params: SamplingParams | None = None,
        *,
        enable_thinking: bool | None = None,
        max_rows: int = 0,
        max_cells: int = 0,
        pad_rows: bool = False,
    ):
        from hat_jax.sampling.sampler import SamplingParams

        self.sampler = sampler
        self.tokenizer = tokenizer or sampler.tokenizer
        if self.tokenizer is None:
            raise ValueError("SamplerPolicy needs a tokenizer")
        for name, v in (("max_rows", max_rows), ("max_cells", max_cells)):
            if int(v) < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        self.params = params or SamplingParams()
        self.enable_thinking = enable_thinking
        self.max_rows, self.max_cells = int(max_rows), int(max_cells)
        self.pad_rows = bool(pad_rows)
        self.calls = 0
        _listen()

    def generate_measured(
        self,
        conversations: Sequence[Sequence[Message]],
        *,
        fmt: str | Sequence[str] = "qwen_xml",
        seed: int | None = None,
    ) -> tuple[list[PolicyOutput], CallStats]:
        """The outputs and what the call cost (chunks' stats summed)."""
        n = len(conversations)
        if not n:
            return [], CallStats(batch=0, wall_s=0.0, ttft_s=[], row_decode_s=0.0,
                                 new_tokens=0)  # fmt: skip
        fmts = formats(fmt, n)
        texts = [
            render_prompt(c, fmt=f, enable_thinking=self.enable_thinking)
            for c, f in zip(conversations, fmts)
        ]
        prompts = self.tokenizer.encode_batch(texts)
        bounds = self._chunks([len(p) for p in prompts])
        outs, stats = [], []
        for c, (i, j) in enumerate(bounds):
            sub = seed
            if seed is not None and (self.max_rows or len(bounds) > 1):
                sub = int(np.random.default_rng([seed, c]).integers(2**31))
            o, s = self._call(prompts[i:j], sub)
            outs += o
            stats.append(s)
        return outs, CallStats.merged(stats)

    def _chunks(self, lengths: list[int]) -> list[tuple[int, int]]:
        """[start, end) of each sampler call: consecutive rows, at most
        `max_rows` of them and rows x bucket(longest)^2 <= `max_cells`."""
        from hat_jax.sampling.sampler import _bucket  # the sampler's padding

        bounds, i, n = [], 0, len(lengths)
        while i < n:
            j, longest = i + 1, _bucket(lengths[i], 32)
            while j < n and (not self.max_rows or j - i < self.max_rows):
                longest_j = max(longest, _bucket(lengths[j], 32))
                if self.max_cells and (j + 1 - i) * longest_j**2 > self.max_cells:
                    break
                j, longest = j + 1, longest_j
            bounds.append((i, j))
            i = j
        return bounds

    def _call(self, prompts, seed) -> tuple[list[PolicyOutput], CallStats]:
        n = len(prompts)
        padded = prompts
        if self.pad_rows:
            padded = prompts + [prompts[-1]] * ((1 << (n - 1).bit_length()) - n)
        sp = self.params
        if sp.stop_ids is None:
            sp = dataclasses.replace(sp, stop_ids=self.tokenizer.stop_ids)
        # A fresh key per call unless the caller fixes one: retries must differ.
        seed = sp.seed + self.calls if seed is None else seed
        sp = dataclasses.replace(sp, seed=seed)
        self.calls += 1
        first: list[float] = []
        t0, c0 = time.perf_counter(), compile_seconds()

        def on_chunk(_tokens):
            if not first:
                first.append(time.perf_counter() - t0 - (compile_seconds() - c0))

        completions = self.sampler.generate(padded, sp, on_chunk=on_chunk)[:n]
        compile_s = compile_seconds() - c0
        wall = time.perf_counter() - t0 - compile_s
        prefill = thinking_prefill(self.enable_thinking)
        stop = set(sp.stop_ids or ())
        out = []
        for prompt, c in zip(prompts, completions):
            text = c.text
            if text is None:
                body = c.tokens[:-1] if c.tokens and c.tokens[-1] in stop else c.tokens
                text = self.tokenizer.decode(body)
            lps = list(c.logprobs) if c.logprobs is not None else None
            out.append(
                PolicyOutput(
                    prefill + text,
                    list(c.tokens),
                    lps,
                    c.finish_reason,
                    prompt_tokens=list(prompt),
                )
            )
        ttft = first[0] if first else wall
        stats = CallStats(
            batch=n,
            wall_s=wall,
            ttft_s=[ttft] * n,
            row_decode_s=(wall - ttft) * n,
            new_tokens=sum(len(c.tokens) for c in completions),
            prompt_tokens=sum(len(p) for p in prompts),
            compile_s=compile_s,
        )
        info = getattr(self.sampler, "last_call", None)
        if info is not None and getattr(info, "reused", None) is not None:
            stats.cached_tokens = sum(info.reused[:n])
        if hasattr(self.sampler, "stats_of_rows"):  # MTP drafts: the real rows'
            spec = self.sampler.stats_of_rows(n)
            stats.drafts_proposed = spec.proposed
            stats.drafts_accepted = spec.accepted
            stats.row_verifies = spec.num_drafts
            stats.accepted_per_pos = spec.accepted_per_pos
        return out, stats
