"""Batched KV-cache sampling with fixed shapes.

Prompts of different lengths are right-padded into one batch; cache slot s holds
position s, so each row writes its next token at its own position. Prefill is one
jitted call; decoding runs `chunk` steps per jitted `while_loop` (the cache buffers
are donated, so XLA updates them in place), and the host checks stop strings between
chunks. Shapes are bucketed to powers of two to keep recompiles rare.

Returned log-probs are those of the sampled tokens under the model's own
distribution (log_softmax of the raw logits, temperature 1, no truncation): what a
policy-gradient trainer recomputes.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx, struct
from jaxtyping import Array, Bool, Float, Int

from hat_jax.models import CausalLM, KVCache
from hat_jax.sampling import prefix


@dataclasses.dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens. temperature 0 is greedy; top_k 0 and top_p 1 disable.

    Generation stops at a stop token (kept as the last token), after a stop string
    (cut from the text), or at `max_new_tokens`.
    """

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    stop_ids: tuple[int, ...] | None = None  # None: the tokenizer's stop tokens
    stop_strings: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self):
        def bad(what: str, v) -> ValueError:
            return ValueError(f"SamplingParams: {what}, got {v!r}")

        ints = {"max_new_tokens": self.max_new_tokens, "top_k": self.top_k}
        for name, v in {**ints, "seed": self.seed}.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise bad(f"{name} must be an integer", v)
        if not 1 <= self.max_new_tokens <= 2**20:
            raise bad("max_new_tokens must be 1..1048576", self.max_new_tokens)
        if self.top_k < 0:
            raise bad("top_k must be >= 0 (0: off)", self.top_k)
        if not 0 <= self.seed < 2**63:
            raise bad("seed must be 0..2**63-1", self.seed)
        if not (np.isfinite(self.temperature) and self.temperature >= 0):
            raise bad(
                "temperature must be finite and >= 0 (0: greedy)", self.temperature
            )
        if not (np.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise bad("top_p must be in (0, 1] (1: off)", self.top_p)


@struct.dataclass
class DecodeState:
    cache: KVCache  # `model.init_cache`: per layer (k, v) [B, S, K, H] or GDNState
    last: Int[Array, " B"]  # the token to feed next
    pos: Int[Array, " B"]  # its position (= cache slot)
    done: Bool[Array, " B"]
    tokens: Int[Array, "B M"]  # generated tokens (pad after done)
    logprobs: Float[Array, "B M"]
    count: Int[Array, " B"]  # tokens generated per row
    step: Int[Array, ""]
    key: jax.Array


@dataclasses.dataclass
class Completion:
    tokens: list[int]
    logprobs: list[float]
    text: str | None
    finish_reason: str  # "stop" | "length"


def _rows(prompts, skip, width: int, pad: int) -> np.ndarray:
    """[B, width] int32: row i is prompt i from position skip[i], right-padded."""
    tokens = np.full((len(prompts), width), pad, np.int32)
    for i, p in enumerate(prompts):
        tokens[i, : len(p) - skip[i]] = p[skip[i] :]
    return tokens


def _bucket(n: int, minimum: int) -> int:
    """The next power of two >= n (at least `minimum`): few shapes, few compiles."""
    return max(minimum, 1 << (max(n, 1) - 1).bit_length())


def sample_token(
    logits: Float[Array, "B V"], key: jax.Array, *, temperature, top_k, top_p
) -> Int[Array, " B"]:
    """Greedy, or temperature sampling with optional top-k / nucleus truncation."""
    if temperature == 0.0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    logits = logits / temperature
    if top_k:
        kth = jax.lax.top_k(logits, top_k)[0][:, -1:]  # [B, 1]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    if top_p < 1.0:
        sorted_logits = jnp.sort(logits, axis=-1)[:, ::-1]
        cum = jnp.cumsum(jax.nn.softmax(sorted_logits, axis=-1), axis=-1)
        # keep the smallest prefix whose mass reaches top_p (always >= 1 token)
        cutoff_idx = jnp.sum(cum < top_p, axis=-1, keepdims=True)  # [B, 1]
        cutoff = jnp.take_along_axis(sorted_logits, cutoff_idx, axis=-1)
        logits = jnp.where(logits < cutoff, -jnp.inf, logits)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def _prefill(
    graphdef, params, tokens, lengths, cache, key, *, sp: SamplingParams, max_new
):
    model = nnx.merge(graphdef, params)
    b, p = tokens.shape
    positions = jnp.broadcast_to(jnp.arange(p, dtype=jnp.int32), (b, p))
    # The mask keeps padding out of recurrent (linear-attention) states; KV caches
    # need none (later tokens overwrite the padded slots).
    mask = positions < lengths[:, None]
    hidden, cache, _ = model.hidden_states(
        tokens, positions, mask, cache=cache, prefill=True
    )
    return _start(model, hidden, lengths - 1, lengths, cache, key, sp, max_new)


def _prefill_suffix(
    graphdef, params, tokens, starts, lengths, cache, key, *, sp, max_new, slots
):
    """Prefills `tokens` [B, T] (each row's prompt from `starts`, right-padded)
    over a cache that holds every row's first `starts` tokens, in as many slots as
    the prompts need; the KV is then padded to the decode's `slots`."""
    model = nnx.merge(graphdef, params)
    b, t = tokens.shape
    offsets = jnp.arange(t, dtype=jnp.int32)
    positions = starts[:, None] + offsets  # [B, T]
    mask = offsets < (lengths - starts)[:, None]
    hidden, cache, _ = model.hidden_states(tokens, positions, mask, cache=cache)
    cache = prefix.resize_kv(cache, slots)
    return _start(model, hidden, lengths - starts - 1, lengths, cache, key, sp, max_new)


def _start(model, hidden, last, lengths, cache, key, sp, max_new) -> DecodeState:
    """The decode state after a prefill: the first token sampled from `hidden` at
    index `last` [B] of each row; the next position is `lengths` [B]."""
    last_h = jnp.take_along_axis(hidden, last[:, None, None], axis=1)  # [B,1,D]
    logits = model.logits(last_h)[:, 0]  # [B, V]
    b = logits.shape[0]
    key, sub = jax.random.split(key)
    tok = sample_token(
        logits, sub, temperature=sp.temperature, top_k=sp.top_k, top_p=sp.top_p
    )
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), tok[:, None], axis=-1)[:, 0]
    tokens_out = jnp.zeros((b, max_new), jnp.int32).at[:, 0].set(tok)
    logprobs = jnp.zeros((b, max_new), jnp.float32).at[:, 0].set(logp)
    done = _is_stop(tok, sp.stop_ids) | (max_new <= 1)
    return DecodeState(
        cache=cache,
        last=tok,
        pos=lengths,
        done=done,
        tokens=tokens_out,
        logprobs=logprobs,
        count=jnp.ones((b,), jnp.int32),
        step=jnp.ones((), jnp.int32),
        key=key,
    )


