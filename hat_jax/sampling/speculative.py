"""Greedy MTP self-speculative decoding: the model's MTP head drafts, the trunk checks.

One verify step per row at position p (the token `last` not yet in the cache):

    trunk([last, d1..dk] at p..p+k, cache)   -> greedy g0..gk  (gi: token at p+i+1)
    n = longest prefix with d(i+1) == gi      -> emit g0..gn    (n drafts + 1 bonus)
    MTP(trunk hidden[p+i], embed(gi)) at p+i  -> MTP output at p+n drafts d1'
    MTP(own output, embed(dj')) at p+n+j      -> d(j+1)' for j = 1..k-1 (recursive)

Every emitted token is the trunk's own argmax at its position, so the output is the
plain greedy decode's (up to float ties). Rows advance by different amounts, which
slot = position makes easy: each step writes the trunk's KV (and the MTP layer's, in
its own cache) at p..p+k, and the mask `slot <= position` hides entries past the
accepted prefix until a later step overwrites them (every step writes its slots
before any query reads them). The recursive draft steps feed the MTP its own output
hidden state, as vLLM does with one MTP layer; with several MTP layers step j uses
`layers[j % n]` and its own cache, filled only by the draft steps that use it.

The Qwen3.5 hybrid's Gated DeltaNet layers carry a recurrent state that, unlike
KV slots, cannot be overwritten later: the verify pass asks them for their state
after every prefix of its k + 1 tokens (`hidden_states(keep_states=True)`) and each
row keeps the one after the m tokens it emitted (`gated_deltanet.select_state`);
rows that are done keep theirs (m = 0).

Dims: B batch, T positions, D model, V vocab, k drafts.
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
from hat_jax.models.gated_deltanet import GDNState, select_state
from hat_jax.models.layers import attention_mask, rope_tables
from hat_jax.sampling import prefix
from hat_jax.sampling.sampler import (
    Completion,
    Sampler,
    SamplingParams,
    _bucket,
    _is_stop,
    _rows,
)


@struct.dataclass
class SpecState:
    cache: KVCache  # the trunk's, slot = position
    mtp_cache: KVCache  # one (k, v) per MTP layer, slot = position
    last: Int[Array, " B"]  # the token to feed next (not yet in the cache)
    pos: Int[Array, " B"]  # its position
    drafts: Int[Array, "B k"]  # guesses for positions pos + 1 .. pos + k
    done: Bool[Array, " B"]
    tokens: Int[Array, "B M"]
    logprobs: Float[Array, "B M"]
    count: Int[Array, " B"]
    iters: Int[Array, ""]  # verify steps (trunk forwards after the prefill)
    accepted: Int[Array, " B"]  # drafts accepted per row
    # [b, i]: row b's verify steps that accepted >= i + 1 drafts (prefix rule)
    accepted_per_pos: Int[Array, "B k"]
    verifies: Int[Array, " B"]  # verify steps per row while it was live


@dataclasses.dataclass(frozen=True)
class SpecStats:
    """Totals over the last `generate` call, in vLLM's terms
    (`vllm/v1/spec_decode/metrics.py`): a row's verify step is one of its
    drafts (`num_drafts`), a draft token counts as accepted only when every
    draft before it in the step was (the accepted prefix)."""

    proposed: int  # drafts checked (k per live row per verify step)
    # drafts in the accepted prefixes, counted before a stop token or max_new
    # cuts the emitted block (as vLLM counts them)
    accepted: int
    row_verifies: int  # verify steps summed over rows
    trunk_forwards: int  # jitted trunk calls: 1 prefill + verify steps
    # [i]: row verify steps that accepted >= i + 1 drafts (length k, summed over
    # rows); non-increasing, sums to `accepted`
    accepted_per_pos: tuple[int, ...]

    @property
    def num_drafts(self) -> int:
        """vLLM's num_drafts: every live row drafts k tokens each verify step."""
        return self.row_verifies

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / max(self.proposed, 1)

    @property
    def mean_accepted_length(self) -> float:
        """Tokens emitted per row per verify step (accepted drafts + the bonus)."""
        return 1.0 + self.accepted / max(self.num_drafts, 1)

    @property
    def acceptance_per_position(self) -> tuple[float, ...]:
        """[i]: the share of drafts whose first i + 1 tokens were accepted."""
        return tuple(a / max(self.num_drafts, 1) for a in self.accepted_per_pos)


