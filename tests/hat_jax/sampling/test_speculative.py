"""MTP self-speculative decoding: the plain sampler's greedy tokens, honest stats."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.models import build_model
from hat_jax.sampling import Sampler, SamplingParams, SpeculativeSampler
from tests.tiny_configs import tiny_dense, tiny_hybrid

V = 101
CFG = tiny_dense(vocab_size=V, mtp_num_hidden_layers=1)
_rng = np.random.default_rng(0)
PROMPTS = [_rng.integers(1, V, size=_rng.integers(1, 30)).tolist() for _ in range(20)]
NEW = 20


def _drafter_model(trunk_scale: float, seed: int = 3):
    """A model whose MTP head guesses the trunk's token-only (bigram) prediction.

    The MTP layer adds nothing (zero o_proj and down_proj) and `fc` passes the
    normed embedding through, so the head's logits are norm(embed(next)) @ head:
    exactly the trunk's greedy next token when the trunk's layers are also
    silenced (`trunk_scale=0`, a perfect drafter), and often when they are
    scaled down (partial acceptance: rows advance by different amounts).
    """
    model = build_model(CFG, seed=seed)
    for layer in model.layers:
        layer.self_attn.o_proj.kernel[...] *= trunk_scale
        layer.mlp.down_proj.kernel[...] *= trunk_scale
    mtp = model.mtp
    mtp.layers[0].self_attn.o_proj.kernel[...] *= 0.0
    mtp.layers[0].mlp.down_proj.kernel[...] *= 0.0
    d = CFG.hidden_size
    mtp.fc.kernel[...] = jnp.concatenate([jnp.eye(d), jnp.zeros((d, d))], axis=0)
    return model


@pytest.fixture(scope="module")
def partial_model():
    return _drafter_model(0.4)


@pytest.fixture(scope="module")
def reference(partial_model):
    sp = SamplingParams(max_new_tokens=NEW, stop_ids=())
    return [c.tokens for c in Sampler(partial_model).generate(PROMPTS, sp)]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_greedy_tokens_equal_plain_decoding(partial_model, reference, k):
    spec = SpeculativeSampler(partial_model, k=k)
    out = spec.generate(PROMPTS, max_new_tokens=NEW, stop_ids=())
    assert [c.tokens for c in out] == reference
    assert all(c.finish_reason == "length" for c in out)
    s = spec.stats
    assert s.proposed == k * s.row_verifies and 0 < s.accepted < s.proposed
    # every row emits NEW tokens: 1 from the prefill, the rest from verify steps
    assert s.row_verifies + s.accepted >= len(PROMPTS) * (NEW - 1)
    assert s.trunk_forwards < NEW  # fewer trunk calls than plain decoding
    assert 1.0 < s.mean_accepted_length <= k + 1
    # vLLM's per-position counts: prefix acceptance, one draft per row step
    per_pos = s.accepted_per_pos
    assert len(per_pos) == k and sum(per_pos) == s.accepted
    assert s.num_drafts >= per_pos[0] and list(per_pos) == sorted(per_pos)[::-1]
    assert s.mean_accepted_length == pytest.approx(1 + sum(s.acceptance_per_position))


def test_accepted_per_position_equals_a_recount_of_the_drafts(partial_model):
    """Each verify step's drafts (read off the state before the step, one step
    per jitted call) against the plain greedy decode: the longest matching
    prefix n of each live row, counted at positions 0..n-1, gives the sampler's
    per-position totals."""
    k = 3
    sp = SamplingParams(max_new_tokens=NEW + k, stop_ids=())
    greedy = [c.tokens for c in Sampler(partial_model).generate(PROMPTS, sp)]
    spec = SpeculativeSampler(partial_model, k=k, chunk=1)
    seen = []  # (drafts [B, k], tokens emitted [B], done [B]) before each step
    verify = spec._jit_verify

    def recording(graphdef, params, state, **kw):
        seen.append(tuple(np.array(x) for x in (state.drafts, state.count, state.done)))
        return verify(graphdef, params, state, **kw)

    spec._jit_verify = recording
    out = spec.generate(PROMPTS, max_new_tokens=NEW, stop_ids=())
    assert [c.tokens for c in out] == [g[:NEW] for g in greedy]
    want, drafts = np.zeros(k, int), 0
    first = np.zeros(k, int)  # row 0 alone: what a caller that padded keeps
    for d, count, done in seen:
        for row in np.flatnonzero(~done):
            truth = greedy[row][count[row] : count[row] + k]  # the trunk's tokens
            n = next((i for i in range(k) if d[row, i] != truth[i]), k)
            want[:n] += 1
            first[:n] += row == 0
            drafts += 1
    s = spec.stats
    assert s.num_drafts == s.row_verifies == drafts
    assert list(s.accepted_per_pos) == want.tolist()
    assert 0 < want[-1] < want[0] < drafts  # partial acceptance at every position
    assert s.acceptance_per_position == tuple(want / drafts)
    assert spec.stats_of_rows(len(PROMPTS)) == s
    assert (
        list(spec.stats_of_rows(1).accepted_per_pos)
        == first.tolist()
        != list(s.accepted_per_pos)
    )


def test_stop_tokens_cut_accepted_blocks(partial_model, reference):
    """A stop token inside an accepted block ends the row there, as plain does."""
    stop = max(
        set(sum(reference, [])), key=lambda t: sum(t in r[1:] for r in reference)
    )
    sp = SamplingParams(max_new_tokens=NEW, stop_ids=(stop,))
    plain = Sampler(partial_model).generate(PROMPTS, sp)
    spec = SpeculativeSampler(partial_model, k=3).generate(PROMPTS, sp)
    assert [c.tokens for c in spec] == [c.tokens for c in plain]
    assert [c.finish_reason for c in spec] == [c.finish_reason for c in plain]
    assert any(c.finish_reason == "stop" for c in spec)
    for a, b in zip(spec, plain):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


def test_perfect_drafter_accepts_everything():
    model = _drafter_model(0.0)
    sp = SamplingParams(max_new_tokens=NEW, stop_ids=())
    plain = Sampler(model).generate(PROMPTS[:6], sp)
    spec = SpeculativeSampler(model, k=3)
    out = spec.generate(PROMPTS[:6], sp)
    assert [c.tokens for c in out] == [c.tokens for c in plain]
    assert spec.stats.acceptance_rate == 1.0
    assert spec.stats.mean_accepted_length == 4.0
    assert spec.stats.accepted_per_pos == (spec.stats.num_drafts,) * 3
    assert spec.stats.acceptance_per_position == (1.0, 1.0, 1.0)
    assert spec.stats.trunk_forwards == 1 + -(-(NEW - 1) // 4)


def test_random_head_accepts_little():
    model = build_model(CFG, seed=3)
    spec = SpeculativeSampler(model, k=2)
    out = spec.generate(PROMPTS[:6], max_new_tokens=NEW, stop_ids=())
    plain = Sampler(model).generate(PROMPTS[:6], max_new_tokens=NEW, stop_ids=())
    assert [c.tokens for c in out] == [c.tokens for c in plain]
    assert spec.stats.accepted <= spec.stats.proposed
    assert spec.stats.acceptance_rate < 0.2
    assert sum(spec.stats.accepted_per_pos) == spec.stats.accepted


def test_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="MTP head"):
        SpeculativeSampler(build_model(CFG.replace(mtp_num_hidden_layers=0)))
    with pytest.raises(NotImplementedError, match="greedy only"):
        SpeculativeSampler(build_model(CFG)).generate([[1, 2]], temperature=1.0)


def test_stats_of_rows_needs_a_call_and_rows_of_its_batch(partial_model):
    spec = SpeculativeSampler(partial_model, k=2)
    with pytest.raises(ValueError, match="no generate call yet"):
        spec.stats_of_rows(1)
    spec.generate([[1, 2, 3], [4, 5]], max_new_tokens=4, stop_ids=())
    assert spec.stats_of_rows(2) == spec.stats
    assert spec.stats_of_rows(1).num_drafts <= spec.stats.num_drafts
    for rows in (0, 3, -1):
        with pytest.raises(ValueError, match=rf"in 1\.\.2 .*batch\), got {rows}"):
            spec.stats_of_rows(rows)
    with pytest.raises(ValueError, match="must be an integer"):
        spec.stats_of_rows(1.5)


def test_prefill_drafts_equal_attention_over_cache_slots():
    """The prefill's MTP pass (fused attention over the prompt) against the same
    pass attending over every MTP cache slot: same drafts, same MTP cache."""
    from hat_jax.sampling.speculative import _draft

    model = build_model(CFG, seed=5)
    lengths = np.array([9, 3, 16])
    b, p, slots = len(lengths), 16, 40
    rng = np.random.default_rng(1)
    tokens = jnp.asarray(rng.integers(1, V, (b, p)), jnp.int32)
    positions = jnp.broadcast_to(jnp.arange(p, dtype=jnp.int32), (b, p))
    hidden, _, _ = model.hidden_states(tokens, positions, positions < lengths[:, None])
    nxt = jnp.concatenate([tokens[:, 1:], tokens[:, :1]], axis=1)
    at = jnp.asarray(lengths - 1)
    out = []
    for prefill in (False, True):
        cache = [tuple(jnp.zeros((b, slots, 2, 16)) for _ in "kv")]
        out.append(_draft(model, hidden, nxt, positions, at, cache, 3, prefill=prefill))
    (d0, c0), (d1, c1) = out
    np.testing.assert_array_equal(d1, d0)
    for a, b_ in zip(c0[0], c1[0], strict=True):
        for i, n in enumerate(lengths):  # the real positions (and the drafts' slots)
            np.testing.assert_allclose(b_[i, : n + 2], a[i, : n + 2], atol=2e-5)


HYBRID = tiny_hybrid(
    vocab_size=V,
    num_hidden_layers=3,
    layer_types=["linear_attention", "full_attention", "linear_attention"],
    mtp_num_hidden_layers=1,
)


def _hybrid_drafter(trunk_scale: float):
    """`_drafter_model` for the hybrid: scaled-down mixers and MoE outputs, an MTP
    layer that adds nothing and an fc that passes the normed embedding through."""
    model = build_model(HYBRID, seed=4)

    def quiet(layer, scale):
        mixer = getattr(layer, layer.mixer)
        out = mixer.o_proj if layer.mixer == "self_attn" else mixer.out_proj
        out.kernel[...] *= scale
        layer.mlp.down_proj[...] *= scale
        layer.mlp.shared_expert.down_proj.kernel[...] *= scale

    for layer in model.layers:
        quiet(layer, trunk_scale)
    quiet(model.mtp.layers[0], 0.0)
    d = HYBRID.hidden_size
    model.mtp.fc.kernel[...] = jnp.concatenate([jnp.eye(d), jnp.zeros((d, d))], axis=0)
    return model


@pytest.mark.parametrize("k", [1, 3])
def test_hybrid_greedy_tokens_equal_plain_decoding(k):
    """Gated DeltaNet states roll back to each row's accepted prefix: the greedy
    tokens are the plain sampler's on 20 prompts, with partial acceptance."""
    model = _hybrid_drafter(0.4)
    sp = SamplingParams(max_new_tokens=NEW, stop_ids=())
    plain = [c.tokens for c in Sampler(model).generate(PROMPTS, sp)]
    spec = SpeculativeSampler(model, k=k)
    out = spec.generate(PROMPTS, sp)
    assert [c.tokens for c in out] == plain
    s = spec.stats
    assert 0 < s.accepted < s.proposed  # rows advance by different amounts
    assert s.trunk_forwards < NEW
    assert len(s.accepted_per_pos) == k and sum(s.accepted_per_pos) == s.accepted
    assert list(s.accepted_per_pos) == sorted(s.accepted_per_pos)[::-1]


