"""Every config in experiments/configs/ builds: get_config, its sweep, its model.

A stage config's model is built abstractly (`nnx.eval_shape`: shapes, no
memory, so the 35B paper model is checked here too). A pipeline config (one
with `steps`) is planned for every run of its sweep, which loads each stage's
config file with its overrides (an unknown key fails here).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest
from flax import nnx

from experiments.driver import pipeline
from experiments.driver.runs import load_runs
from hat_jax.cli.config_flags import _import_file
from hat_jax.models import build_model
from hat_jax.train.build import model_config

CONFIG_DIR = Path(__file__).parents[2] / "experiments" / "configs"
CONFIGS = sorted(p for p in CONFIG_DIR.glob("*.py") if p.name != "__init__.py")
META = {"name", "row", "group", "sft", "opd", "rl", "leave_out", "scale"}


def test_configs_are_found():
    names = {p.name for p in CONFIGS}
    assert {"hat_tiny.py", "hat_small.py", "hat_paper.py", "sft_tiny.py"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_config_builds(path, tmp_path):
    module = _import_file(str(path))
    cfg = module.get_config()
    assert module.__doc__ and "hat " in module.__doc__  # the launch command
    if "steps" in cfg:  # a pipeline: plan every run of its sweep
        runs, has_sweep = load_runs(str(path), tmp_path)
        # the paper's sweeps: 11 runs; a one-run pipeline (world_base): no sweep
        assert len(runs) == (11 if has_sweep else 1)
        for run in runs:
            assert set(run.config.meta) >= META
            assert run.config.eval_step in run.by_name
            for label, step in run.config.stages.items():
                assert run.by_name[step].spec["kind"] == "train", label
        return
    if "model" in cfg:
        model = nnx.eval_shape(lambda: build_model(model_config(cfg)))
        n = sum(x.size for x in jax.tree.leaves(nnx.state(model)))
        assert n > 0


def test_tiny_sweep_shares_its_prefix(tmp_path):
    runs, _ = load_runs(str(CONFIG_DIR / "hat_tiny.py"), tmp_path)
    by = {r.name: r.by_name for r in runs}
    assert len({b["base"].path for b in by.values()}) == 1  # one base model
    assert by["hsa_sft"]["sft"].path == by["hat"]["sft"].path
    assert by["fixed_sft"]["sft"].path != by["hsa_sft"]["sft"].path
    assert by["hsa_sft_opd"]["opd"].path == by["hat"]["opd"].path
    ablation = {r.name for r in runs if r.config.meta.group == "ablation"}
    assert ablation == {f"wo_{d}" for d in ("tools", "skill_ids")} | {
        "wo_skill_content",
        "wo_prompt",
        "wo_hooks",
    }
    # each ablation drops exactly the families of its dimension
    fam = {n: set(by[n][f"sim_wo_{n[3:]}"].spec["families"]) for n in ablation} | {
        "hsa_sft": set(by["hsa_sft"]["sim_hsa"].spec["families"])
    }
    assert fam["wo_tools"] == fam["hsa_sft"] - {
        "tool_renames",
        "schema_reshape",
        "tool_catalog",
    }
    assert fam["wo_hooks"] == fam["hsa_sft"] - {"hook_shift"}
    # OPD's teacher is the base stage
    opd = by["hat"]["opd"].spec["overrides"]
    assert "init_teacher_from=@base" in opd
    assert pipeline.references(by["hat"]["eval"].spec) == ("rl",)


@pytest.mark.parametrize("scale", ["tiny", "compact", "micro"])
def test_every_stage_schedule_follows_its_step_count(tmp_path, scale):
    from experiments.driver.steps import stage_config

    runs, _ = load_runs(f"{CONFIG_DIR / 'hat_tiny.py'}:scale={scale}", tmp_path)
    seen = 0
    for run in runs:
        for step in run.by_name.values():
            if step.spec["kind"] != "train":
                continue
            cfg = stage_config(step.spec)
            inner = int(cfg.rl.inner_steps) if cfg.stage == "rl" else 1
            assert cfg.optim.total_steps == cfg.train.steps * inner, step.name
            assert cfg.optim.warmup_steps < cfg.optim.total_steps, step.name
            seen += 1
    assert seen >= 10


def test_compact_drill_base_starts_from_a_drill_phase(tmp_path):
    """scale=compact_drill: short look-ups first (one shared step), the base
    stage goes on from them on the look-up mix; scale=compact has no drill."""
    path = CONFIG_DIR / "hat_tiny.py"
    runs, _ = load_runs(f"{path}:scale=compact_drill", tmp_path)
    by = {r.name: r.by_name for r in runs}
    assert len({b["drill"].path for b in by.values()}) == 1
    base, drill = by["hat"]["base"].spec, by["hat"]["drill"].spec
    assert "init_from=@drill" in base["overrides"]
    assert not any(o.startswith("model.") for o in base["overrides"])
    assert "data.train=@drill_data/data.jsonl" in drill["overrides"]
    assert by["hat"]["drill_data"].spec["mix"] == "drill"
    assert by["hat"]["base_data"].spec["mix"] == "lookup"
    compact, _ = load_runs(f"{path}:scale=compact", tmp_path / "compact")
    assert all("drill" not in r.by_name for r in compact)
    assert "mix" not in compact[0].by_name["base_data"].spec


def test_compact_num_cuts_numbers_in_groups(tmp_path):
    """scale=compact_num: the tokenizer step cuts numbers in digit groups with
    room for them (3,072 entries, the model's vocabulary too); the other scales'
    tokenizer steps carry no ``digits`` key, so their cached steps keep their
    hashes."""
    path = CONFIG_DIR / "hat_tiny.py"
    runs, _ = load_runs(f"{path}:scale=compact_num", tmp_path)
    tok = runs[0].by_name["tokenizer"].spec
    assert tok["digits"] == "groups" and tok["vocab_size"] == 3072
    assert "model.vocab_size=3072" in runs[0].by_name["drill"].spec["overrides"]
    plan, _ = load_runs(f"{path}:scale=compact_plan", tmp_path / "plan")
    assert "digits" not in plan[0].by_name["tokenizer"].spec
    assert "slips" not in plan[0].by_name["sim_hsa"].spec
    slip, _ = load_runs(f"{path}:scale=compact_slip", tmp_path / "slip")
    assert slip[0].by_name["sim_hsa"].spec["slips"] == 0.3
    assert "digits" not in slip[0].by_name["tokenizer"].spec
    assert "skills_first" not in slip[0].by_name["sim_hsa"].spec
    first, _ = load_runs(f"{path}:scale=compact_first", tmp_path / "first")
    assert first[0].by_name["sim_hsa"].spec["skills_first"] is True
    assert "plan_first" not in first[0].by_name["sim_hsa"].spec
    ahead, _ = load_runs(f"{path}:scale=compact_plan_first", tmp_path / "ahead")
    spec = ahead[0].by_name["sim_hsa"].spec
    assert spec["plan_first"] is True and spec["reply_plan"] is True


def test_hat_small_budgets(tmp_path):
    """hat_small's cpu budget: few SFT steps, 4 cases of the cheapest suites,
    its own scale name (tables say CPU); the gpu budget keeps every suite."""
    path = CONFIG_DIR / "hat_small.py"
    one = dict(use_sweep=False)
    cpu, _ = load_runs(f"{path}:budget=cpu,run=fixed_sft", tmp_path / "cpu", **one)
    ev = cpu[0].by_name["eval"].spec
    assert ev["limit"] == 4 and ev["suites"] == "t1,t2,ifeval,ifeval_proxy"
    assert cpu[0].by_name["sft"].spec["arg"].startswith("steps=6,")
    assert cpu[0].config.meta.scale == "small_cpu"
    gpu, _ = load_runs(f"{path}:run=fixed_sft,sft_steps=40", tmp_path / "gpu", **one)
    assert gpu[0].by_name["eval"].spec["suites"].split(",")[-1] == "ifeval_proxy"
    assert gpu[0].by_name["sft"].spec["arg"].startswith("steps=40,")
    with pytest.raises(ValueError, match="budget must be one of"):
        load_runs(f"{path}:budget=tpu", tmp_path / "bad", **one)


def test_compact_cycles_is_compact_long_with_a_warm_restart(tmp_path):
    """scale=compact_cycles: compact_long's SFT stage, its 3,000 steps in two
    cosine cycles (3e-3, then 1e-3); every other step the same."""
    from experiments.driver.steps import stage_config

    path = CONFIG_DIR / "hat_tiny.py"
    got = {}
    for scale in ("compact_long", "compact_cycles"):
        runs, _ = load_runs(f"{path}:scale={scale},run=fixed_sft", tmp_path / scale)
        got[scale] = {r.name: r.by_name for r in runs}["hat"]
    long, cyc = got["compact_long"], got["compact_cycles"]
    assert set(long) == set(cyc)
    for name in long:
        if name not in ("sft", "opd", "rl", "eval", "mtp", "replay"):
            assert long[name].spec == cyc[name].spec, name
    a, b = stage_config(long["sft"].spec), stage_config(cyc["sft"].spec)
    assert (a.optim.cycles, b.optim.cycles) == (1, 2)
    assert b.optim.cycle_decay == pytest.approx(1 / 3)
    assert a.optim.total_steps == b.optim.total_steps == 3000
    b.optim.cycles, b.optim.cycle_decay = 1, 1.0
    assert a.to_dict() == b.to_dict()


def test_compact_copy_is_compact_cycles_with_a_longer_drill(tmp_path):
    """scale=compact_copy: the look-up drill runs 2,100 steps; the rest is
    compact_cycles."""
    from experiments.configs.hat_tiny import SCALES

    copy, cycles = SCALES["compact_copy"], SCALES["compact_cycles"]
    assert copy["drill"]["arg"]["steps"] == 2100
    assert cycles["drill"]["arg"]["steps"] == 700
    rest = {k: v for k, v in copy.items() if k not in ("drill", "est")}
    assert rest == {k: v for k, v in cycles.items() if k not in ("drill", "est")}
    runs, _ = load_runs(f"{CONFIG_DIR / 'hat_tiny.py'}:scale=compact_copy", tmp_path)
    from experiments.driver.steps import stage_config

    drill = stage_config(runs[0].by_name["drill"].spec)
    assert (drill.train.steps, drill.optim.total_steps) == (2100, 2100)


def test_compact_copy3_continues_compact_copy_with_a_third_cycle(tmp_path):
    """scale=compact_copy3: compact_copy's SFT with a third cycle appended. Its
    learning rate over the first 3,000 steps is compact_copy's, step for step
    (so compact_copy's 3,000-step checkpoint resumed to 4,500 is this run);
    every other block is compact_copy's."""
    from experiments.configs.hat_tiny import SCALES
    from experiments.driver.steps import stage_config
    from hat_jax.train.state import make_schedule

    three, two = SCALES["compact_copy3"], SCALES["compact_copy"]
    rest = {k: v for k, v in three.items() if k not in ("sft", "est")}
    assert rest == {k: v for k, v in two.items() if k not in ("sft", "est")}
    cfgs = []
    for name in ("compact_copy3", "compact_copy"):
        runs, _ = load_runs(f"{CONFIG_DIR / 'hat_tiny.py'}:scale={name}", tmp_path)
        run = next(r for r in runs if r.name == "fixed_sft")
        cfgs.append(stage_config(run.by_name["sft"].spec))
    a, b = cfgs
    assert (a.train.steps, a.optim.total_steps, a.optim.cycles) == (4500, 4500, 3)
    steps = np.arange(0, 3000, 7)
    lr_a, lr_b = make_schedule(a.optim), make_schedule(b.optim)
    assert [float(lr_a(s)) for s in steps] == [float(lr_b(s)) for s in steps]
    assert float(lr_a(3750)) < float(lr_b(2250)) / 2  # the third, lower peak
    for c in (a, b):
        c.train.steps = c.optim.total_steps = c.optim.cycles = 0
    assert a.to_dict() == b.to_dict()