def _argmax(logits) -> Int[Array, "..."]:
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def _mtp(model, hidden, nxt, positions, kv, step, *, prefill=False):
    """One MTP pass over T positions with its cache: (normed output, kv).

    `prefill`: positions are 0..T-1 and the cache is empty, so attention runs over
    this call's keys (the fused causal kernel) while they are written to the cache.
    """
    allowed = attention_mask(positions, None, None if prefill else kv[0].shape[1])
    cos, sin = rope_tables(positions, model.config, model.config.rotary_dim)
    embeds = model.embed_tokens(nxt)
    return model.mtp(hidden, embeds, cos, sin, allowed, positions, kv, step=step)


def _head_rows(model, ids: Int[Array, " W"]) -> Float[Array, "W D"]:
    """The LM head's rows for token ids `ids` (the tied embedding's or lm_head's)."""
    if model.lm_head is None:
        return jnp.take(model.embed_tokens.embedding[...], ids, axis=0)
    return jnp.take(model.lm_head.kernel[...], ids, axis=1).T


def _draft_token(model, x, draft_ids, rows=None) -> Int[Array, "B 1"]:
    """The draft's argmax over the whole vocabulary, or over `draft_ids` only.

    A pruned draft vocabulary reads W of the V head rows per draft token (the
    head is ~21 % of SmolLM2-135M's weights); the trunk's verify still scores
    every token, so the output stays the plain greedy decode's. `rows`: the
    head's rows for `draft_ids` (`_head_rows`), gathered once by the caller.
    """
    if draft_ids is None:
        return _argmax(model.logits(x))
    w = _head_rows(model, draft_ids) if rows is None else rows  # [W, D]
    logits = jnp.einsum("btd,wd->btw", x.astype(w.dtype), w)
    return jnp.take(draft_ids, jnp.argmax(logits, axis=-1)).astype(jnp.int32)


def _draft(
    model,
    hidden,
    nxt,
    positions,
    at,
    mtp_cache,
    k,
    draft_ids=None,
    rows=None,
    *,
    prefill=False,
):
    """MTP over the verified positions, then k - 1 recursive steps from index `at`.

    `draft_ids`: a pruned draft vocabulary [W] (None: every token); `rows`: its
    head rows when the caller gathered them already (once per verify loop).
    Returns (drafts [B, k], mtp_cache).
    """
    if draft_ids is not None and rows is None:
        rows = _head_rows(model, draft_ids)  # [W, D]
    n_layers = len(mtp_cache)
    mtp_cache = list(mtp_cache)
    x, mtp_cache[0] = _mtp(
        model, hidden, nxt, positions, mtp_cache[0], 0, prefill=prefill
    )
    x = jnp.take_along_axis(x, at[:, None, None], axis=1)  # [B, 1, D]
    pos = jnp.take_along_axis(positions, at[:, None], axis=1)  # [B, 1]
    drafts = [_draft_token(model, x, draft_ids, rows)]  # each [B, 1]
    for j in range(1, k):
        i = j % n_layers
        x, mtp_cache[i] = _mtp(model, x, drafts[-1], pos + j, mtp_cache[i], j)
        drafts.append(_draft_token(model, x, draft_ids, rows))
    return jnp.concatenate(drafts, axis=1), mtp_cache


