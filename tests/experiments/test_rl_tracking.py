"""HSA-RL logs: frac_reward_zero_std (as TRL) and WORKDIR/rollouts.jsonl."""

import json
from types import SimpleNamespace

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from hat_jax.cli.config_flags import load_config
from hat_jax.train.metrics import read_metrics
from hat_jax.train.rl import frac_reward_zero_std, segment_weights
from hat_jax.train.rl_batch import episode_from_tokens
from hat_jax.train.rl_run import run_rl
from hat_jax.train.rollout_log import RolloutLog, markdown, rollout_rows
from tests.tiny_configs import rl_overrides

CONFIG = "experiments/configs/rl_tiny.py"


def _rl(**weights):
    return ml_collections.ConfigDict(
        {
            "reward_names": ("a", "b", "c"),
            "segment_rewards": {"tool": {"a": 1.0}, "reply": {"b": 2.0}},
            **weights,
        }
    )


def test_frac_reward_zero_std_counts_groups_with_one_total():
    r = np.asarray(
        [
            [[1.0, 0.5, 0.0], [1.0, 0.5, 0.0]],  # all equal: counted
            [[1.0, 0.5, 0.0], [1.0, 0.5, 1.0]],  # differs in c, weight 0: counted
            [[1.0, 0.0, 0.0], [0.0, 0.5, 0.0]],  # totals 1 and 1 (TRL: std 0)
            [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]],  # differs: not counted
        ],
        np.float32,
    )
    assert float(frac_reward_zero_std(jnp.asarray(r), _rl())) == 0.75
    assert float(frac_reward_zero_std(jnp.asarray(r[3:]), _rl())) == 0.0


def _traj(i):
    return SimpleNamespace(
        reply=f"reply {i} | done\nbye",
        status="ok",
        harness_id="h@1",
        messages=[],
    )


def test_rollout_rows_follow_the_batch_order_and_log_trims_on_resume(tmp_path):
    # groups interleaved: the batch (and so the advantages) is ordered by group
    eps = [
        episode_from_tokens([1], [2], [-0.1], rewards={"a": float(i)}, group=i % 2)
        for i in range(4)
    ]
    trajs = [_traj(i) for i in range(4)]
    adv = {"tool": np.asarray([[0.0, 1.0], [2.0, 3.0]]), "reply": np.zeros((2, 2))}
    rows = rollout_rows(eps, trajs, adv, samples=3)
    assert [r["group"] for r in rows] == [0, 0, 1, 1]
    assert [r["rewards"]["a"] for r in rows] == [0.0, 2.0, 1.0, 3.0]
    assert [r["advantage"]["tool"] for r in rows] == [0.0, 1.0, 2.0, 3.0]
    assert ["reply" in r for r in rows] == [True, True, True, False]
    assert rows[1]["reply"] == "reply 2 | done\nbye"
    table = markdown(rows)
    assert table.count("\n") == 4 and "reply 2 \\| done bye" in table

    log = RolloutLog(tmp_path, 0)
    for step in (1, 2, 3):
        log.append(step, rows)
    with open(log.path, "a") as f:
        f.write('{"step": 4, "rollo')  # killed mid-write
    assert [r["step"] for r in RolloutLog(tmp_path, 2).read()] == [1, 2]
    assert RolloutLog(tmp_path, 2).read()[0]["rollouts"] == rows


def test_rl_run_logs_zero_std_groups_and_rollouts(tmp_path, tokenizer_dir):
    over = rl_overrides(
        tokenizer_dir, **{"rollout.tasks": 2, "tracking.rollout_samples": 3}
    )
    cfg = load_config(f"{CONFIG}:steps=2", over)
    run_rl(cfg, tmp_path, progress=False)
    metrics = {r["step"]: r for r in read_metrics(tmp_path / "metrics.jsonl")}
    lines = [
        json.loads(x) for x in (tmp_path / "rollouts.jsonl").read_text().splitlines()
    ]
    assert [x["step"] for x in lines] == [1, 2]
    w = sum(segment_weights(cfg.rl).values())
    for line in lines:
        m, rollouts = metrics[line["step"]], line["rollouts"]
        assert len(rollouts) == 4 and [r["group"] for r in rollouts] == [0, 0, 1, 1]
        assert ["reply" in r for r in rollouts] == [True, True, True, False]
        for name in cfg.rl.reward_names:  # the logged batch means
            mean = np.mean([r["rewards"][name] for r in rollouts])
            assert m[f"rl/reward/{name}"] == pytest.approx(mean, abs=1e-6)
        # brute force: groups whose rollouts share one weighted total reward
        zero = []
        for g in (0, 1):
            totals = {
                float(
                    sum(wj * r["rewards"][k] for wj, k in zip(w, cfg.rl.reward_names))
                )
                for r in rollouts
                if r["group"] == g
            }
            zero.append(len(totals) == 1)
            if all(
                len({r["rewards"][k] for r in rollouts if r["group"] == g}) == 1
                for k in cfg.rl.reward_names
            ):  # every reward equal: GDPO gives the group no advantage
                assert all(
                    abs(r["advantage"]["reply"]) < 1e-6
                    for r in rollouts
                    if r["group"] == g
                )
        assert m["rl/frac_reward_zero_std"] == pytest.approx(np.mean(zero))
    assert any(p.name.startswith("events.out") for p in (tmp_path / "tb").iterdir())
