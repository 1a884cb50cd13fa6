"""The MTP loss in HSA-RL: its value against a brute-force recomputation through
`mtp_logits` (every position's logits, NumPy log-softmax), micro-batching, and
which params it trains."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from hat_jax.models import ModelConfig, build_model, mtp_logits
from hat_jax.train.build import trainable_filter
from hat_jax.train.rl import jit_rl_step
from hat_jax.train.rl_batch import episode_from_tokens, episodes_to_batch
from hat_jax.train.state import init_state, make_optimizer
from tests.rl_helpers import rl_config

V = 48
CFG = ModelConfig(
    model_type="qwen3",
    vocab_size=V,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    mtp_num_hidden_layers=1,
)


def _config(mtp_weight: float, micro_batch: int = 0) -> ml_collections.ConfigDict:
    c = rl_config(
        reward_names=("r",),
        advantage="grpo",
        segment_rewards={"tool": {"r": 1.0}, "reply": {"r": 1.0}},
        micro_batch=micro_batch,
    )
    # a frozen head must not shrink (weight decay on), no clipping
    c.optim.update({"weight_decay": 0.1, "total_steps": 100, "clip_norm": 1e9})
    c.mtp_weight = mtp_weight
    return c


def _batch(seed: int = 0, n: int = 8, t: int = 20) -> dict:
    rng = np.random.default_rng(seed)
    eps = []
    for i in range(n):
        p, s = int(rng.integers(1, 6)), int(rng.integers(2, 9))
        eps.append(
            episode_from_tokens(
                rng.integers(0, V, p),
                rng.integers(0, V, s),
                -rng.random(s) * 3,
                rewards={"r": float(rng.random())},
                group=i // 4,
                segment=1 + i % 2,
            )
        )
    return episodes_to_batch(eps, pad_to=t, reward_names=("r",))


def _brute_force_mtp_ce(model, batch) -> float:
    """Mean over trained tokens at t >= 1 of -log p_mtp(targets[t] | position t - 1)."""
    inputs, positions = jnp.asarray(batch["inputs"]), jnp.asarray(batch["positions"])
    attn = np.asarray(batch["attn"]).astype(bool)
    hidden, _, _ = model.hidden_states(inputs, positions, jnp.asarray(attn))
    t = inputs.shape[1]
    allowed = np.tril(np.ones((t, t), bool))[None] & attn[:, None, :]
    logits = np.asarray(
        mtp_logits(model, hidden, inputs, positions, allowed=jnp.asarray(allowed)),
        np.float64,
    )
    logp = logits - logits.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    seg, tgt = np.asarray(batch["segments"]), np.asarray(batch["targets"])
    terms = [
        -logp[b, j - 1, tgt[b, j]]
        for b in range(seg.shape[0])
        for j in range(1, seg.shape[1])
        if seg[b, j] > 0
    ]
    return float(np.mean(terms))


def _step(cfg, batch, seed=0):
    model = build_model(CFG, seed=seed)
    graphdef, state = init_state(
        model, make_optimizer(cfg.optim), seed=0, trainable=trainable_filter(cfg, model)
    )
    ref = jax.tree.map(jnp.copy, state.params)
    before = jax.tree.map(np.asarray, (state.params, state.frozen))
    new, m = jit_rl_step(graphdef, cfg)(state, batch, jax.random.key(0), ref)
    return model, before, new, jax.device_get(m)


@pytest.mark.parametrize("micro_batch", [0, 2])
def test_mtp_term_equals_brute_force(micro_batch):
    batch = _batch()
    w = 0.7
    model, _, _, m0 = _step(_config(0.0, micro_batch), batch)
    _, _, _, m1 = _step(_config(w, micro_batch), batch)
    ce = _brute_force_mtp_ce(model, batch)
    assert "rl/mtp_ce" not in m0
    np.testing.assert_allclose(m1["rl/mtp_ce"], ce, rtol=1e-5)
    np.testing.assert_allclose(m1["train/loss"] - m0["train/loss"], w * ce, rtol=1e-4)
    assert 0.0 <= m1["rl/mtp_accuracy"] <= 1.0
    np.testing.assert_allclose(m1["rl/pg_loss"], m0["rl/pg_loss"], rtol=1e-6)


def test_head_trains_only_with_a_weight():
    batch = _batch(seed=1)

    def head_moved(before, new) -> float:
        params, frozen = before
        old = {**_flat(params), **_flat(frozen)}
        now = {**_flat(new.params), **_flat(new.frozen)}
        return max(np.abs(old[k] - now[k]).max() for k in old if "mtp" in k)

    _, before, new, _ = _step(_config(0.0), batch)
    assert head_moved(before, new) == 0.0  # frozen: no gradient, no weight decay
    _, before, new, _ = _step(_config(0.5), batch)
    assert head_moved(before, new) > 0.0


def _flat(tree) -> dict[str, np.ndarray]:
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in leaves}