def _prefill(
    graphdef, params, tokens, lengths, cache, mtp_cache, draft_ids, *, k, max_new, stop
):
    model = nnx.merge(graphdef, params)
    b, p = tokens.shape
    positions = jnp.broadcast_to(jnp.arange(p, dtype=jnp.int32), (b, p))
    mask = positions < lengths[:, None]
    hidden, cache, _ = model.hidden_states(
        tokens, positions, mask, cache=cache, prefill=True
    )
    return _start(
        model, hidden, tokens, positions, lengths - 1, lengths, cache, mtp_cache,
        draft_ids, k=k, max_new=max_new, stop=stop, prefill=True,
    )  # fmt: skip


def _prefill_suffix(
    graphdef, params, tokens, starts, lengths, cache, mtp_cache, draft_ids, *,
    k, max_new, stop, slots,
):  # fmt: skip
    """Prefills `tokens` [B, T] (each row's prompt from `starts`, right-padded)
    over trunk and MTP caches that hold every row's first `starts` positions
    (`prefix.py`; MTP slot t pairs hidden[t] with token t + 1, so it is valid
    wherever both are the new prompt's); both caches padded to `slots`, the
    MTP's first (its draft steps write at up to lengths - 1 + k - 1)."""
    model = nnx.merge(graphdef, params)
    # the first drafts' recursive steps write past the prompt's slots (k >= 2)
    mtp_cache = prefix.resize_kv(mtp_cache, slots)
    offsets = jnp.arange(tokens.shape[1], dtype=jnp.int32)
    positions = starts[:, None] + offsets  # [B, T]
    mask = offsets < (lengths - starts)[:, None]
    hidden, cache, _ = model.hidden_states(tokens, positions, mask, cache=cache)
    state = _start(
        model, hidden, tokens, positions, lengths - starts - 1, lengths, cache,
        mtp_cache, draft_ids, k=k, max_new=max_new, stop=stop, prefill=False,
    )  # fmt: skip
    return state.replace(cache=prefix.resize_kv(state.cache, slots))


def _start(
    model, hidden, tokens, positions, last_i, lengths, cache, mtp_cache, draft_ids,
    *, k, max_new, stop, prefill,
) -> SpecState:  # fmt: skip
    """The state after a prefill of `tokens` at `positions` [B, T]: the first
    token from `hidden` at index `last_i` [B], the MTP's first drafts; the next
    position is `lengths` [B]."""
    b = tokens.shape[0]
    last_h = jnp.take_along_axis(hidden, last_i[:, None, None], axis=1)  # [B, 1, D]
    last_logits = model.logits(last_h)[:, 0]  # [B, V]
    tok = _argmax(last_logits)
    logp = jnp.take_along_axis(jax.nn.log_softmax(last_logits), tok[:, None], -1)
    rows = jnp.arange(b)
    # MTP slot t sees hidden[t] and token t + 1: the prompt's, then the new token.
    nxt = jnp.concatenate([tokens[:, 1:], jnp.zeros_like(tokens[:, :1])], axis=1)
    nxt = nxt.at[rows, last_i].set(tok)
    drafts, mtp_cache = _draft(
        model, hidden, nxt, positions, last_i, mtp_cache, k, draft_ids, prefill=prefill
    )
    return SpecState(
        cache=cache,
        mtp_cache=mtp_cache,
        last=tok,
        pos=lengths,
        drafts=drafts,
        done=_is_stop(tok, stop) | (max_new <= 1),
        tokens=jnp.zeros((b, max_new), jnp.int32).at[:, 0].set(tok),
        logprobs=jnp.zeros((b, max_new), jnp.float32).at[:, 0].set(logp[:, 0]),
        count=jnp.ones((b,), jnp.int32),
        iters=jnp.zeros((), jnp.int32),
        accepted=jnp.zeros((b,), jnp.int32),
        accepted_per_pos=jnp.zeros((b, k), jnp.int32),
        verifies=jnp.zeros((b,), jnp.int32),
    )


