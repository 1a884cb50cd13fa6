"""The agent-task protocol: RL trains in any task, not only the simulator; tasks
load by name with clear errors."""

from types import SimpleNamespace

import pytest

from hat_jax.cli.config_flags import load_config
from hat_jax.harness import TurnRequest, load_harness
from hat_jax.harness.backend import StaticBackend
from hat_jax.train import agent_task
from hat_jax.train.agent_task import TaskCase, load_task
from hat_jax.train.metrics import read_metrics
from hat_jax.train.rl_run import run_rl
from tests.tiny_configs import rl_overrides

NAMES = ("accuracy", "effectiveness", "tool_rationality", "skill_selection")


class EchoTask:
    """A task with no simulator: answer 'ok'; the reward is the reply's length
    parity, so a random policy's rollouts differ and the step has advantages."""

    headline = "success"

    def __init__(self):
        self.bound, self.judged = [], 0

    def cases(self, split, seed, n):
        return [f"{split}-{seed}-{i}" for i in range(n)]

    def bind(self, case, harness, *, hsa_family=None, rng=None):
        self.bound.append((case, hsa_family))
        request = TurnRequest(f"say ok ({case})", harness=harness)
        return TaskCase(case, request=request, harness=harness, tags={"k": "v"})

    def backend(self, *, seed, fault_rate, compact):
        return StaticBackend({})

    def judge(self, case, trajectory):
        self.judged += 1
        odd = float(len(trajectory.reply or "") % 2)
        return {
            k: SimpleNamespace(value=odd, rationale="parity")
            for k in ("success", *NAMES)
        }

    def rewards(self, case, trajectory):
        return {k: v.value for k, v in self.judge(case, trajectory).items()}

    def shape(self, rewards, name):
        return dict(rewards)


def test_rl_trains_in_a_task_that_is_not_the_simulator(tokenizer_dir, tmp_path):
    over = {
        "rollout.task": "no_such_task",  # the object given wins over the name
        "rollout.group": 4,
        "rollout.n_cases": 3,
        "rollout.max_new_tokens": 6,
        "eval.n_cases": 2,
        "eval.max_new_tokens": 6,
        "eval.at_start": False,
    }
    cfg = load_config(
        "experiments/configs/rl_tiny.py:steps=1,hsa=True",
        rl_overrides(tokenizer_dir, **over),
    )
    task = EchoTask()
    state, _, last = run_rl(cfg, tmp_path / "w", progress=False, task=task)
    assert int(state.step) == 1
    # 4 rollouts of the pool's first case (HSA draws asked for some), 2 held out
    assert [c for c, _ in task.bound[:4]] == ["train-0-0"] * 4
    assert {f for _, f in task.bound[:4]} <= {None, "tool_renames"}
    assert [c for c, _ in task.bound[4:]] == ["dev-0-0", "dev-0-1"]
    assert task.judged == 6
    rows = read_metrics(tmp_path / "w" / "metrics.jsonl")
    assert "rl/success" in rows[0] and "eval/success" in last
    assert rows[0]["rl/equal_reward_groups"] in (0.0, 1.0)


def test_unknown_and_broken_tasks_are_clear_errors(monkeypatch):
    assert load_task("sim").headline == "success"  # setup.py's entry point
    with pytest.raises(ValueError, match=r"unknown agent task 'nope'; have \["):
        load_task("nope")
    fake = [SimpleNamespace(name="ghost", value="no_such_package_xyz.mod:Task")]
    monkeypatch.setattr(agent_task, "entry_points", lambda group: fake)
    with pytest.raises(ValueError, match="agent task 'ghost'.*ModuleNotFoundError"):
        load_task("ghost")


def test_the_simulator_task_binds_base_and_variants():
    task = load_task("sim")
    base = load_harness("taolive_v1")
    case = task.cases("train", 0, 1)[0]
    tc = task.bind(case, base)
    assert tc.harness.id == base.id and tc.spec is None
    assert tc.request.harness is tc.harness and tc.tags["intent"]