def _is_stop(tok, stop_ids) -> Bool[Array, " B"]:
    if not stop_ids:
        return jnp.zeros(tok.shape, bool)
    return jnp.isin(tok, jnp.asarray(stop_ids, jnp.int32))


def _decode_chunk(
    graphdef, params, state: DecodeState, *, sp: SamplingParams, chunk, pad, slots
):
    model = nnx.merge(graphdef, params)
    max_new = state.tokens.shape[1]
    end = jnp.minimum(state.step + chunk, max_new)

    def cond(s: DecodeState):
        return (s.step < end) & ~jnp.all(s.done)

    def body(s: DecodeState):
        hidden, cache, _ = model.hidden_states(
            s.last[:, None], s.pos[:, None], cache=s.cache
        )
        logits = model.logits(hidden)[:, 0]  # [B, V]
        key, sub = jax.random.split(s.key)
        tok = sample_token(
            logits, sub, temperature=sp.temperature, top_k=sp.top_k, top_p=sp.top_p
        )
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), tok[:, None], axis=-1)[
            :, 0
        ]
        live = ~s.done
        tok = jnp.where(live, tok, pad)
        rows = jnp.arange(tok.shape[0])
        tokens = s.tokens.at[rows, s.step].set(tok)
        logprobs = s.logprobs.at[rows, s.step].set(jnp.where(live, logp, 0.0))
        pos = s.pos + live.astype(jnp.int32)
        full = (s.step + 1 >= max_new) | (pos + 1 >= slots)
        done = s.done | (live & (_is_stop(tok, sp.stop_ids) | full))
        return DecodeState(
            cache=cache,
            last=tok,
            pos=pos,
            done=done,
            tokens=tokens,
            logprobs=logprobs,
            count=s.count + live.astype(jnp.int32),
            step=s.step + 1,
            key=key,
        )

    return jax.lax.while_loop(cond, body, state)


