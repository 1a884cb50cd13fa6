"""Prefix reuse across `Sampler.generate` calls against a fresh prefill of every
prompt (the independent recomputation): same greedy tokens, same log-probs, and
exactly the reused token counts `hat_jax.sampling.prefix` promises."""

import numpy as np
import pytest

from hat_jax.models import build_model
from hat_jax.sampling import Sampler, SamplingParams
from hat_jax.sampling.prefix import Kept, common_prefix, plan
from tests.tiny_configs import tiny_dense, tiny_hybrid

SP = SamplingParams(max_new_tokens=9, stop_ids=(2,))
CONFIGS = {"qwen3": tiny_dense(), "qwen3_5_moe": tiny_hybrid()}


def _prompts(rng, *lengths):
    return [list(rng.integers(3, 100, n)) for n in lengths]


def _same(reused, fresh):
    assert [c.tokens for c in reused] == [c.tokens for c in fresh]
    for a, b in zip(reused, fresh):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


@pytest.fixture(scope="module", params=list(CONFIGS))
def pair(request):
    """(model kind, a reusing sampler, a fresh sampler) over one model."""
    model = build_model(CONFIGS[request.param], seed=1)
    return request.param, Sampler(model, prefix_reuse=True), Sampler(model)


def test_a_turn_of_calls_equals_fresh_prefills(pair):
    kind, reuse, fresh = pair
    rng = np.random.default_rng(0)
    first = _prompts(rng, 20, 7, 31)
    out = reuse.generate(first, SP)
    _same(out, fresh.generate(first, SP))
    assert reuse.last_call.reused_tokens == 0
    # Next call: rows reordered, one dropped, one new; each continues its
    # conversation with the generated tokens and a tool result.
    new = [100] + list(rng.integers(3, 100, 20))  # token 100: shares nothing
    second = [
        first[2] + out[2].tokens + [5, 6, 7],
        new,
        first[0] + out[0].tokens + list(rng.integers(3, 100, 10)),
    ]
    _same(reuse.generate(second, SP), fresh.generate(second, SP))
    if kind == "qwen3":  # every fed token: the prompt and all but the last output
        expected = (31 + len(out[2].tokens) - 1) + (20 + len(out[0].tokens) - 1)
    else:  # the DeltaNet state exists only after each kept prompt
        expected = 31 + 20
    assert reuse.last_call.reused_tokens == expected
    assert reuse.last_call.prompt_tokens == sum(map(len, second))


def test_a_call_whose_suffix_would_cost_more_runs_fresh(pair):
    """The batch's longest suffix (a new row) is more than half the padded prompt:
    prefilling it over every slot would cost more than a fresh prefill."""
    _, reuse, fresh = pair
    rng = np.random.default_rng(1)
    first = _prompts(rng, 40)
    out = reuse.generate(first, SP)
    fresh.generate(first, SP)
    second = [first[0] + out[0].tokens + [7, 8], [100] + list(rng.integers(3, 100, 79))]
    _same(reuse.generate(second, SP), fresh.generate(second, SP))
    assert reuse.last_call.reused_tokens == 0  # 80 new tokens > 128 / 2
    third = [second[1] + [5, 6], second[0] + [9] * 10]  # both continue: reused
    _same(reuse.generate(third, SP), fresh.generate(third, SP))
    assert reuse.last_call.reused_tokens > 0


def test_a_long_suffix_runs_the_fused_kernel_over_the_cache():
    """A suffix of >= FUSED_MIN_QUERIES queries over the cached slots (the fused
    kernel over all slots; its blocks: test_attention_ops) against fresh prefills."""
    model = build_model(CONFIGS["qwen3"], seed=3)
    sampler, fresh = Sampler(model, prefix_reuse=True), Sampler(model)
    rng = np.random.default_rng(4)
    first = _prompts(rng, 150, 90)
    out = sampler.generate(first, SP)
    second = [first[0] + out[0].tokens + list(rng.integers(3, 100, 70)), first[1]]
    _same(sampler.generate(second, SP), fresh.generate(second, SP))
    assert sampler.last_call.reused == (150 + len(out[0].tokens) - 1, 89)


def test_rows_that_stop_at_different_steps(pair):
    """A stop token the model emits: rows finish early and keep feeding pad at
    their last slot while the others decode; the kept KV must stop before it."""
    _, reuse, fresh = pair
    rng = np.random.default_rng(5)
    first = _prompts(rng, 30, 18, 25)
    free = fresh.generate(first, SamplingParams(max_new_tokens=9, stop_ids=()))
    stop = (free[1].tokens[2],)  # row 1 stops at its third token
    sp = SamplingParams(max_new_tokens=9, stop_ids=stop)
    out = reuse.generate(first, sp)
    _same(out, fresh.generate(first, sp))
    assert len(out[1].tokens) == 3 and any(len(c.tokens) > 3 for c in out)
    second = [p + c.tokens + [4, 5] for p, c in zip(first, out)]
    _same(reuse.generate(second, sp), fresh.generate(second, sp))
    assert reuse.last_call.reused_tokens > 0


def test_new_weights_drop_the_kept_cache():
    model = build_model(CONFIGS["qwen3"], seed=1)
    sampler = Sampler(model, prefix_reuse=True)
    prompts = _prompts(np.random.default_rng(2), 12)
    sampler.generate(prompts, SP)
    sampler.update_params(build_model(CONFIGS["qwen3"], seed=5))
    out = sampler.generate(prompts, SP)
    assert sampler.last_call.reused_tokens == 0
    want = Sampler(build_model(CONFIGS["qwen3"], seed=5)).generate(prompts, SP)
    _same(out, want)


def test_plan_picks_the_longest_prefix_and_leaves_one_token():
    fed = [np.array([1, 2, 3, 4, 5]), np.array([1, 2, 9])]
    kept_kv = Kept(fed, np.array([3, 2]), cache=[])
    src, reuse = plan([[1, 2, 3, 4, 5, 6], [1, 2, 9, 9], [1, 2, 3, 4, 5], [7]], kept_kv)
    assert src.tolist()[:3] == [0, 1, 0]
    assert reuse.tolist() == [5, 3, 4, 0]  # a prompt equal to a kept row: len - 1
    assert common_prefix(np.array([1, 2]), np.array([1, 2, 3])) == 2
