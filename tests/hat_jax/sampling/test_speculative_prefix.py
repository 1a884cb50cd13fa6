"""Prefix reuse in MTP speculative decoding against a fresh prefill of every
prompt: the same greedy tokens, the same acceptance counts, trunk and MTP caches
equal to a fresh prefill's slot for slot, and the reused counts promised."""

import numpy as np
import pytest

from hat_jax.models import build_model
from hat_jax.sampling import SamplingParams, SpeculativeSampler
from tests.hat_jax.sampling.test_speculative import CFG, _drafter_model
from tests.tiny_configs import tiny_dense, tiny_hybrid

SP = SamplingParams(max_new_tokens=12, stop_ids=())


def _turn(rng, sampler):
    """Two calls of an agent's turn: three prompts, then each continued (one
    reordered, one new) with the generated tokens and a tool result."""
    first = [list(rng.integers(3, 100, n)) for n in (20, 7, 31)]
    out = sampler.generate(first, SP)
    second = [
        first[2] + out[2].tokens + [5, 6, 7],
        [100] + list(rng.integers(3, 100, 20)),  # shares nothing
        first[0] + out[0].tokens + list(rng.integers(3, 100, 10)),
        # every fed token, then not the last output (the kept MTP slot before
        # it paired the last output: stale here)
        first[1] + out[1].tokens[:-1] + [1 + out[1].tokens[-1] % 99, 8, 9],
    ]
    return first, out, second


@pytest.mark.parametrize("drafter", [True, False])
@pytest.mark.parametrize("k", [1, 2])
def test_a_turn_of_calls_equals_fresh_prefills(k, drafter):
    # the drafter's drafts are often right (rows advance unevenly) but read only
    # the next token; an untrained head's read the MTP cache (a stale slot shows)
    model = _drafter_model(0.4) if drafter else build_model(CFG, seed=5)
    reuse = SpeculativeSampler(model, k=k, prefix_reuse=True)
    fresh = SpeculativeSampler(model, k=k)
    first, out, second = _turn(np.random.default_rng(0), reuse)
    assert [c.tokens for c in out] == [c.tokens for c in fresh.generate(first, SP)]
    assert reuse.last_call.reused == (0, 0, 0)
    got, want = reuse.generate(second, SP), fresh.generate(second, SP)
    assert [c.tokens for c in got] == [c.tokens for c in want]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)
    # each continued row: every fed token (its prompt and all outputs but the
    # last) shared, one less taken from the cache (the MTP slot before it)
    assert reuse.last_call.reused == (
        31 + len(out[2].tokens) - 1 - 1,
        0,
        20 + len(out[0].tokens) - 1 - 1,
        7 + len(out[1].tokens) - 1 - 1,
    )
    # the drafts came from the reused MTP cache: same acceptance as fresh
    assert reuse.stats == fresh.stats
    assert reuse.stats.accepted > 0 or not drafter


@pytest.mark.parametrize("k", [1, 3])
def test_reused_caches_equal_a_fresh_prefill_slot_for_slot(k):
    """After a suffix prefill (one new token: no verify step runs), the kept
    trunk and MTP caches hold what a fresh prefill of the whole prompt holds,
    the first drafts' recursive MTP steps included (slots n .. n + k - 2; a
    64-token prompt fills its padded length, so they lie past it)."""
    model = build_model(CFG, seed=5)  # an untrained MTP head: any wrong slot shows
    one = SamplingParams(max_new_tokens=1, stop_ids=())
    reuse = SpeculativeSampler(model, k=k, prefix_reuse=True)
    fresh = SpeculativeSampler(model, k=k, prefix_reuse=True)
    first, out, second = _turn(np.random.default_rng(1), reuse)
    second[1] = first[2] + out[2].tokens + [7] * (64 - 31 - len(out[2].tokens))
    reuse.generate(second, one)
    assert sum(reuse.last_call.reused) > 0
    fresh.generate(second, one)
    assert sum(fresh.last_call.reused) == 0
    assert len(second[1]) == 64 and reuse.last_call.reused[1] > 0
    n_trunk = len(reuse._kept.cache) - reuse._n_mtp
    for row, prompt in enumerate(second):
        for i, (a, b) in enumerate(zip(reuse._kept.cache, fresh._kept.cache)):
            which = "trunk" if i < n_trunk else "mtp"
            n = len(prompt) + (k - 1 if which == "mtp" else 0)
            for x, y in zip(a, b):  # (k, v)
                np.testing.assert_allclose(
                    np.asarray(x[row, :n]), np.asarray(y[row, :n]), atol=1e-5,
                    err_msg=f"{which} cache {i}, row {row}",
                )  # fmt: skip


def test_several_mtp_layers_reuse_nothing():
    """MTP layers past the first are written by draft steps only: a fresh
    prefill leaves them empty where a kept cache holds the last call's."""
    model = build_model(tiny_dense(vocab_size=101, mtp_num_hidden_layers=2), seed=1)
    assert not SpeculativeSampler(model, k=2, prefix_reuse=True).prefix_reuse


def test_a_hybrid_model_reuses_nothing():
    """The verify step's DeltaNet state is the one after the emitted tokens, not
    after a prompt: no kept state fits the next call, so nothing is reused."""
    model = build_model(tiny_hybrid(mtp_num_hidden_layers=1), seed=1)
    spec = SpeculativeSampler(model, k=1, prefix_reuse=True)
    assert not spec.prefix_reuse
    _, _, second = _turn(np.random.default_rng(2), spec)
    spec.generate(second, SP)
    assert sum(spec.last_call.reused) == 0