@dataclasses.dataclass(frozen=True)
class CallInfo:
    """What one `generate` call did: tokens summed over rows, wall seconds.

    `prefill_s` runs until the first tokens are on the host (compiles included),
    `decode_s` from there to the end.
    """

    rows: int
    prompt_tokens: int
    reused: tuple[int, ...]  # per row: prompt tokens from the previous call's cache
    prefill_s: float
    decode_s: float

    @property
    def reused_tokens(self) -> int:
        return sum(self.reused)


class Sampler:
    """Generates from a model; the model is split once, its functions jitted once.

    `prefix_reuse=True` keeps each call's cache for the next one, which then
    prefills only what its prompts do not share with a kept row (`prefix.py`):
    the calls of an agent's turn, or cases under one system prompt. Outputs equal
    a fresh prefill's up to float rounding (tested). `last_call` says what the
    latest call reused and how long its prefill and decode took.
    """

    def __init__(
        self,
        model: CausalLM,
        tokenizer=None,
        *,
        chunk: int = 32,
        cache_dtype=None,
        prefix_reuse: bool = False,
    ):
        self.graphdef, self.params = nnx.split(model)
        self.model_config = model.config
        self.tokenizer = tokenizer
        self.chunk = chunk
        self.cache_dtype = cache_dtype or model.config.jnp_dtype
        self.prefix_reuse = prefix_reuse
        self._kept: prefix.Kept | None = None
        self.last_call: CallInfo | None = None
        self._init_cache = model.init_cache
        self._jit_prefill = jax.jit(
            _prefill, static_argnames=("sp", "max_new"), donate_argnames=("cache",)
        )
        # (the suffix's cache is not donated: the KV leaves in another size)
        self._jit_suffix = jax.jit(
            _prefill_suffix, static_argnames=("sp", "max_new", "slots")
        )
        self._jit_decode = jax.jit(
            _decode_chunk,
            static_argnames=("sp", "chunk", "pad", "slots"),
            donate_argnames=("state",),
        )

    def _plan(
        self, prompts, lengths, plen: int, *, back: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(src [B], reuse [B]): the kept row each prompt starts from and how
        many of its positions come from the kept cache (all 0: a fresh prefill);
        `back` positions short of the shared prefix (a cache whose slot needs
        the token after it: MTP)."""
        b = len(prompts)
        if not self.prefix_reuse or self._kept is None:
            return np.zeros(b, np.int32), np.zeros(b, np.int32)
        src, shared = prefix.plan(prompts, self._kept)
        reuse = np.maximum(shared - back, 0).astype(np.int32)
        # The suffix attends to all its slots where a fresh prefill skips the
        # upper triangle: worth it when the batch's longest suffix is at most
        # half the padded prompt (then no part costs more than fresh).
        if 2 * _bucket(int((lengths - reuse).max()), 32) > plen:
            reuse[:] = 0
        return src, reuse

    def forget(self) -> None:
        """Drops the kept prefix cache: the next call prefills every prompt whole
        (e.g. between repeats of a measurement, so none starts warm)."""
        self._kept = None

    def update_params(self, model_or_params) -> None:
        """Swaps in new weights (e.g. after a train step) without recompiling."""
        if isinstance(model_or_params, nnx.Module):
            model_or_params = nnx.state(model_or_params)
        self.params = model_or_params
        self._kept = None  # a cache of other weights

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams | None = None,
        *,
        on_chunk=None,
        **kw,
    ) -> list[Completion]:
        """Completes each prompt (token ids). `kw` overrides `params` fields.

        `on_chunk(tokens: list[list[int]])`, if given, sees each row's tokens so
        far after every decode chunk (for streaming).
        """
        sp = dataclasses.replace(params or SamplingParams(), **kw)
        if sp.stop_ids is None:
            stop = self.tokenizer.stop_ids if self.tokenizer is not None else ()
            sp = dataclasses.replace(sp, stop_ids=tuple(stop))
        if not prompts or any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        b = len(prompts)
        t0 = time.perf_counter()
        lengths = np.array([len(p) for p in prompts], np.int32)
        plen = _bucket(int(lengths.max()), 32)
        slots = _bucket(plen + sp.max_new_tokens, 64)
        pad = self.tokenizer.pad_id if self.tokenizer is not None else 0
        key = jax.random.key(sp.seed)
        sp_static = dataclasses.replace(sp, stop_strings=(), seed=0)
        src, reuse = self._plan(prompts, lengths, plen)
        # The new call's cache replaces the kept one, never held beside it.
        if reuse.any():
            cache = prefix.gather(
                self._kept.cache, jnp.asarray(src), jnp.asarray(reuse > 0), slots=plen
            )
            self._kept = None
            tokens = _rows(
                prompts, reuse, _bucket(int((lengths - reuse).max()), 32), pad
            )
            state = self._jit_suffix(
                self.graphdef,
                self.params,
                jnp.asarray(tokens),
                jnp.asarray(reuse),
                jnp.asarray(lengths),
                cache,
                key,
                sp=sp_static,
                max_new=sp.max_new_tokens,
                slots=slots,
            )
        else:
            self._kept = None
            tokens = _rows(prompts, reuse, plen, pad)
            state = self._jit_prefill(
                self.graphdef,
                self.params,
                jnp.asarray(tokens),
                jnp.asarray(lengths),
                self._init_cache(b, slots, self.cache_dtype),
                key,
                sp=sp_static,
                max_new=sp.max_new_tokens,
            )
        states = prefix.copy_states(state.cache) if self.prefix_reuse else None
        state.done.block_until_ready()
        t1 = time.perf_counter()
        cut = [None] * b  # per row: generated-token count after a stop string
        while True:
            state, host_done = self._poll(state, sp, cut, on_chunk)
            if host_done.all() or int(state.step) >= sp.max_new_tokens:
                break
            state = self._jit_decode(
                self.graphdef,
                self.params,
                state,
                sp=sp_static,
                chunk=self.chunk,
                pad=pad,
                slots=slots,  # the cache's length (its layout is the model's)
            )
        toks, counts = np.asarray(state.tokens), np.asarray(state.count)
        if self.prefix_reuse:
            self._kept = prefix.keep(prompts, toks, counts, state.cache, states)
        self._record_call(lengths, reuse, t0, t1)
        return self._completions(state, sp, cut)

    def _poll(self, state, sp, cut, on_chunk):
        """Between device chunks: (state, host done [B]) after the stop strings
        (host-side: they need the tokenizer) and the `on_chunk` callback."""
        host_done = np.array(state.done)
        if sp.stop_strings and self.tokenizer is not None:
            host_done = self._check_stop_strings(state, sp, cut, host_done)
            state = state.replace(done=jnp.asarray(host_done))
        if on_chunk is not None:
            toks, counts = np.asarray(state.tokens), np.asarray(state.count)
            on_chunk([toks[i, : counts[i]].tolist() for i in range(len(cut))])
        return state, host_done

    def _record_call(self, lengths, reuse, t0: float, t1: float) -> None:
        """`last_call` of a call that prefilled by t1 and decoded until now."""
        self.last_call = CallInfo(
            rows=len(lengths),
            prompt_tokens=int(lengths.sum()),
            reused=tuple(int(r) for r in reuse),
            prefill_s=t1 - t0,
            decode_s=time.perf_counter() - t1,
        )

    def _check_stop_strings(self, state, sp, cut, done):
        toks, counts = np.asarray(state.tokens), np.asarray(state.count)
        for i in range(len(cut)):
            if cut[i] is not None:
                continue
            if not any(
                s in self.tokenizer.decode(toks[i, : counts[i]])
                for s in sp.stop_strings
            ):
                continue
            for n in range(1, counts[i] + 1):  # the first count that completes a stop
                text = self.tokenizer.decode(toks[i, :n])
                if any(s in text for s in sp.stop_strings):
                    cut[i], done[i] = n, True
                    break
        return done

    def _completions(self, state, sp, cut) -> list[Completion]:
        toks, lps = np.asarray(state.tokens), np.asarray(state.logprobs)
        counts = np.asarray(state.count)
        stop = set(sp.stop_ids)
        out = []
        for i in range(toks.shape[0]):
            n = cut[i] if cut[i] is not None else int(counts[i])
            row = toks[i, :n].tolist()
            reason = (
                "stop" if cut[i] is not None or (row and row[-1] in stop) else "length"
            )
            text = None
            if self.tokenizer is not None:
                body = row[:-1] if row and row[-1] in stop else row
                text = self.tokenizer.decode(body, skip_special_tokens=False)
                for s in sp.stop_strings:
                    if s in text:
                        text = text[: text.index(s)]
            out.append(Completion(row, lps[i, :n].tolist(), text, reason))
        return out
