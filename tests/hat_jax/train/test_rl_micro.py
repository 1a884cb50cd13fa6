"""HSA-RL step: logits at the gathered positions, micro-batching = full batch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.losses.sft import token_logprobs
from hat_jax.train.rl import jit_rl_step, num_micro_batches, rl_logprobs
from hat_jax.train.rl_batch import episode_from_tokens, episodes_to_batch
from hat_jax.train.state import init_state, make_optimizer
from tests.rl_helpers import random_batch, rl_config, tiny_model


def test_trained_pos_lists_each_rows_trained_positions():
    eps = [
        episode_from_tokens([1, 2, 3], [4, 5], [-1.0, -2.0], rewards={"r": 0}, group=0),
        episode_from_tokens([1], [6, 7, 8, 9], [-1.0] * 4, rewards={"r": 1}, group=0),
    ]
    b = episodes_to_batch(eps, pad_to=8, pad_trained=6)
    assert b["trained_pos"].shape == (2, 6)
    for i in range(2):
        want = np.flatnonzero(b["segments"][i] > 0)
        np.testing.assert_array_equal(b["trained_pos"][i, : len(want)], want)
        assert (b["trained_pos"][i, len(want) :] == -1).all()
    assert episodes_to_batch(eps, pad_to=8)["trained_pos"].shape == (2, 4)
    with pytest.raises(ValueError, match="pad_trained=3"):
        episodes_to_batch(eps, pad_to=8, pad_trained=3)


def test_logprobs_at_gathered_positions_equal_the_full_forward():
    model = tiny_model()
    batch = random_batch(64, seed=1)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    logp = rl_logprobs(params, rest, batch, graphdef=graphdef)  # [B, K]
    logits = model(batch["inputs"], batch["positions"], batch["attn"])  # [B, T, V]
    full = token_logprobs(logits=logits, targets=jnp.asarray(batch["targets"]))
    pos = batch["trained_pos"]
    want = np.where(pos >= 0, np.take_along_axis(np.asarray(full), pos, 1), 0.0)
    assert (pos >= 0).sum() > 0
    np.testing.assert_allclose(np.asarray(logp), want, atol=1e-5)


def test_micro_batch_must_divide_the_batch():
    assert num_micro_batches(12, None) == num_micro_batches(12, 0) == 1
    assert num_micro_batches(12, 3) == 4 and num_micro_batches(12, 12) == 1
    with pytest.raises(ValueError, match="does not divide"):
        num_micro_batches(12, 5)
    with pytest.raises(ValueError, match=">= 0"):
        num_micro_batches(12, -1)


def _run(cfg, batches):
    # Adam with a large eps is nearly SGD, so the params compare the gradients
    # (with eps 1e-8 Adam maps rounding-level grads to +-lr updates).
    cfg.optim.eps, cfg.optim.lr = 1.0, 0.3
    graphdef, state = init_state(tiny_model(), make_optimizer(cfg.optim), seed=0)
    ref = jax.tree.map(lambda x: jnp.asarray(np.asarray(x) * 0.9), state.params)
    step = jit_rl_step(graphdef, cfg)
    m = {}
    for s, batch in enumerate(batches):
        state, m = step(state, batch, jax.random.key(s), ref)
    return jax.tree.map(np.asarray, state.params), jax.device_get(m)


@pytest.mark.parametrize(
    "rl",
    [
        {"ratio": "token", "kl_coef": 0.1, "inner_steps": 2, "old_logp": "trainer"},
        {"ratio": "sequence", "kl_coef": 0.5, "aggregation": "seq-mean-token-mean"},
    ],
)
def test_micro_batched_update_equals_the_full_batch_update(rl):
    # 2 groups of 3: micro-batches of 2 cut through the groups (advantages come
    # from the whole batch first).
    batches = [random_batch(64, n=2, g=3, seed=s) for s in range(2)]
    full, mf = _run(rl_config(**rl, micro_batch=None), batches)
    split, ms = _run(rl_config(**rl, micro_batch=2), batches)
    diffs = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(a - b).max(), full, split))
    assert max(diffs) <= 1e-5, max(diffs)
    init = _run(rl_config(**rl), [])[0]
    moved = jax.tree.map(lambda a, b: np.abs(a - b).max(), full, init)
    assert max(jax.tree.leaves(moved)) > 1e-3  # far above the tolerance
    for k in ("train/loss", "rl/pg_loss", "rl/kl", "rl/ratio_mean", "train/grad_norm"):
        np.testing.assert_allclose(mf[k], ms[k], rtol=1e-4, atol=1e-6, err_msg=k)
    assert mf["rl/kl"] > 0  # the reference differs, so the KL term is exercised