def _roll_back(cache, m):
    """Each DeltaNet layer's state after the first m[b] verified tokens of row b."""
    return [select_state(c, m) if isinstance(c, GDNState) else c for c in cache]


def _verify_chunk(
    graphdef,
    params,
    state: SpecState,
    draft_ids=None,
    *,
    k,
    chunk,
    slots,
    stop,
    hybrid=False,
):
    model = nnx.merge(graphdef, params)
    max_new = state.tokens.shape[1]
    end = state.iters + chunk
    offs = jnp.arange(k + 1, dtype=jnp.int32)
    # the pruned draft vocabulary's head rows, gathered once for the whole loop
    head_rows = None if draft_ids is None else _head_rows(model, draft_ids)  # [W, D]

    def cond(s: SpecState):
        return (s.iters < end) & ~jnp.all(s.done)

    def body(s: SpecState):
        b = s.last.shape[0]
        rows = jnp.arange(b)
        inp = jnp.concatenate([s.last[:, None], s.drafts], axis=1)  # [B, k+1]
        positions = s.pos[:, None] + offs  # [B, k+1]
        kw = {"keep_states": True} if hybrid else {}
        hidden, cache, _ = model.hidden_states(inp, positions, cache=s.cache, **kw)
        logits = model.logits(hidden)  # [B, k+1, V]
        g = _argmax(logits)  # g[:, i]: the trunk's token at position pos + i + 1
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), g[..., None], -1)
        n = jnp.sum(jnp.cumprod(s.drafts == g[:, :k], axis=1), axis=1)  # [B]
        live = ~s.done
        took = live[:, None] & (offs[None, :k] < n[:, None])  # [B, k]: draft i kept
        # Emit g[0..n], cut after the first stop token and at max_new.
        stops = _is_stop(g, stop) & (offs[None] <= n[:, None])
        first_stop = jnp.where(stops.any(1), jnp.argmax(stops, axis=1), k + 1)
        m = jnp.minimum(jnp.minimum(n, first_stop) + 1, max_new - s.count)
        m = jnp.where(live, m, 0)  # tokens emitted per row
        if hybrid:
            cache = _roll_back(cache, m)
        emit = offs[None] < m[:, None]
        idx = jnp.where(emit, s.count[:, None] + offs, max_new)  # max_new: dropped
        tokens = s.tokens.at[rows[:, None], idx].set(g, mode="drop")
        logprobs = s.logprobs.at[rows[:, None], idx].set(logp[..., 0], mode="drop")
        at = jnp.maximum(m - 1, 0)  # the last emitted token's index
        last = jnp.where(live, jnp.take_along_axis(g, at[:, None], 1)[:, 0], s.last)
        pos = s.pos + m
        count = s.count + m
        full = (count >= max_new) | (pos + k + 1 >= slots)
        done = s.done | (live & ((first_stop < m) | full))
        drafts, mtp_cache = _draft(
            model, hidden, g, positions, at, s.mtp_cache, k, draft_ids, head_rows
        )
        return SpecState(
            cache=cache,
            mtp_cache=mtp_cache,
            last=last,
            pos=pos,
            drafts=drafts,
            done=done,
            tokens=tokens,
            logprobs=logprobs,
            count=count,
            iters=s.iters + 1,
            accepted=s.accepted + jnp.where(live, n, 0),
            accepted_per_pos=s.accepted_per_pos + took.astype(jnp.int32),
            verifies=s.verifies + live.astype(jnp.int32),
        )

    return jax.lax.while_loop(cond, body, state)


def _draft_vocab(ids, vocab_size: int):
    """`draft_vocab` as sorted unique int32 ids on device, or None.

    Raises:
      ValueError: empty, not integers, or an id outside 0..vocab_size - 1.
    """
    if ids is None:
        return None
    a = np.asarray(ids)
    if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError("draft_vocab must be a non-empty 1-D list of token ids")
    if a.min() < 0 or a.max() >= vocab_size:
        raise ValueError(
            f"draft_vocab ids must lie in 0..{vocab_size - 1}, got "
            f"{int(a.min())}..{int(a.max())}"
        )
    return jnp.asarray(np.unique(a), jnp.int32)


