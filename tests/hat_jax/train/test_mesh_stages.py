"""SFT, OPD and RL with `cfg.mesh`: on 8 simulated CPU devices (a subprocess, since
XLA_FLAGS must be set before JAX starts) each stage's sharded run equals its
single-device run and resumes bit-identically after a crash."""

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_collections
import pytest

from hat_jax.parallel.placement import mesh_from_config
from tests.tiny_configs import rl_overrides
from tests.train_helpers import CONFIG, memo_trajectories, opd_overrides, tiny_overrides

WORKER = Path(__file__).with_name("mesh_worker.py")


def run_worker(stage: str, root: Path, spec: str, overrides: list[str]) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_DEFAULT_MATMUL_PRECISION="highest")
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )
    proc = subprocess.run(
        [sys.executable, str(WORKER), stage, str(root), spec, *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check(r: dict, steps: int, tol: float = 1e-5) -> None:
    assert r["devices"] == 8
    assert r["max_param_diff"] <= tol, r["max_param_diff"]
    assert len(r["losses_mesh"]) == steps
    for a, b in zip(r["losses_one"], r["losses_mesh"], strict=True):
        assert abs(a - b) <= tol * max(1.0, abs(a))
    assert r["resumed_bit_identical"] and r["resumed_rows_equal"]
    # really sharded: the embedding over fsdp, the attention projections over tensor
    assert any("fsdp" in s for s in r["specs"].values()), r["specs"]
    assert any("tensor" in s for s in r["specs"].values()), r["specs"]


def test_sft_on_a_mesh_equals_one_device_and_resumes(
    memo_jsonl, memo_tokenizer, tmp_path
):
    folder, vocab = memo_tokenizer
    spec = f"{CONFIG}:steps=5,seq_len=64,batch_size=4"
    overrides = tiny_overrides(memo_jsonl, folder, vocab, **{"train.save_every": 2})
    check(run_worker("sft", tmp_path, spec, overrides), steps=5)


def test_opd_on_a_mesh_equals_one_device_and_resumes(memo_tokenizer, tmp_path):
    """Rollouts sampled on the sharded student, the teacher sharded beside it."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(
        "".join(
            json.dumps({"prompt": t.user_message}) + "\n" for t in memo_trajectories(8)
        )
    )
    spec = "experiments/configs/opd_tiny.py:steps=4,max_new_tokens=8,batch_size=4"
    overrides = opd_overrides(prompts, memo_tokenizer, **{"train.save_every": 2})
    check(run_worker("opd", tmp_path / "runs", spec, overrides), steps=4)


def test_rl_on_a_mesh_equals_one_device_and_resumes(tokenizer_dir, tmp_path):
    """HSA-RL through the simulator: 4 rollouts a step, split over data x fsdp."""
    over = {"rollout.group": 4, "train.save_every": 2, "optim.lr": 1e-3}
    overrides = rl_overrides(tokenizer_dir, **over)
    spec = "experiments/configs/rl_tiny.py:steps=4"
    # 1e-4: AdamW divides each gradient by its own scale, so a rounding
    # difference in a small gradient entry shows at the scale of lr (1e-3)
    check(run_worker("rl", tmp_path, spec, overrides), steps=4, tol=1e-4)


def test_mesh_config_errors():
    cfg = ml_collections.ConfigDict({"mesh": {"data": 1, "fsdp": 1}})
    assert mesh_from_config(cfg) is None  # all 1: the plain single-device jit
    with pytest.raises(ValueError, match="unknown axes"):
        mesh_from_config(ml_collections.ConfigDict({"mesh": {"dp": 2}}))
