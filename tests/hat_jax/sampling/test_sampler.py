"""KV-cache decoding against full forwards (brute-force recomputation)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.models import build_model
from hat_jax.sampling import Sampler, SamplingParams, sample_token
from tests.tiny_configs import tiny_dense

CFG = tiny_dense()
PROMPTS = [[5, 17, 3, 9, 44, 2, 71], [8], [60, 61, 62, 63]]


@pytest.fixture(scope="module")
def model():
    return build_model(CFG, seed=3)


_forward = nnx.jit(lambda m, t, pos, cache: m.forward(t, pos, cache=cache))
_full = nnx.jit(lambda m, t: m(t))


def full_logits(model, seq):
    """Logits [T, V] of one sequence, no cache (the independent recomputation)."""
    return np.asarray(_full(model, jnp.asarray([seq])))[0]


def test_kv_cache_steps_equal_full_forward(model):
    """Prefill a padded batch of mixed lengths, then decode 6 steps one at a time."""
    rng = np.random.default_rng(0)
    b, plen, slots = len(PROMPTS), 8, 32
    tokens = np.zeros((b, plen), np.int32)
    for i, p in enumerate(PROMPTS):
        tokens[i, : len(p)] = p
    cache = model.init_cache(b, slots)
    positions = jnp.broadcast_to(jnp.arange(plen), (b, plen))
    out = _forward(model, jnp.asarray(tokens), positions, cache)
    seqs = [list(p) for p in PROMPTS]
    for i, p in enumerate(PROMPTS):  # prefill logits of real tokens
        np.testing.assert_allclose(
            np.asarray(out.logits[i, : len(p)]), full_logits(model, p), atol=1e-4
        )
    cache, pos = out.cache, np.array([len(p) for p in PROMPTS])
    for _ in range(6):
        nxt = rng.integers(0, CFG.vocab_size, size=b)
        out = _forward(
            model, jnp.asarray(nxt[:, None]), jnp.asarray(pos[:, None]), cache
        )
        cache = out.cache
        for i in range(b):
            seqs[i].append(int(nxt[i]))
            ref = full_logits(model, seqs[i])[-1]
            assert np.abs(np.asarray(out.logits[i, 0]) - ref).max() <= 1e-4
        pos = pos + 1


def brute_force_greedy(model, prompt, n):
    seq, logps = list(prompt), []
    for _ in range(n):
        logits = full_logits(model, seq)[-1]
        t = int(np.argmax(logits))
        logps.append(float(jax.nn.log_softmax(logits)[t]))
        seq.append(t)
    return seq[len(prompt) :], logps


def test_greedy_and_logprobs_equal_brute_force(model):
    out = Sampler(model, chunk=4).generate(PROMPTS, max_new_tokens=10, stop_ids=())
    for p, got in zip(PROMPTS, out):
        toks, logps = brute_force_greedy(model, p, 10)
        assert got.tokens == toks
        np.testing.assert_allclose(got.logprobs, logps, atol=1e-4)
        assert got.finish_reason == "length"


def test_stop_token_ends_row_only(model):
    ref = Sampler(model).generate(PROMPTS, max_new_tokens=10, stop_ids=())
    stop = ref[0].tokens[3]
    first = ref[0].tokens.index(stop)
    out = Sampler(model).generate(PROMPTS, max_new_tokens=10, stop_ids=(stop,))
    assert (
        out[0].tokens == ref[0].tokens[: first + 1] and out[0].finish_reason == "stop"
    )
    for r, o in zip(ref[1:], out[1:]):
        cut = r.tokens.index(stop) + 1 if stop in r.tokens else 10
        assert o.tokens == r.tokens[:cut]


def test_seeded_sampling_is_deterministic_and_top_k1_is_greedy(model):
    s = Sampler(model)
    sp = SamplingParams(max_new_tokens=12, temperature=1.0, seed=7, stop_ids=())
    a, b = s.generate(PROMPTS, sp), s.generate(PROMPTS, sp)
    assert [o.tokens for o in a] == [o.tokens for o in b]
    c = s.generate(PROMPTS, sp, seed=8)
    assert [o.tokens for o in a] != [o.tokens for o in c]
    greedy = s.generate(PROMPTS, max_new_tokens=12, stop_ids=())
    top1 = s.generate(PROMPTS, sp, top_k=1)
    assert [o.tokens for o in greedy] == [o.tokens for o in top1]


def test_top_k_and_top_p_support():
    logits = jnp.log(jnp.array([[0.5, 0.3, 0.15, 0.05]] * 2000))
    keys = jax.random.split(jax.random.key(0), 1)[0]
    k2 = np.asarray(sample_token(logits, keys, temperature=1.0, top_k=2, top_p=1.0))
    assert set(k2.tolist()) == {0, 1}
    p = np.asarray(sample_token(logits, keys, temperature=1.0, top_k=0, top_p=0.7))
    assert set(p.tolist()) == {0, 1}  # 0.5 < 0.7 <= 0.8: two tokens kept
    p = np.asarray(sample_token(logits, keys, temperature=1.0, top_k=0, top_p=0.5))
    assert set(p.tolist()) == {0}
    full = np.asarray(sample_token(logits, keys, temperature=1.0, top_k=0, top_p=1.0))
    freq = np.bincount(full, minlength=4) / len(full)
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.15, 0.05], atol=0.04)


def test_stop_strings_cut_text(smollm2, chat_prompts):
    m, _, tok = smollm2
    (out,) = Sampler(m, tok).generate(
        chat_prompts[:1], max_new_tokens=20, stop_strings=(" is",)
    )
    assert out.finish_reason == "stop" and out.text == "The capital of France"
    assert tok.decode(out.tokens).startswith("The capital of France is")
