"""`hat plan` for the paper's Qwen3.6-35B-A3B config on 8xH20 and 8xH200."""

import math
from pathlib import Path

import pytest

from hat_jax.cli.config_flags import load_config
from hat_jax.cli.main import main
from hat_jax.parallel.plan import make_plan, param_shapes
from hat_jax.train.build import model_config

CONFIG = str(Path(__file__).parents[3] / "experiments/configs/paper_35b.py")


@pytest.fixture(scope="module")
def cfg():
    return model_config(load_config(CONFIG))


@pytest.fixture(scope="module")
def shapes(cfg):
    return param_shapes(cfg)


@pytest.fixture
def shapes_once(monkeypatch, cfg, shapes):
    """`hat plan` reuses the module's shapes for the same config: tracing the 35B
    model takes seconds a call (param_shapes itself is tested above)."""
    from hat_jax.parallel import plan

    monkeypatch.setattr(
        plan, "param_shapes", lambda c: shapes if c == cfg else param_shapes(c)
    )


def _analytic_params(c) -> int:
    """Qwen3.5-MoE parameter count written out by hand (independent of the code)."""
    d, e, f, fs = c.hidden_size, c.num_experts, c.moe_intermediate_size, 512
    n, k, h = c.num_attention_heads, c.num_key_value_heads, c.head_dim
    attn = d * 2 * n * h + 2 * d * k * h + n * h * d + 2 * h
    kd = c.linear_num_key_heads * c.linear_key_head_dim
    hv, dv = c.linear_num_value_heads, c.linear_value_head_dim
    conv = 2 * kd + hv * dv
    gdn = d * conv + d * hv * dv + 2 * d * hv + conv * 4 + 2 * hv + dv + hv * dv * d
    moe = 3 * e * d * f + d * e + 3 * d * fs + d
    norms = 2 * d
    n_full = sum(t == "full_attention" for t in c.layer_types)
    layers = n_full * attn + (40 - n_full) * gdn + 40 * (moe + norms)
    mtp = 2 * d * d + attn + moe + norms + 3 * d
    return 2 * c.vocab_size * d + layers + d + mtp


def test_param_count_is_35b(cfg, shapes):
    total = sum(math.prod(s) for s in shapes.values())
    assert total == _analytic_params(cfg)
    assert 34.5e9 < total < 36.5e9


def test_per_device_bytes_by_brute_force(cfg, shapes):
    plan = make_plan(cfg, {"fsdp": 8}, shapes=shapes)
    rows = {name: dev for name, _, dev in plan.rows}
    total = sum(math.prod(s) for s in shapes.values())
    # Every matrix is split 8 ways; 1-D leaves (norms, dt) and the DeltaNet conv
    # filters (split on tensor only) may stay whole.
    small = sum(math.prod(s) for p, s in shapes.items() if len(s) == 1 or "conv1d" in p)
    per_dev = rows["params, fp32 master"] / 4
    assert (total - small) / 8 <= per_dev <= (total - small) / 8 + small
    assert rows["AdamW m + v, fp32"] == 2 * rows["params, fp32 master"]
    assert plan.train_bytes == pytest.approx(sum(list(rows.values())[:5]))


def test_remat_and_dense_moe_change_activations(cfg, shapes):
    low = make_plan(cfg, {"fsdp": 8}, shapes=shapes, remat=True).rows[4][2]
    high = make_plan(cfg, {"fsdp": 8}, shapes=shapes, remat=False).rows[4][2]
    dense = make_plan(
        cfg, {"fsdp": 8}, shapes=shapes, remat=False, moe_impl="dense"
    ).rows[4][2]
    assert low < high < dense


@pytest.mark.parametrize("hw,gb", [("h20", 96), ("h200", 141)])
def test_hat_plan_cli(capsys, shapes_once, hw, gb):
    assert main(["plan", f"--config={CONFIG}", "--devices", "8", "--hardware", hw]) == 0
    out = capsys.readouterr().out
    assert "35.51B params on 8 devices" in out
    assert f"8x{hw.upper()} ({gb} GB): train" in out
    assert "| AdamW m + v, fp32" in out and "rollout: KV cache" in out
    # the config's model.moe_impl (topk) decides the note; no stale claim
    assert "note: moe_impl=topk: each token runs through its top-8 of 256" in out
    assert "until top-k dispatch lands" not in out and "today: +" not in out
    assert "remat=True, moe_impl=topk" in out


def test_notes_follow_the_moe_impl_and_remat(cfg, shapes):
    def notes(**kw):
        return "\n".join(make_plan(cfg, {"fsdp": 8}, shapes=shapes, **kw).notes)

    topk, dense = notes(moe_impl="topk"), notes(moe_impl="dense")
    assert "moe_impl=dense would add" in topk and "every one" not in topk
    assert "every one of the 256 experts runs on every token" in dense
    assert "moe_impl=topk (top-8 dispatch) would save" in dense
    assert "one layer's at a time (remat)" in topk
    assert "10 layers'" in notes(remat=False)  # the config's full-attention layers
    assert "twice the bf16 estimate" in notes(compute_dtype="float32")
    assert "twice" not in topk


def test_hat_plan_device_memory(capsys, shapes_once):
    argv = ["plan", f"--config={CONFIG}", "--device-memory", "40GB", "--mesh", "fsdp=8"]
    assert main(argv) == 0
    assert "DOES NOT FIT" in capsys.readouterr().out
