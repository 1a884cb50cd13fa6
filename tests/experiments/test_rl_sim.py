"""One HSA-RL step through the real simulator with a tiny random model."""

import json

import numpy as np

from experiments.rl_sim import rollout_binding, run_rl
from hat_jax.cli.config_flags import load_config
from hat_jax.harness import load_harness

CONFIG = "experiments/configs/rl_tiny.py"


def tiny_overrides(**kw) -> list[str]:
    base = {
        "model.hidden_size": 32,
        "model.intermediate_size": 64,
        "model.head_dim": 8,
        "rollout.tasks": 1,
        "rollout.group": 2,
        "rollout.n_cases": 2,
        "rollout.max_new_tokens": 8,
        "rollout.hsa_p": 1.0,
        "eval.n_cases": 2,
        "eval.max_new_tokens": 8,
        "eval.every": 1,
        "eval.at_start": False,  # one (greedy) evaluation, at the end
        "rl.on_mismatch": "splice",  # a random model's outputs never round-trip
    }
    base.update(kw)
    return [f"{k}={v}" for k, v in base.items()]


def test_rollouts_mix_harnesses():
    base = load_harness("taolive_v1")
    cfg = load_config(f"{CONFIG}:hsa=True", tiny_overrides())
    ids = set()
    for j in range(4):
        b, spec = rollout_binding(base, cfg.rollout, np.random.default_rng([0, j]))
        assert spec is not None  # hsa_p = 1
        ids.add(b.harness.id)
    assert base.id not in ids and len(ids) > 1


def test_one_rl_step_end_to_end(tmp_path):
    cfg = load_config(f"{CONFIG}:steps=1,hsa=True", tiny_overrides())
    state, last = run_rl(cfg, tmp_path, progress=False)
    assert int(state.step) == 1
    rows = [
        json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in rows] == [1]
    train = rows[0]
    assert 0.0 <= train["eval/reward"] <= 1.0
    for key in (
        "train/loss",
        "rl/logprob_gap_max",
        "rl/kl",
        "rl/clip_fraction",
        "rl/mismatch_runs",
        "rl/reward/accuracy",
        "rl/reward/tool_rationality",
    ):
        assert np.isfinite(train[key]), key
    assert train["rl/hsa_share"] > 0
    assert train["rl/tokens_reply"] + train["rl/tokens_tool"] > 0
    assert (tmp_path / "config.json").exists()
    assert any((tmp_path / "ckpt").iterdir())