class SpeculativeSampler(Sampler):
    """Greedy decoding with `k` MTP drafts checked per trunk forward.

    `generate` returns the plain `Sampler`'s greedy completions (temperature 0 only)
    and leaves totals for the call in `self.stats` (`SpecStats`). `chunk` counts
    verify steps per jitted loop. `draft_vocab`: token ids the drafts are chosen
    from (e.g. the most frequent tokens of the model's own outputs); the head's
    other rows are not read while drafting. None: the whole vocabulary.

    `prefix_reuse=True` (attention-only models with one MTP layer; others
    reuse nothing) keeps
    each call's trunk and MTP caches for the next call, as `Sampler` does: a
    prompt that shares r tokens with a kept row prefills from position r - 1
    (the MTP slot before r pairs hidden[r - 1] with token r, both shared; slot
    r - 1 needs hidden[r - 1], so it is recomputed). `last_call.reused` says
    how many positions each row took from the cache.
    """

    def __init__(
        self,
        model: CausalLM,
        tokenizer=None,
        *,
        k: int = 2,
        chunk: int = 32,
        cache_dtype=None,
        draft_vocab=None,
        prefix_reuse: bool = False,
    ):
        if getattr(model, "mtp", None) is None:
            raise ValueError("speculative decoding needs an MTP head")
        self.draft_ids = _draft_vocab(draft_vocab, model.config.vocab_size)
        self.hybrid = any(t != "full_attention" for t in model.config.layer_types)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        super().__init__(
            model,
            tokenizer,
            chunk=chunk,
            cache_dtype=cache_dtype,
            # a hybrid's DeltaNet state after a verify step is not one after a
            # prompt; MTP layers past the first hold draft-step values a fresh
            # prefill leaves empty: both reuse nothing
            prefix_reuse=prefix_reuse
            and not self.hybrid
            and len(model.mtp.layers) == 1,
        )
        self.k = k
        self.stats: SpecStats | None = None
        cfg = model.config
        n_mtp = self._n_mtp = len(model.mtp.layers)
        self._init_mtp_cache = lambda b, s, dt: [
            tuple(
                jnp.zeros((b, s, cfg.num_key_value_heads, cfg.head_dim), dt)
                for _ in "kv"
            )
            for _ in range(n_mtp)
        ]
        self._jit_spec_prefill = jax.jit(
            _prefill,
            static_argnames=("k", "max_new", "stop"),
            donate_argnames=("cache", "mtp_cache"),
        )
        self._jit_spec_suffix = jax.jit(  # (caches not donated: they change size)
            _prefill_suffix, static_argnames=("k", "max_new", "stop", "slots")
        )
        self._jit_verify = jax.jit(
            _verify_chunk,
            static_argnames=("k", "chunk", "slots", "stop", "hybrid"),
            donate_argnames=("state",),
        )

    def generate(
        self,
        prompts: list[list[int]],
        params: SamplingParams | None = None,
        *,
        on_chunk=None,
        **kw,
    ) -> list[Completion]:
        sp = dataclasses.replace(params or SamplingParams(), **kw)
        if sp.temperature != 0.0:
            raise NotImplementedError("speculative decoding is greedy only")
        if sp.stop_ids is None:
            stop = self.tokenizer.stop_ids if self.tokenizer is not None else ()
            sp = dataclasses.replace(sp, stop_ids=tuple(stop))
        if not prompts or any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        b = len(prompts)
        lengths = np.array([len(p) for p in prompts], np.int32)
        plen = _bucket(int(lengths.max()), 32)
        # room for the last verify step's k drafts past the final token
        slots = _bucket(plen + sp.max_new_tokens + self.k + 1, 64)
        pad = self.tokenizer.pad_id if self.tokenizer is not None else 0
        stop = tuple(sp.stop_ids)
        t0 = time.perf_counter()
        # one position short: MTP slot r - 1 needs hidden[r - 1] (class docstring)
        src, reuse = self._plan(prompts, lengths, plen, back=1)
        spec = dict(draft_ids=self.draft_ids, k=self.k, max_new=sp.max_new_tokens)
        if reuse.any():
            n_trunk = len(self._kept.cache) - self._n_mtp
            both = prefix.gather(
                self._kept.cache, jnp.asarray(src), jnp.asarray(reuse > 0), slots=plen
            )
            self._kept = None  # the new call's caches replace the kept ones
            tokens = _rows(
                prompts, reuse, _bucket(int((lengths - reuse).max()), 32), pad
            )
            state = self._jit_spec_suffix(
                self.graphdef,
                self.params,
                jnp.asarray(tokens),
                jnp.asarray(reuse),
                jnp.asarray(lengths),
                both[:n_trunk],
                both[n_trunk:],
                stop=stop,
                slots=slots,
                **spec,
            )
        else:
            self._kept = None
            tokens = _rows(prompts, reuse, plen, pad)
            state = self._jit_spec_prefill(
                self.graphdef,
                self.params,
                jnp.asarray(tokens),
                jnp.asarray(lengths),
                self._init_cache(b, slots, self.cache_dtype),
                self._init_mtp_cache(b, slots, self.cache_dtype),
                stop=stop,
                **spec,
            )
        state.done.block_until_ready()
        t1 = time.perf_counter()
        cut = [None] * b
        while True:
            state, host_done = self._poll(state, sp, cut, on_chunk)
            if host_done.all():
                break
            state = self._jit_verify(
                self.graphdef,
                self.params,
                state,
                draft_ids=self.draft_ids,
                k=self.k,
                chunk=self.chunk,
                slots=slots,
                stop=stop,
                hybrid=self.hybrid,
            )
        self._row_counts = (  # per row: accepted [B], verifies [B], per pos [B, k]
            np.asarray(state.accepted),
            np.asarray(state.verifies),
            np.asarray(state.accepted_per_pos),
            1 + int(state.iters),
        )
        self.stats = self.stats_of_rows(b)
        toks, counts = np.asarray(state.tokens), np.asarray(state.count)
        if self.prefix_reuse:  # trunk slots < pos hold prompt + tokens but the last
            both = list(state.cache) + list(state.mtp_cache)
            self._kept = prefix.keep(prompts, toks, counts, both, [None] * len(both))
        self._record_call(lengths, reuse, t0, t1)
        return self._completions(state, sp, cut)

    def stats_of_rows(self, rows: int) -> SpecStats:
        """The last call's totals over its first ``rows`` prompts only (a caller
        that padded its batch with filler rows leaves them out); trunk_forwards
        is the call's, shared by every row.

        Raises:
          ValueError: no `generate` call yet, or ``rows`` not in 1..B (the
            last call's batch size).
        """
        counts = getattr(self, "_row_counts", None)
        if counts is None:
            raise ValueError("stats_of_rows: no generate call yet, no stats to take")
        accepted, verifies, per_pos, forwards = counts
        b = len(accepted)
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)):
            raise ValueError(f"stats_of_rows: rows must be an integer, got {rows!r}")
        if not 1 <= rows <= b:
            raise ValueError(
                f"stats_of_rows: rows must be in 1..{b} (the last generate call's "
                f"batch), got {rows}"
            )
        v = int(verifies[:rows].sum())
        return SpecStats(
            proposed=self.k * v,
            accepted=int(accepted[:rows].sum()),
            row_verifies=v,
            trunk_forwards=forwards,
            accepted_per_pos=tuple(int(a) for a in per_pos[:rows].sum(axis=0)),
        )
