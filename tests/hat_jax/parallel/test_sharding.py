"""Sharded train step == single-device step on 8 simulated CPU devices.

The device count is fixed when JAX starts, so the comparison runs in a fresh
process (`sharded_worker.py`) with XLA_FLAGS set; this file checks its report.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jax.sharding import PartitionSpec as P

from hat_jax.models import ModelConfig
from hat_jax.parallel import distributed, get_rules
from hat_jax.parallel.mesh import resolve_sizes as resolve_sizes_for_test
from hat_jax.parallel.plan import param_shapes
from hat_jax.parallel.rules import ShardingReport, spec_for

WORKER = Path(__file__).with_name("sharded_worker.py")
TOL = 1e-5


@pytest.fixture(scope="module")
def reports():
    env = dict(os.environ)
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, str(WORKER)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return {r["name"]: r for r in rows}


@pytest.mark.parametrize("name", ["dense", "moe"])
def test_sharded_step_equals_single_device(reports, name):
    r = reports[name]
    assert r["devices"] == 8
    assert r["loss_diff"] <= TOL
    assert r["grad_diff"] <= TOL and r["grad_max"] > 1e-3  # grads are not all ~0
    assert r["step_loss_diff"] <= TOL
    assert r["param_diff"] <= TOL
    assert r["opt_diff"] <= TOL
    assert r["out_specs_kept"]  # the step returns the state sharded as it came
    assert r["unmatched"] == [] and r["replicated_dims"] == []


def test_params_really_sharded(reports):
    dense, moe = reports["dense"]["specs"], reports["moe"]["specs"]
    assert dense["layers/0/self_attn/q_proj/kernel"] == str(P("fsdp", "tensor"))
    assert dense["embed_tokens/embedding"] == str(P("tensor", "fsdp"))
    assert moe["layers/0/mlp/gate_proj"] == str(P("expert", "fsdp", "tensor"))
    for r in reports.values():
        assert r["n_sharded"] >= r["n_params"] // 2  # all matrices; norms replicated


def _tiny(model_type, **kw):
    base = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
    )
    return ModelConfig(model_type=model_type, **{**base, **kw})


MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
HYBRID = dict(
    MOE,
    layer_types=("linear_attention", "full_attention"),
    shared_expert_intermediate_size=16,
    linear_conv_kernel_dim=4,
    linear_key_head_dim=8,
    linear_value_head_dim=8,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    partial_rotary_factor=0.25,
    mtp_num_hidden_layers=1,
)


@pytest.mark.parametrize(
    "cfg",
    [
        _tiny("llama"),
        _tiny("qwen3"),
        _tiny("qwen3_moe", **MOE),
        _tiny("qwen3_5_moe_text", **HYBRID),
    ],
    ids=["llama", "qwen3", "qwen3_moe", "qwen3_5_moe"],
)
def test_every_param_matches_a_rule(cfg):
    sizes = {"data": 1, "fsdp": 2, "tensor": 2, "expert": 2}
    report = ShardingReport()
    specs = {
        p: spec_for(p, s, sizes, get_rules(cfg.family), report)
        for p, s in param_shapes(cfg).items()
    }
    assert report.unmatched == []
    assert report.replicated_dims == []
    for p, s in specs.items():
        if "norm" in p.rsplit("/", 2)[-2]:
            assert s == P(), p
    if cfg.num_experts:
        assert specs["layers/0/mlp/down_proj"] == P("expert", "tensor", "fsdp")
    if cfg.layer_types:
        assert specs["layers/0/linear_attn/in_proj_qkv/kernel"] == P("fsdp", "tensor")


def test_indivisible_dims_fall_back_to_replication():
    report = ShardingReport()
    spec = spec_for(
        "layers/0/self_attn/q_proj/kernel",
        (30, 64),
        {"fsdp": 4, "tensor": 2},
        get_rules("qwen3"),
        report,
    )
    assert spec == P(None, "tensor")
    assert "dim 0 (30)" in report.replicated_dims[0]
    assert spec_for("some/new/param", (8, 8), {}, get_rules("qwen3"), report) == P()
    assert report.unmatched == ["some/new/param"]
    assert "unmatched" in str(report)


def test_mesh_sizes():
    assert resolve_sizes_for_test(8, fsdp=-1, tensor=2) == {
        "data": 1,
        "fsdp": 4,
        "tensor": 2,
        "expert": 1,
    }
    with pytest.raises(ValueError):
        resolve_sizes_for_test(8, fsdp=3)
    with pytest.raises(ValueError):
        resolve_sizes_for_test(8, fsdp=-1, data=-1)


def test_distributed_initialize_is_a_noop_on_one_host():
    assert distributed.initialize(environ={}) is False
    assert distributed.initialize(environ={"HAT_NUM_PROCESSES": "1"}) is False
