"""SFT step: packed attention, accumulation, bf16 compute, memorisation."""

import copy
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from hat_jax.cli.config_flags import load_config
from hat_jax.harness.tokens import read_jsonl
from hat_jax.train import build
from hat_jax.train.data import PackedBatches, tokenize
from hat_jax.train.sft import jit_sft_step, run_sft, sft_loss
from hat_jax.train.state import init_state, make_optimizer
from tests.train_helpers import CONFIG, tiny_overrides


def _cfg(memo_jsonl, memo_tokenizer, arg="", **kw):
    folder, vocab = memo_tokenizer
    kw.setdefault("model.num_hidden_layers", 1)  # compiles faster; attention is there
    return load_config(
        f"{CONFIG}:{arg}", tiny_overrides(memo_jsonl, folder, vocab, **kw)
    )


def _batch(cfg, memo_jsonl, memo_tokenizer):
    tok = build.load_tokenizer(str(memo_tokenizer[0]))
    examples, _ = tokenize(read_jsonl(memo_jsonl), tok, seq_len=cfg.seq_len)
    data = PackedBatches(
        examples, batch_size=cfg.batch_size, seq_len=cfg.seq_len, seed=0
    )
    return next(data)


@pytest.fixture(scope="module")
def fp32_step(memo_jsonl, memo_tokenizer):
    cfg = _cfg(memo_jsonl, memo_tokenizer, "seq_len=64,batch_size=4")
    batch = _batch(cfg, memo_jsonl, memo_tokenizer)
    return cfg, batch, *_one_step(cfg, batch)


def _one_step(cfg, batch):
    model, _ = build.make_model(cfg)
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    step = jit_sft_step(graphdef, cfg)
    return step(state, batch, jax.random.PRNGKey(0))


def test_weighted_loss_equals_brute_force(memo_jsonl, memo_tokenizer):
    # data.decision_weight makes loss_mask float weights: the loss is their
    # weighted mean of token CE, checked against the full logits.
    cfg = _cfg(memo_jsonl, memo_tokenizer, "seq_len=64,batch_size=2")
    batch = dict(_batch(cfg, memo_jsonl, memo_tokenizer))
    w = np.random.default_rng(0).uniform(0.5, 3.0, batch["loss_mask"].shape)
    batch["loss_mask"] = (w * batch["loss_mask"]).astype(np.float32)
    model, _ = build.make_model(cfg)
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    loss, _ = sft_loss(state.params, state.frozen, batch, graphdef=graphdef, cfg=cfg)
    logits = model.forward(
        batch["inputs"], batch["positions"], segment_ids=batch["segment_ids"]
    ).logits
    z = np.asarray(logits, np.float64)  # log-softmax in numpy, float64
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    ce = -np.take_along_axis(logp, batch["targets"][..., None], -1)[..., 0]
    want = (ce * batch["loss_mask"]).sum() / batch["loss_mask"].sum()
    np.testing.assert_allclose(float(loss), want, rtol=1e-5)


def test_grad_accumulation_matches_one_big_batch(fp32_step):
    cfg, batch, s1, m1 = fp32_step
    cfg = copy.deepcopy(cfg)
    cfg.grad_accum = 2
    s2, m2 = _one_step(cfg, batch)
    for k in ("train/loss", "train/grad_norm", "train/loss_tokens"):
        np.testing.assert_allclose(m1[k], m2[k], rtol=1e-5)
    for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s2.params)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("remat,chunk", [(True, 512), (False, 7)])
def test_remat_and_loss_chunk_do_not_change_the_update(fp32_step, remat, chunk):
    cfg, batch, s1, m1 = fp32_step
    cfg = copy.deepcopy(cfg)
    cfg.remat, cfg.loss_chunk = remat, chunk
    s2, m2 = _one_step(cfg, batch)
    for k in ("train/loss", "train/grad_norm"):
        np.testing.assert_allclose(m1[k], m2[k], rtol=1e-6)
    for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s2.params)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_bf16_compute_keeps_fp32_master_params(fp32_step):
    cfg, batch, _, m32 = fp32_step
    cfg = copy.deepcopy(cfg)
    cfg.compute_dtype = "bfloat16"
    state, m16 = _one_step(cfg, batch)
    assert {x.dtype for x in jax.tree.leaves(state.params)} == {jnp.dtype("float32")}
    assert np.isfinite(m16["train/loss"])
    np.testing.assert_allclose(m16["train/loss"], m32["train/loss"], rtol=2e-2)
    assert m16["train/loss"] != m32["train/loss"]  # the compute really was bf16


def test_memorises_20_examples(memo_jsonl, memo_tokenizer, tmp_path, steps=250):
    # 20 examples pack into 10 rows of 64: each step sees all of them, in 2
    # accumulated micro-batches.
    cfg = _cfg(
        memo_jsonl,
        memo_tokenizer,
        f"steps={steps},seq_len=64,batch_size=10,lr=3e-3",
        **{
            "grad_accum": 2,
            "model.num_hidden_layers": 2,
            "optim.weight_decay": 0.0,
            "train.save_every": 1000,
            "train.log_every": 10,
            "train.decision_every": 20,
            "train.decision_rows": 20,
            "model.hidden_size": 64,
            "model.intermediate_size": 128,
            "model.head_dim": 16,
        },
    )
    _, _, last = run_sft(cfg, tmp_path, progress=False)
    assert last["train/loss"] < 0.05, last
    # decision accuracy: the codes' digits (the reply's numbers), teacher-forced
    rows = [
        json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    probed = [r for r in rows if "train/decision_accuracy" in r]
    assert [r["step"] for r in probed] == list(range(20, steps + 1, 20)) + [steps]
    assert set(probed[-1]) >= {"train/decision/number"}
    assert probed[0]["train/decision_accuracy"] < 0.5
    assert last["train/decision_accuracy"] == 1.0
    assert last["train/decision_exact/number"] == 1.0  # every code, all its digits
    assert probed[0]["train/decision_exact/number"] < 0.5
    stats = json.loads((tmp_path / "config.json").read_text())["data_stats"]
    assert stats["examples"] == 20
    assert last["train/loss_tokens"] == stats["loss_tokens"]  # all 20 in the batch


def test_init_from_a_workdir_chains_stages(memo_jsonl, memo_tokenizer, tmp_path):
    cfg = _cfg(memo_jsonl, memo_tokenizer, "steps=2,seq_len=64,batch_size=2")
    state, _, _ = run_sft(cfg, tmp_path / "stage1", progress=False)
    nxt = _cfg(memo_jsonl, memo_tokenizer, "seq_len=64", init_from=tmp_path / "stage1")
    model, _ = build.make_model(nxt)
    params = nnx.state(model, nnx.Param)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(state.params)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