def test_keep_states_selects_the_state_after_each_prefix():
    """`hidden_states(keep_states=True)` then `select_state(n)` equals the cache
    of a run over the first n tokens alone (DeltaNet conv and recurrent state)."""
    from hat_jax.models.gated_deltanet import GDNState, select_state

    model = build_model(HYBRID, seed=2)
    rng = np.random.default_rng(3)
    b, p, t = 2, 5, 3
    prompt = jnp.asarray(rng.integers(1, V, (b, p)), jnp.int32)
    new = jnp.asarray(rng.integers(1, V, (b, t)), jnp.int32)
    pos = jnp.broadcast_to(jnp.arange(p + t, dtype=jnp.int32), (b, p + t))
    run = nnx.jit(  # jitted: op by op, the hybrid took ~40 s here
        lambda m, x, at, c, keep=False: m.hidden_states(
            x, at, cache=c, keep_states=keep
        ),
        static_argnames="keep",
    )
    _, cache, _ = run(model, prompt, pos[:, :p], model.init_cache(b, 16))
    _, kept, _ = run(model, new, pos[:, p:], cache, keep=True)
    n = jnp.asarray([0, 2])  # nothing kept, a partial prefix (t: all, in the
    # hybrid greedy test above)
    picked = [select_state(c, n) if isinstance(c, GDNState) else None for c in kept]
    for row, m in enumerate(np.asarray(n).tolist()):
        ref = [jax.tree.map(lambda x, r=row: x[r : r + 1], c) for c in cache]
        if m:  # the first m new tokens alone, from the same cache
            _, ref, _ = run(
                model, new[row : row + 1, :m], pos[row : row + 1, p : p + m], ref
            )
        for got, want in zip(picked, ref, strict=True):
            if got is None:  # a KV layer: slot = position, nothing to roll back
                continue
            np.testing.assert_allclose(got.conv[row], want.conv[0], atol=1e-6)
            np.testing.assert_allclose(got.recurrent[row], want.recurrent[0], atol=1e-5)


