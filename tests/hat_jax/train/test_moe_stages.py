"""Every stage trains the MoE load-balancing loss and logs it (train/moe_aux_loss).

SFT's step is checked against transformers in tests/hat_jax/models/test_moe_aux.py;
here OPD's and RL's steps report the loss a brute-force forward over the batch's
real tokens gives (`load_balancing_loss` is the transformers-checked function),
and an MoE SFT run writes it to metrics.jsonl. A dense model logs no such term.
"""

import json

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import nnx

from hat_jax.cli.config_flags import load_config
from hat_jax.losses.moe import load_balancing_loss
from hat_jax.sampling.sampler import Completion
from hat_jax.train.opd import build_batch, jit_opd_step
from hat_jax.train.rl import jit_rl_step
from hat_jax.train.sft import run_sft
from hat_jax.train.state import init_state, make_optimizer
from tests.rl_helpers import random_batch, rl_config, tiny_model
from tests.train_helpers import CONFIG, tiny_overrides

MOE = {
    "model.model_type": "qwen3_moe",
    "model.num_experts": 4,
    "model.num_experts_per_tok": 2,
    "model.moe_intermediate_size": 32,
}


def _moe_model():
    return tiny_model(
        model_type="qwen3_moe",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        router_aux_loss_coef=0.5,
    )


@nnx.jit
def _routers(model, tokens, positions, mask):
    return model.hidden_states(tokens, positions, mask)[2]


def _aux(model, tokens, mask, positions=None) -> float:
    """The load-balancing loss of a brute-force forward over the real tokens."""
    routers = _routers(model, jnp.asarray(tokens), positions, jnp.asarray(mask))
    c = model.config
    return float(
        load_balancing_loss(
            routers,
            num_experts=c.num_experts,
            top_k=c.num_experts_per_tok,
            mask=jnp.asarray(mask),
        )
    )


def test_opd_step_logs_the_load_balancing_loss():
    model = _moe_model()
    rng = np.random.default_rng(0)
    prompts = [list(rng.integers(1, 64, n)) for n in (3, 5, 4)]
    comps = [
        Completion(list(rng.integers(1, 64, n)), [-1.0] * n, None, "length")
        for n in (4, 2, 6)
    ]
    batch = build_batch(prompts, comps, seq_len=12, pad_id=0)
    real = np.zeros((3, 12), bool)  # prompt + completion, less the last token
    for i, (p, c) in enumerate(zip(prompts, comps, strict=True)):
        real[i, : len(p) + len(c.tokens) - 1] = True
    cfg = ml_collections.ConfigDict(
        dict(divergence="reverse_kl", top_k=0, compute_dtype="float32")
    )
    cfg.optim = rl_config().optim
    teacher_graphdef, teacher = nnx.split(_moe_model())
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    want = _aux(model, batch["inputs"], real)  # before the step donates the state
    step = jit_opd_step(graphdef, cfg, teacher_graphdef)  # jitted, as training runs it
    _, m = step(state, batch, jax.random.PRNGKey(0), teacher)
    np.testing.assert_allclose(float(m["train/moe_aux_loss"]), want, rtol=1e-5)


def test_rl_step_logs_the_load_balancing_loss():
    model = _moe_model()
    batch = random_batch(64, seed=2)
    graphdef, state = init_state(model, make_optimizer(rl_config().optim), seed=0)
    want = _aux(model, batch["inputs"], batch["attn"], jnp.asarray(batch["positions"]))
    ref = jax.tree.map(jnp.copy, state.params)
    _, m = jit_rl_step(graphdef, rl_config())(state, batch, jax.random.PRNGKey(0), ref)
    np.testing.assert_allclose(float(m["train/moe_aux_loss"]), want, rtol=1e-5)
    dense = tiny_model()
    graphdef, state = init_state(dense, make_optimizer(rl_config().optim), seed=0)
    ref = jax.tree.map(jnp.copy, state.params)
    _, m = jit_rl_step(graphdef, rl_config())(state, batch, jax.random.PRNGKey(0), ref)
    assert "train/moe_aux_loss" not in m


def test_moe_sft_run_writes_the_aux_term(memo_jsonl, memo_tokenizer, tmp_path):
    folder, vocab = memo_tokenizer
    over = tiny_overrides(memo_jsonl, folder, vocab, **MOE)
    cfg = load_config(f"{CONFIG}:steps=2,seq_len=64,batch_size=2", over)
    run_sft(cfg, tmp_path, progress=False)
    rows = [
        json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2
    assert all(np.isfinite(r["train/moe_aux_loss"]) for r in rows)
    assert all(r["train/moe_aux_loss"] > 0.5 for r in rows)  # >= 1 when balanced
