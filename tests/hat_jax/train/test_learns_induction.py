"""The SFT step learns to copy: a packed batch of "random span, then the span
again" rows, trained only on the repeat, is copied almost exactly within a few
hundred steps. Copying a span from the context is what every harness-reading
ability rests on (docs/results/world_base.md); a regression in attention, its
hand-written backward, the segment mask, positions or the loss mask that stops
it shows here, not after an hour of pilot training."""

import functools

import jax
import ml_collections
import numpy as np

from hat_jax.models import ModelConfig, build_model
from hat_jax.train.sft import sft_train_step
from hat_jax.train.state import init_state, make_optimizer

V, SPAN, SEGS, ROWS = 256, 12, 3, 8  # vocab, span length, segments a row, rows
STEPS = 300


def _batch(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """[ROWS, T] packed rows: SEGS segments of [BOS, span, span], the second
    span trained; positions restart and segment ids change per segment."""
    cols = {k: [] for k in ("inputs", "targets", "loss_mask", "positions", "seg")}
    for _ in range(ROWS):
        ids, mask, pos, seg = [], [], [], []
        for s in range(SEGS):
            span = rng.integers(2, V, SPAN)
            piece = np.r_[1, span, span]
            ids += piece.tolist()
            mask += [0.0] * (SPAN + 1) + [1.0] * SPAN
            pos += list(range(len(piece)))
            seg += [s + 1] * len(piece)
        cols["inputs"].append(ids[:-1])
        cols["targets"].append(ids[1:])
        cols["loss_mask"].append(mask[1:])
        cols["positions"].append(pos[:-1])
        cols["seg"].append(seg[:-1])
    out = {k: np.asarray(v) for k, v in cols.items()}
    # a target across a segment boundary is never trained (the mask says so)
    out["loss_mask"] = out["loss_mask"].astype(np.float32)
    out["segment_ids"] = out.pop("seg").astype(np.int32)
    for k in ("inputs", "targets", "positions"):
        out[k] = out[k].astype(np.int32)
    return out


def test_a_small_model_learns_to_copy_a_span_from_its_context():
    cfg = ModelConfig(
        model_type="qwen3",
        vocab_size=V,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        tie_word_embeddings=True,
    )
    run = ml_collections.ConfigDict(
        {
            "grad_accum": 1,
            "compute_dtype": "float32",
            "loss_chunk": 512,
            "optim": {
                "lr": 3e-3, "b1": 0.9, "b2": 0.95, "eps": 1e-8,
                "weight_decay": 0.01, "warmup_steps": 10, "total_steps": STEPS,
                "end_lr_frac": 0.1, "clip_norm": 1.0,
            },
        }
    )  # fmt: skip
    graphdef, state = init_state(build_model(cfg), make_optimizer(run.optim), seed=0)
    step = jax.jit(functools.partial(sft_train_step, graphdef=graphdef, cfg=run))
    rng = np.random.default_rng(0)
    first = None
    for i in range(STEPS):
        state, m = step(state, _batch(rng), jax.random.key(0))
        if i == 0:
            first = float(m["train/accuracy"])
    # held-out rows: accuracy on the repeated span, teacher-forced
    _, m = step(state, _batch(np.random.default_rng(1)), jax.random.key(0))
    assert first < 0.05  # chance is 1/V: nothing is copied at the start
    assert float(m["train/accuracy"]) > 0.9, float(m["train/accuracy"])
