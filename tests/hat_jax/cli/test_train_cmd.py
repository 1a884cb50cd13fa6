"""`hat train STAGE`: built-in and entry-point stages; a 1-step `hat train rl`."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from hat_jax.cli import main as hat_main
from hat_jax.cli import train_cmd
from hat_jax.train.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[3]


def test_stages_merge_entry_points_with_builtins():
    table = train_cmd.stages()
    assert table["sft"] == "hat_jax.train.sft:run_sft"
    assert table["opd"] == "hat_jax.train.opd:run_opd"
    assert table["rl"] == "hat_jax.train.rl_run:run_rl"  # its task: hat.tasks
    assert callable(train_cmd.load_runner(table["rl"]))


def test_a_plugin_cannot_replace_a_builtin_stage(monkeypatch):
    fake = [
        SimpleNamespace(name="sft", value="elsewhere:run"),
        SimpleNamespace(name="new", value="pkg.mod:run_new"),
    ]
    monkeypatch.setattr(train_cmd, "entry_points", lambda group: fake)
    table = train_cmd.stages()
    assert table["sft"] == "hat_jax.train.sft:run_sft"
    assert table["new"] == "pkg.mod:run_new"


def test_bad_runner_specs():
    with pytest.raises(ValueError, match="module:function"):
        train_cmd.load_runner("hat_jax.train.sft")
    with pytest.raises(ImportError):
        train_cmd.load_runner("no_such_package_xyz.mod:run")


def test_uninstalled_plugin_stage_is_a_clear_error(monkeypatch, tmp_path, capsys):
    fake = [SimpleNamespace(name="ghost", value="no_such_package_xyz.mod:run")]
    monkeypatch.setattr(train_cmd, "entry_points", lambda group: fake)
    cfg = ROOT / "experiments" / "configs" / "sft_tiny.py"
    argv = ["train", "ghost", f"--config={cfg}", "--workdir", str(tmp_path / "w")]
    assert hat_main.main(argv) == 2
    err = capsys.readouterr().err
    assert "stage 'ghost'" in err and "no_such_package_xyz" in err


def test_hat_train_rl_one_step(tmp_path, capsys):
    from hat_jax.train.build import load_tokenizer

    tok = tmp_path / "tokenizer"
    load_tokenizer("smollm2-135m-instruct").save(tok)  # faster to load than the GGUF
    work = tmp_path / "rl"
    overrides = {
        "tokenizer": str(tok),
        "model.hidden_size": 32,
        "model.intermediate_size": 64,
        "model.head_dim": 8,
        "rollout.group": 2,
        "rollout.n_cases": 2,
        "rollout.max_new_tokens": 8,
        "eval.n_cases": 0,  # no evaluation: the run only
        "rl.on_mismatch": "splice",  # a random model's outputs never round-trip
    }
    argv = [
        "train",
        "rl",
        f"--config={ROOT / 'experiments' / 'configs' / 'rl_tiny.py'}:steps=1",
        "--workdir",
        str(work),
        "--no-progress",
        *(f"--config.{k}={v}" for k, v in overrides.items()),
    ]
    assert hat_main.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("trained 1 steps; last loss ") and str(work) in out
    rows = read_metrics(work / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1] and "eval/reward" not in rows[0]
    assert (work / "ckpt" / "1").is_dir() and (work / "config.json").exists()


@pytest.mark.parametrize(
    "flags, want",
    [
        ([], {}),
        (["--fresh"], {"fresh": True}),
        (["--allow-config-change"], {"allow_config_change": True}),
    ],
)
def test_workdir_flags_reach_the_runner_only_when_given(monkeypatch, flags, want):
    """A plugin runner that takes neither flag still runs without them."""
    seen = {}

    def runner(cfg, workdir, **kw):
        seen.update(kw)
        return None, None, {"train/loss": 1.0}

    monkeypatch.setattr(train_cmd, "stages", lambda: {"fake": "m:f"})
    monkeypatch.setattr(train_cmd, "load_runner", lambda spec: runner)
    cfg = ROOT / "experiments" / "configs" / "sft_tiny.py"
    argv = ["train", "fake", f"--config={cfg}", "--workdir", "w", *flags]
    assert hat_main.main(argv) == 0
    assert seen == {"progress": True, **want}
