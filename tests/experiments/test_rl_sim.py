"""HSA-RL through the real simulator with a tiny random model: a step, resume."""

import json

import jax
import numpy as np
import pytest

from experiments.sim_task import SimTask
from hat_jax.cli.config_flags import load_config
from hat_jax.harness import load_harness
from hat_jax.train.metrics import read_metrics
from hat_jax.train.rl_run import run_rl
from hat_jax.train.workdir import ConfigChangeError

CONFIG = "experiments/configs/rl_tiny.py"


def tiny_overrides(tokenizer=None, **kw) -> list[str]:
    base = {
        **({"tokenizer": str(tokenizer)} if tokenizer else {}),
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
    task = SimTask()
    case = task.cases("train", 0, 1)[0]
    ids = set()
    for j in range(4):
        rng = np.random.default_rng([0, j])
        tc = task.bind(case, base, hsa_family=cfg.rollout.hsa_family, rng=rng)
        assert tc.spec is not None and tc.request.harness is tc.harness
        ids.add(tc.harness.id)
    assert base.id not in ids and len(ids) > 1
    assert task.bind(case, base).harness.id == base.id  # no family: the base


def test_one_rl_step_end_to_end(tmp_path, tokenizer_dir):
    cfg = load_config(f"{CONFIG}:steps=1,hsa=True", tiny_overrides(tokenizer_dir))
    state, graphdef, last = run_rl(cfg, tmp_path, progress=False)
    assert int(state.step) == 1 and graphdef is not None
    rows = [
        json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in rows] == [1]
    train = rows[0]
    assert train == {"step": 1, **last}
    assert 0.0 <= train["eval/reward"] <= 1.0
    cases = json.loads((tmp_path / "eval" / "1.json").read_text())  # per case
    assert len(cases) == 2
    acc = np.mean([c["accuracy"] for c in cases])
    assert train["eval/accuracy"] == pytest.approx(acc)
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
    assert train["rl/equal_reward_groups"] in (0.0, 1.0)  # one group
    assert 0.0 <= train["rl/success"] <= 1.0
    assert train["rl/tokens_reply"] + train["rl/tokens_tool"] > 0
    assert (tmp_path / "config.json").exists()
    assert any((tmp_path / "ckpt").iterdir())


def test_resumed_run_is_bit_identical(tmp_path, tokenizer_dir):
    """1 step, then resumed to 2 == 2 straight (a checkpoint every step;
    micro-batches of one episode). Kept to 4 steps: each costs seconds. Under the
    compact rendering (episodes a third as long; the default's step is above)."""
    over = tiny_overrides(
        tokenizer_dir,
        **{
            "rollout.prompt_format": "compact",
            "rollout.compact_results": True,
            "eval.n_cases": 0,  # no evaluation: training only
            "optim.total_steps": 2,  # the same schedule for both lengths
            "train.save_every": 1,
            "rl.micro_batch": 1,
            "optim.lr": 1e-3,  # large enough that the params move visibly
        },
    )
    resumed, straight = tmp_path / "resumed", tmp_path / "straight"
    cfg1 = load_config(f"{CONFIG}:steps=1", over)
    first, _, _ = run_rl(cfg1, resumed, progress=False)
    at1 = jax.tree.map(np.asarray, first.params)
    record = (resumed / "config.json").read_bytes()
    with pytest.raises(ConfigChangeError, match=r"rl\.kl_coef: 0\.01 -> 0\.5"):
        run_rl(load_config(f"{CONFIG}:steps=2,kl_coef=0.5", over), resumed)
    assert (resumed / "config.json").read_bytes() == record  # refused, kept
    cfg = load_config(f"{CONFIG}:steps=2", over)
    a, _, _ = run_rl(cfg, resumed, progress=False)
    b, _, _ = run_rl(cfg, straight, progress=False)
    assert int(a.step) == int(b.step) == 2
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    moved = jax.tree.map(lambda p, q: np.abs(p - q).max(), at1, a.params)
    assert max(jax.tree.leaves(moved)) > 0  # step 2 did train after the resume
    assert sorted(p.name for p in (resumed / "ckpt").iterdir()) == ["1", "2"]
    rows_a = read_metrics(resumed / "metrics.jsonl")
    rows_b = read_metrics(straight / "metrics.jsonl")
    # the longer run (train.steps 1 -> 2, the schedule kept) is recorded
    change = {"step": 1, "config_change": {"train.steps": {"old": 1, "new": 2}}}
    assert rows_a.pop(1) == change
    assert [r["step"] for r in rows_a] == [1, 2]
    # Every metric but the timing; the sampler's log-probs (ratio, gap) show
    # that it resumed with the checkpoint's params.
    timing = ("rl/rollout_s", "rl/step_s", "train/tokens_per_s")
    for ra, rb in zip(rows_a, rows_b, strict=True):
        assert {k: v for k, v in ra.items() if k not in timing} == {
            k: v for k, v in rb.items() if k not in timing
        }


def test_lora_is_rejected_before_any_work(tmp_path):
    cfg = load_config(f"{CONFIG}:steps=1", tiny_overrides(**{"lora.rank": 4}))
    with pytest.raises(ValueError, match="LoRA"):
        run_rl(cfg, tmp_path / "w", progress=False)
    assert not (tmp_path / "w").exists()


def test_gate_accuracy_shaping_pays_accuracy_only_with_content():
    scores = [
        {"accuracy": 1.0, "effectiveness": 0.0, "skill_selection": 1.0},
        {"accuracy": 1.0, "effectiveness": 0.5, "skill_selection": 0.0},
        {"accuracy": 0.0, "effectiveness": 1.0, "skill_selection": 0.5},
    ]
    task = SimTask()
    got = [task.shape(s, "gate_accuracy") for s in scores]
    assert [g["accuracy"] for g in got] == [0.0, 1.0, 0.0]
    assert [g["effectiveness"] for g in got] == [0.0, 0.5, 1.0]
    assert scores[0]["accuracy"] == 1.0  # the judges' rewards are not modified
    assert [task.shape(s, "none") for s in scores] == scores
    with pytest.raises(ValueError, match="rl.shaping"):
        task.shape(scores[0], "nope")


def test_group_metrics_count_groups_without_advantage():
    from hat_jax.train.rl_rollouts import group_metrics

    names = ("accuracy", "effectiveness")

    def r(acc, eff, success=0.0, skill=0.0):  # skill_selection: not in names
        keys = ("accuracy", "effectiveness", "success", "skill_selection")
        return dict(zip(keys, (acc, eff, success, skill)))

    rewards = [
        *(r(1.0, 0.5, skill=0.0), r(1.0, 0.5, skill=1.0)),  # group 0: all equal
        *(r(0.0, 1.0), r(0.0, 0.5)),  # group 1: one effectiveness differs
        *(r(1.0, 1.0, 1.0), r(1.0, 1.0, 1.0)),  # group 2: equal
        *(r(0.0, 0.0), r(1.0, 0.0, 1.0)),  # group 3: accuracy differs
    ]
    groups = [0, 0, 1, 1, 2, 2, 3, 3]
    got = group_metrics(rewards, groups, names)
    assert got == {"rl/equal_reward_groups": 0.5, "rl/success": 3 / 8}
    # groups are told by their ids, not by their positions
    got = group_metrics(rewards, [0, 1, 0, 1, 2, 3, 2, 3], names)
    assert got["rl/equal_reward_groups"] == 0.0
    one = group_metrics(rewards[:3], [0, 0, 0], names)
    assert one["rl/equal_reward_groups"] == 0.0  # one rollout of three differs
    assert group_metrics(rewards[:2], [5, 5], ("skill_selection",)) == {
        "rl/equal_reward_groups": 0.0,
        "rl/success": 0.0,
    }
    with pytest.raises(ValueError):
        group_metrics(rewards, groups[:-1], names)