def test_pruned_draft_vocabulary_keeps_greedy_and_drafts_inside_it(
    partial_model, reference
):
    """Drafts over a subset of the head's rows: the output is still the plain
    greedy decode; the whole vocabulary as the subset changes nothing; a subset
    without the tokens the full head drafts accepts less."""
    full = SpeculativeSampler(partial_model, k=2)
    out = full.generate(PROMPTS, max_new_tokens=NEW, stop_ids=())
    whole = SpeculativeSampler(partial_model, k=2, draft_vocab=np.arange(V)[::-1])
    same = whole.generate(PROMPTS, max_new_tokens=NEW, stop_ids=())
    assert [c.tokens for c in same] == [c.tokens for c in out] == reference
    assert whole.stats == full.stats
    emitted = sorted({t for r in reference for t in r})
    rest = [t for t in range(V) if t not in emitted[: len(emitted) // 2]]
    pruned = SpeculativeSampler(partial_model, k=2, draft_vocab=rest, chunk=1)
    drafts = []
    verify = pruned._jit_verify

    def recording(graphdef, params, state, **kw):
        drafts.append(np.array(state.drafts))
        return verify(graphdef, params, state, **kw)

    pruned._jit_verify = recording
    got = pruned.generate(PROMPTS, max_new_tokens=NEW, stop_ids=())
    assert [c.tokens for c in got] == reference
    assert set(np.concatenate(drafts).ravel().tolist()) <= set(rest)
    assert pruned.stats.accepted < full.stats.accepted


@pytest.mark.parametrize("bad", [[], [0, V], [-1, 2], [[1, 2]], [0.5, 1.0]])
def test_draft_vocabulary_refuses_ids_it_cannot_use(partial_model, bad):
    with pytest.raises(ValueError, match="draft_vocab"):
        SpeculativeSampler(partial_model, draft_vocab=bad)


@pytest.mark.parametrize("tied", [False, True])
def test_pruned_draft_token_is_the_argmax_of_the_full_logits_over_the_subset(tied):
    from hat_jax.sampling.speculative import _draft_token

    model = build_model(CFG.replace(tie_word_embeddings=tied), seed=1)
    assert (model.lm_head is None) == tied
    x = jax.random.normal(jax.random.key(0), (4, 1, CFG.hidden_size))
    ids = jnp.asarray(np.random.default_rng(1).choice(V, 30, replace=False), jnp.int32)
    full = np.asarray(model.logits(x))[:, 0]  # [4, V]
    want = np.asarray(ids)[np.argmax(full[:, np.asarray(ids)], axis=-1)]
    got = np.asarray(_draft_token(model, x, ids))[:, 0]
    assert got.tolist() == want.tolist()
    assert got.tolist() != np.argmax(full, -1).tolist()  # the subset mattered
