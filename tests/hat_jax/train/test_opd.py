"""OPD: prompt reading, the completion mask, a tiny run, and distillation progress."""

import json
import re

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import nnx

from hat_jax.cli.config_flags import load_config
from hat_jax.sampling.sampler import Completion, Sampler, SamplingParams
from hat_jax.train import build
from hat_jax.train.opd import (
    build_batch,
    encode_prompts,
    opd_loss,
    read_prompts,
    run_opd,
)
from tests.train_helpers import memo_trajectories, opd_overrides

CONFIG = "experiments/configs/opd_tiny.py"


@pytest.fixture(scope="module")
def prompts_jsonl(tmp_path_factory):
    """Memo questions, half as chats (with a gold reply to drop), half as prompts."""
    path = tmp_path_factory.mktemp("opd") / "prompts.jsonl"
    lines = []
    for i, t in enumerate(memo_trajectories(8)):
        if i % 2:
            lines.append({"prompt": t.user_message})
        else:
            lines.append({"messages": t.messages})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _cfg(prompts_jsonl, memo_tokenizer, arg="steps=3", **kw):
    over = opd_overrides(prompts_jsonl, memo_tokenizer, **kw)
    return load_config(f"{CONFIG}:{arg}", over)


def test_read_prompts_formats_and_errors(prompts_jsonl, tmp_path):
    prompts = read_prompts(prompts_jsonl)
    assert len(prompts) == 8
    assert [m["role"] for m in prompts[0]] == ["system", "user"]  # reply dropped
    assert prompts[1] == [
        {"role": "user", "content": memo_trajectories(2)[1].user_message}
    ]
    bad = tmp_path / "bad.jsonl"
    for text, why in [
        ('{"prompt": "hi"}\n\nnot json\n', ":3: invalid JSON"),
        ('{"text": "hi"}\n', ":1: expected a 'messages' or a 'prompt' key"),
        ('{"messages": [{"content": "x"}]}\n', ":1: field 'messages[0].role' is"),
        ('{"messages": [{"role": "user", "reasoning": 5}]}\n', ":1: field 'messages"),
        ('{"messages": [{"role": "assistant", "content": "x"}]}\n', ":1: only"),
        ("[1]\n", ":1: expected a JSON object"),
    ]:
        bad.write_text(text)
        with pytest.raises(ValueError, match=re.escape(f"bad.jsonl{why}")):
            read_prompts(bad)


def test_mask_covers_exactly_the_completion_tokens():
    prompts = [[5, 6, 7], [8, 9]]
    comps = [
        Completion([10, 11], [-0.5, -0.25], None, "length"),
        Completion([12, 13, 2], [-1.0, -2.0, -3.0], None, "stop"),
    ]
    b = build_batch(prompts, comps, seq_len=6, pad_id=0)
    np.testing.assert_array_equal(
        b["inputs"], [[5, 6, 7, 10, 0, 0], [8, 9, 12, 13, 0, 0]]
    )
    np.testing.assert_array_equal(
        b["targets"], [[6, 7, 10, 11, 0, 0], [9, 12, 13, 2, 0, 0]]
    )
    # targets under the mask are the completion tokens, in order
    for i, c in enumerate(comps):
        np.testing.assert_array_equal(b["targets"][i][b["loss_mask"][i]], c.tokens)
        np.testing.assert_allclose(
            b["sampler_logprobs"][i][b["loss_mask"][i]], c.logprobs
        )
    assert not b["loss_mask"][0, :2].any() and not b["loss_mask"][1, :1].any()


@pytest.mark.parametrize(
    "divergence,top_k", [("reverse_kl", 0), ("forward_kl", 4), ("jsd(0.5)", 4)]
)
def test_loss_ignores_teacher_logits_at_prompt_and_padding(divergence, top_k):
    cfg = ml_collections.ConfigDict({"divergence": divergence, "top_k": top_k})
    comps = [
        Completion([10, 11], [0, 0], None, "length"),
        Completion([3], [0], None, "stop"),
    ]
    batch = build_batch([[5, 6, 7], [8, 9]], comps, seq_len=6, pad_id=0)
    mask = jnp.asarray(batch["loss_mask"])
    rng = np.random.default_rng(0)
    student, teacher, noise = (rng.normal(size=(2, 6, 11)) for _ in range(3))
    off = np.where(batch["loss_mask"][..., None], teacher, teacher + 5 * noise)
    on = np.where(batch["loss_mask"][..., None], teacher + 5 * noise, teacher)

    @jax.jit
    def loss(t):
        return opd_loss(student_logits=student, teacher_logits=t, mask=mask, cfg=cfg)[0]

    base = float(loss(teacher))
    assert base > 0
    np.testing.assert_allclose(float(loss(off)), base, rtol=1e-6)  # prompt/pad
    assert abs(float(loss(on)) - base) > 1e-3  # completion positions do count


