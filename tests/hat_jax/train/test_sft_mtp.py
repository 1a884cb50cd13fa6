"""The MTP term of the SFT loss equals a per-example brute-force recomputation."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.cli.config_flags import load_config
from hat_jax.harness.tokens import read_jsonl
from hat_jax.models.mtp import mtp_logits
from hat_jax.train import build
from hat_jax.train.data import PackedBatches, tokenize
from hat_jax.train.sft import jit_sft_step, sft_loss
from hat_jax.train.state import init_state, make_optimizer
from tests.train_helpers import CONFIG, tiny_overrides


def _setup(memo_jsonl, memo_tokenizer, weight=0.5):
    folder, vocab = memo_tokenizer
    kw = {"model.num_hidden_layers": 1, "model.mtp_num_hidden_layers": 1}
    kw["mtp_weight"] = weight
    cfg = load_config(
        f"{CONFIG}:seq_len=64,batch_size=2",
        tiny_overrides(memo_jsonl, folder, vocab, **kw),
    )
    cfg.loss_chunk = 16  # several chunks, and a padded last one
    tok = build.load_tokenizer(str(folder))
    examples, _ = tokenize(read_jsonl(memo_jsonl), tok, seq_len=cfg.seq_len)
    batch = next(PackedBatches(examples, batch_size=2, seq_len=64, seed=0))
    model, _ = build.make_model(cfg)
    return cfg, batch, model


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_mtp_term_matches_each_example_alone(memo_jsonl, memo_tokenizer):
    cfg, batch, model = _setup(memo_jsonl, memo_tokenizer)
    graphdef, params, frozen = nnx.split(model, nnx.Param, ...)
    loss, m = sft_loss(params, frozen, batch, graphdef=graphdef, cfg=cfg)
    np.testing.assert_allclose(loss, m["ce"] + 0.5 * m["mtp_ce"], rtol=1e-6)

    # Brute force: each packed example alone, the full id sequence rebuilt from
    # inputs + its last target; position t predicts ids[t + 2] where that token is
    # an assistant token (loss_mask[t + 1]).
    nll, count = 0.0, 0
    seg = np.asarray(batch["segment_ids"])
    for r in range(seg.shape[0]):
        for s in range(1, seg[r].max() + 1):
            at = np.flatnonzero(seg[r] == s)
            ids = np.concatenate([batch["inputs"][r, at], batch["targets"][r, at[-1:]]])
            mask = np.asarray(batch["loss_mask"][r, at], bool)
            x = jnp.asarray(ids[:-1])[None]
            pos = jnp.arange(len(at))[None]
            hidden = model.forward(x, pos).hidden
            logp = _log_softmax(mtp_logits(model, hidden, x, pos)[0])
            for t in range(len(at) - 1):
                if mask[t + 1]:
                    nll -= logp[t, ids[t + 2]]
                    count += 1
    assert count > 20
    np.testing.assert_allclose(m["mtp_ce"], nll / count, rtol=1e-5)


def test_mtp_head_learns_in_the_train_step(memo_jsonl, memo_tokenizer):
    cfg, batch, model = _setup(memo_jsonl, memo_tokenizer)
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    step = jit_sft_step(graphdef, cfg)
    first = None
    for _ in range(30):
        state, metrics = step(state, batch, jax.random.PRNGKey(0))
        first = first if first is not None else float(metrics["train/mtp_ce"])
    assert float(metrics["train/mtp_ce"]) < 0.8 * first
    loss = functools.partial(sft_loss, graphdef=graphdef, cfg=cfg)
    cfg.mtp_weight = 0.0
    _, m0 = loss(state.params, state.frozen, batch)
    assert "mtp_ce" not in m0  # weight 0: the head is not run


def test_standalone_mtp_mode_adds_a_head_to_a_base_and_trains_only_it(
    memo_jsonl, memo_tokenizer, tmp_path
):
    from hat_jax.checkpoints.hf import save_hf
    from hat_jax.train.sft import run_sft

    # A base without a head (as SmolLM2 is), exported to a HF folder.
    cfg, _, base = _setup(memo_jsonl, memo_tokenizer)
    cfg.model.mtp_num_hidden_layers = 0
    base, _ = build.make_model(cfg)
    assert base.mtp is None
    save_hf(base, tmp_path / "base")
    cfg.init_from = str(tmp_path / "base")
    cfg.model.mtp_num_hidden_layers = 1
    cfg.mtp_only = True
    cfg.train.steps = cfg.optim.total_steps = 8
    state, graphdef, last = run_sft(cfg, tmp_path / "run", progress=False)
    trained = {p for p, _ in nnx.to_flat_state(state.params)}
    assert trained and all(p[0] == "mtp" for p in trained)
    model = nnx.merge(graphdef, state.params, state.frozen)
    for (path, want), (_, got) in zip(
        nnx.to_flat_state(nnx.state(base, nnx.Param)),
        nnx.to_flat_state(nnx.state(model, nnx.Not(nnx.PathContains("mtp")))),
    ):
        assert np.asarray(want[...]).tobytes() == np.asarray(got[...]).tobytes(), path
    assert "train/mtp_ce" in last and "train/accuracy" not in last
    cfg.model.mtp_num_hidden_layers = 0  # mtp_only without a head is an error
    with pytest.raises(ValueError, match="mtp_only"):
        build.trainable_filter(cfg, base)
