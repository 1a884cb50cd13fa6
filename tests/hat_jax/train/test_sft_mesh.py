"""`hat train sft` with `cfg.mesh`: on 8 simulated CPU devices (a subprocess, since
XLA_FLAGS must be set before JAX starts) the sharded run equals the single-device
one and resumes bit-identically after a crash."""

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_collections
import pytest
from conftest import CONFIG, tiny_overrides

from hat_jax.parallel.placement import mesh_from_config


def test_mesh_run_equals_one_device_and_resumes(memo_jsonl, memo_tokenizer, tmp_path):
    folder, vocab = memo_tokenizer
    spec = f"{CONFIG}:steps=5,seq_len=64,batch_size=4"
    overrides = tiny_overrides(memo_jsonl, folder, vocab, **{"train.save_every": 2})
    worker = Path(__file__).with_name("mesh_sft_worker.py")
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_DEFAULT_MATMUL_PRECISION="highest")
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    proc = subprocess.run(
        [sys.executable, str(worker), str(tmp_path), spec, *overrides],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["devices"] == 8
    assert r["max_param_diff"] <= 1e-5, r["max_param_diff"]
    assert len(r["losses_mesh"]) == 5
    for a, b in zip(r["losses_one"], r["losses_mesh"], strict=True):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(a))
    assert r["resumed_bit_identical"]
    # really sharded: the embedding over fsdp, the attention projections over tensor
    assert any("fsdp" in s for s in r["specs"].values()), r["specs"]
    assert any("tensor" in s for s in r["specs"].values()), r["specs"]


def test_mesh_config_errors():
    cfg = ml_collections.ConfigDict({"mesh": {"data": 1, "fsdp": 1}})
    assert mesh_from_config(cfg) is None  # all 1: the plain single-device jit
    with pytest.raises(ValueError, match="unknown axes"):
        mesh_from_config(ml_collections.ConfigDict({"mesh": {"dp": 2}}))