def test_three_steps_write_metrics_and_start_at_zero_divergence(
    prompts_jsonl, memo_tokenizer, tmp_path
):
    cfg = _cfg(prompts_jsonl, memo_tokenizer, "steps=3,max_new_tokens=8,batch_size=4")
    _, _, last = run_opd(cfg, tmp_path, progress=False)
    rows = [
        json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().split("\n") if x
    ]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in (
        "train/loss",
        "train/divergence",
        "train/student_entropy",
        "train/completion_len",
        "train/grad_norm",
        "train/tokens_per_s",
    ):
        assert all(np.isfinite(r[key]) for r in rows), key
    first = rows[0]
    assert abs(first["train/divergence"]) < 1e-5  # teacher == initial student
    assert 0 < first["train/completion_len"] <= 8
    assert first["train/logprob_gap"] < 1e-4  # sampler vs trainer, fp32
    assert first["train/student_entropy"] > 0
    stats = json.loads((tmp_path / "config.json").read_text())["data_stats"]
    assert stats == {"prompts": 8, "kept": 8, "dropped": 0}
    assert last["train/loss"] == rows[-1]["train/loss"]


def _reverse_kl(student, teacher, batch, cfg) -> float:
    tokens = jnp.asarray(batch["inputs"])
    loss, _ = opd_loss(
        student_logits=student(tokens),
        teacher_logits=teacher(tokens),
        mask=jnp.asarray(batch["loss_mask"]),
        cfg=cfg,
    )
    return float(loss)


def test_opd_pulls_a_perturbed_student_towards_the_teacher(
    prompts_jsonl, memo_tokenizer, tmp_path
):
    cfg = _cfg(
        prompts_jsonl,
        memo_tokenizer,
        "steps=8,max_new_tokens=12,batch_size=8,lr=3e-3",
        **{"optim.warmup_steps": 0},
    )
    teacher, _ = build.make_model(cfg)
    graphdef, variables = nnx.split(teacher)
    leaves, tree = jax.tree.flatten(variables)
    keys = jax.random.split(jax.random.PRNGKey(1), len(leaves))
    noisy = [  # matrices perturbed; no leaf shared, as run_opd donates the student
        x + jnp.std(x) * jax.random.normal(k, x.shape) if x.ndim >= 2 else jnp.copy(x)
        for x, k in zip(leaves, keys)
    ]
    student = nnx.merge(graphdef, jax.tree.unflatten(tree, noisy))
    # A fixed evaluation batch: the perturbed student's own replies to all prompts.
    tok = build.load_tokenizer(cfg.tokenizer)
    ids, _ = encode_prompts(read_prompts(prompts_jsonl), tok, max_prompt_tokens=48)
    comps = Sampler(student, tok).generate(
        ids, SamplingParams(max_new_tokens=12, temperature=1.0, seed=123)
    )
    batch = build_batch(ids, comps, seq_len=60, pad_id=tok.pad_id)
    before = _reverse_kl(student, teacher, batch, cfg)

    state, gd, _ = run_opd(
        cfg, tmp_path, model=student, teacher=teacher, progress=False
    )
    after = _reverse_kl(nnx.merge(gd, state.params, state.frozen), teacher, batch, cfg)
    assert before > 1e-3
    print(f"reverse KL on the eval batch: {before:.4f} -> {after:.4f}")
    assert after < 0.7 * before, (before, after)


def test_opd_resume_after_kill_is_bit_identical(
    prompts_jsonl, memo_tokenizer, tmp_path
):
    """OPD on the shared loop: killed after step 3 (checkpoint at 2), resumed to 5,
    equals 5 straight steps, state and metrics rows (its sampling included)."""
    import os

    from hat_jax.train.metrics import read_metrics
    from tests.hat_jax.train.resume_worker import run_killed

    spec = f"{CONFIG}:steps=5,max_new_tokens=8,batch_size=4"
    overrides = opd_overrides(prompts_jsonl, memo_tokenizer, **{"train.save_every": 2})
    killed = tmp_path / "killed"
    run_killed(killed, 3, spec, overrides, stage="opd", timeout=300)
    assert sorted(os.listdir(killed / "ckpt")) == ["2"]
    cfg = load_config(spec, overrides)
    resumed, _, _ = run_opd(cfg, killed, progress=False)
    straight, _, _ = run_opd(cfg, tmp_path / "straight", progress=False)
    assert int(resumed.step) == int(straight.step) == 5
    for x, y in zip(jax.tree.leaves(resumed), jax.tree.leaves(straight), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    rows_a = read_metrics(killed / "metrics.jsonl")
    rows_b = read_metrics(tmp_path / "straight" / "metrics.jsonl")
    assert [r["step"] for r in rows_a] == [1, 2, 3, 4, 5]
    for key in ("train/loss", "train/divergence", "train/completion_len"):
        assert [r[key] for r in rows_a] == [r[key] for r in rows_b], key
