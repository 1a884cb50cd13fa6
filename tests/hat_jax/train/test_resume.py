"""A run killed mid-way and resumed ends bit-identical to an uninterrupted one."""

import os

import jax
import numpy as np

from hat_jax.cli.config_flags import load_config
from hat_jax.train.metrics import read_metrics
from hat_jax.train.sft import run_sft
from tests.hat_jax.train.resume_worker import run_killed
from tests.train_helpers import CONFIG, tiny_overrides

STEPS, SAVE_EVERY, KILL_AT = 5, 2, 3  # killed after step 3, resumed from step 2


def test_resume_after_kill_is_bit_identical(memo_jsonl, memo_tokenizer, tmp_path):
    folder, vocab = memo_tokenizer
    # 2 batches per epoch: the resumed run crosses an epoch boundary.
    spec = f"{CONFIG}:steps={STEPS},seq_len=64,batch_size=4"
    overrides = tiny_overrides(
        memo_jsonl, folder, vocab, **{"train.save_every": SAVE_EVERY}
    )
    killed = tmp_path / "killed"
    run_killed(killed, KILL_AT, spec, overrides, JAX_DEFAULT_MATMUL_PRECISION="highest")
    assert sorted(os.listdir(killed / "ckpt")) == ["2"]
    assert [r["step"] for r in read_metrics(killed / "metrics.jsonl")] == [1, 2, 3]

    cfg = load_config(spec, overrides)
    resumed, _, _ = run_sft(cfg, killed, progress=False)
    straight, _, _ = run_sft(cfg, tmp_path / "straight", progress=False)

    assert int(resumed.step) == int(straight.step) == STEPS
    a, b = jax.tree.leaves(resumed), jax.tree.leaves(straight)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
    # Same config and seed: the same losses, step by step (resumed rows included).
    rows_a = read_metrics(killed / "metrics.jsonl")
    rows_b = read_metrics(tmp_path / "straight" / "metrics.jsonl")
    assert [r["step"] for r in rows_a] == list(range(1, STEPS + 1))
    assert [r["train/loss"] for r in rows_a] == [r["train/loss"] for r in rows_b]


def test_killed_before_its_first_checkpoint_logs_each_step_once(
    memo_jsonl, memo_tokenizer, tmp_path
):
    """A run killed before any checkpoint starts over; its old rows are dropped."""
    folder, vocab = memo_tokenizer
    spec = f"{CONFIG}:steps=3,seq_len=64,batch_size=4"
    overrides = tiny_overrides(memo_jsonl, folder, vocab, **{"train.save_every": 10})
    run_killed(tmp_path, 2, spec, overrides)
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2]
    run_sft(load_config(spec, overrides), tmp_path, progress=False)
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3]
