"""OPD's held-out loss: the student's CE on the teacher's greedy replies.

A run with held-out prompts trains bit-identically to one without; its
eval/loss and eval/divergence equal a direct recomputation (the teacher's greedy
completions of the held-out prompts, full logits in float64) with the final
params, logged every `train.eval_every` steps.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from hat_jax.cli.config_flags import load_config
from hat_jax.sampling.sampler import Sampler, SamplingParams
from hat_jax.train import build
from hat_jax.train.metrics import read_metrics
from hat_jax.train.opd import build_batch, encode_prompts, read_prompts, run_opd
from tests.train_helpers import memo_trajectories, opd_overrides

CONFIG = "experiments/configs/opd_tiny.py"
NEW = 6  # sampling.max_new_tokens


def _log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_opd_heldout_is_teacher_forced_and_leaves_training_unchanged(
    memo_tokenizer, tmp_path
):
    trajs = memo_trajectories(12)
    train_path, eval_path = tmp_path / "train.jsonl", tmp_path / "eval.jsonl"
    for path, part in ((train_path, trajs[:8]), (eval_path, trajs[8:])):
        path.write_text(
            "".join(json.dumps({"prompt": t.user_message}) + "\n" for t in part)
        )
    base = {"optim.warmup_steps": 0}
    spec = f"{CONFIG}:steps=2,max_new_tokens={NEW},batch_size=4,lr=3e-3"
    heldout = {"data.eval": str(eval_path), "train.eval_every": 1}
    plain_cfg = load_config(spec, opd_overrides(train_path, memo_tokenizer, **base))
    over = opd_overrides(train_path, memo_tokenizer, **(base | heldout))
    cfg = load_config(spec, over)
    plain, _, _ = run_opd(plain_cfg, tmp_path / "plain", progress=False)
    state, graphdef, last = run_opd(cfg, tmp_path / "heldout", progress=False)

    for x, y in zip(jax.tree.leaves(plain), jax.tree.leaves(state), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    rows = read_metrics(tmp_path / "heldout" / "metrics.jsonl")
    plain_rows = read_metrics(tmp_path / "plain" / "metrics.jsonl")
    assert [r["train/loss"] for r in rows] == [r["train/loss"] for r in plain_rows]
    assert [r["step"] for r in rows if "eval/loss" in r] == [1, 2]

    # the teacher (the initial student) decodes the held-out prompts greedily
    tok = build.load_tokenizer(str(memo_tokenizer[0]))
    teacher, _ = build.make_model(cfg)
    ids, _ = encode_prompts(read_prompts(eval_path), tok, max_prompt_tokens=48)
    comps = Sampler(teacher, tok).generate(
        ids, SamplingParams(max_new_tokens=NEW, temperature=0.0)
    )
    batch = build_batch(ids, comps, seq_len=48 + NEW, pad_id=tok.pad_id)
    tokens = jnp.asarray(batch["inputs"])
    student = nnx.merge(graphdef, state.params, state.frozen)
    ls, lt = _log_softmax(student(tokens)), _log_softmax(teacher(tokens))
    w = batch["loss_mask"].astype(np.float64)
    picked = np.take_along_axis(ls, batch["targets"][..., None], -1)[..., 0]
    ce = -(picked * w).sum() / w.sum()
    rkl = ((np.exp(ls) * (ls - lt)).sum(-1) * w).sum() / w.sum()  # reverse KL
    acc = ((ls.argmax(-1) == batch["targets"]) * w).sum() / w.sum()
    np.testing.assert_allclose(last["eval/loss"], ce, rtol=1e-5)
    np.testing.assert_allclose(last["eval/divergence"], rkl, rtol=1e-3, atol=1e-7)
    np.testing.assert_allclose(last["eval/accuracy"], acc, atol=1e-6)
    assert last["eval/loss_tokens"] == w.sum()
    assert last["eval/divergence"] > 0  # the student moved away from its start
