"""A workdir's checkpoint belongs to its config.json: reruns of another config."""

import argparse
import json
import os
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest

from hat_jax.cli import train_cmd
from hat_jax.cli.config_flags import load_config
from hat_jax.train.metrics import read_metrics
from hat_jax.train.opd import run_opd
from hat_jax.train.sft import run_sft
from hat_jax.train.workdir import (
    ConfigChangeError,
    config_diff,
    open_run,
    saved_steps,
)
from tests.train_helpers import CONFIG, memo_trajectories, opd_overrides, tiny_overrides

SPEC = f"{CONFIG}:steps=2,seq_len=64,batch_size=4"
OPD = "experiments/configs/opd_tiny.py"


def _overrides(memo_jsonl, memo_tokenizer, **kw):
    folder, vocab = memo_tokenizer
    kw = {"train.save_every": 2, "train.decision_every": 0, **kw}
    return tiny_overrides(memo_jsonl, folder, vocab, **kw)


@pytest.fixture(scope="module")
def trained(memo_jsonl, memo_tokenizer, tmp_path_factory):
    """A 2-step SFT workdir (checkpoint at step 2); tests work on copies."""
    workdir = tmp_path_factory.mktemp("trained") / "run"
    cfg = load_config(SPEC, _overrides(memo_jsonl, memo_tokenizer))
    run_sft(cfg, workdir, progress=False)
    return workdir


def _copy(trained, tmp_path):
    return shutil.copytree(trained, tmp_path / "run")


def _snapshot(workdir):
    """Every byte of config.json and metrics.jsonl, and the checkpoint steps."""
    return (
        (workdir / "config.json").read_bytes(),
        (workdir / "metrics.jsonl").read_bytes(),
        saved_steps(workdir),
    )


@pytest.mark.parametrize(
    "spec, change, keys",
    [
        (SPEC, {"optim.lr": 3e-4}, ["optim.lr: 0.001 -> 0.0003"]),
        (SPEC, {"model.hidden_size": 48}, ["model.hidden_size: 32 -> 48"]),
        (SPEC, {"seed": 1}, ["seed: 0 -> 1"]),
        (SPEC, {"data.fixed_harness": True}, ["data.fixed_harness"]),
        # `:steps=` moves the schedule too: an optimiser change
        (SPEC.replace("steps=2", "steps=4"), {}, ["optim.total_steps: 2 -> 4"]),
    ],
)
def test_changed_config_is_refused_and_nothing_written(
    trained, memo_jsonl, memo_tokenizer, tmp_path, spec, change, keys
):
    workdir = _copy(trained, tmp_path)
    before = _snapshot(workdir)
    cfg = load_config(spec, _overrides(memo_jsonl, memo_tokenizer, **change))
    with pytest.raises(ConfigChangeError, match="holds a checkpoint") as e:
        run_sft(cfg, workdir, progress=False)
    for key in keys:
        assert key in str(e.value)
    assert "--fresh" in str(e.value) and "--allow-config-change" in str(e.value)
    assert _snapshot(workdir) == before


def test_cli_refusal_exits_2_and_names_the_keys(
    trained, memo_jsonl, memo_tokenizer, tmp_path, capsys
):
    workdir = _copy(trained, tmp_path)
    before = _snapshot(workdir)
    parser = argparse.ArgumentParser()
    train_cmd.add_arguments(parser)
    over = _overrides(memo_jsonl, memo_tokenizer, **{"optim.weight_decay": 0.5})
    args = parser.parse_args(
        ["sft", f"--config={SPEC}", "--workdir", str(workdir), "--no-progress"]
        + [f"--config.{o}" for o in over]
    )
    assert train_cmd.run(args) == 2
    assert "optim.weight_decay: 0.01 -> 0.5" in capsys.readouterr().err
    assert _snapshot(workdir) == before


def test_allow_config_change_resumes_and_records_the_change(
    trained, memo_jsonl, memo_tokenizer, tmp_path
):
    workdir = _copy(trained, tmp_path)
    old_rows = read_metrics(workdir / "metrics.jsonl")
    change = {"optim.lr": 3e-4, "train.steps": 3, "train.log_every": 2}
    cfg = load_config(SPEC, _overrides(memo_jsonl, memo_tokenizer, **change))
    state, _, _ = run_sft(cfg, workdir, progress=False, allow_config_change=True)
    assert int(state.step) == 3 and saved_steps(workdir) == [2, 3]
    rows = read_metrics(workdir / "metrics.jsonl")
    assert rows[:2] == old_rows  # resumed: steps 1-2 are the first run's
    assert rows[2] == {
        "step": 2,
        "config_change": {
            "optim.lr": {"old": 0.001, "new": 0.0003},
            "optim.total_steps": {"old": 2, "new": 3},  # follows train.steps
            "train.steps": {"old": 2, "new": 3},
        },  # train.log_every changes silently
    }
    assert [r["step"] for r in rows[3:]] == [3] and "train/loss" in rows[3]
    saved = json.loads((workdir / "config.json").read_text())
    assert saved["optim"]["lr"] == 3e-4 and saved["train"]["steps"] == 3


def test_allowed_change_of_shape_fails_clearly_and_keeps_the_record(
    trained, memo_jsonl, memo_tokenizer, tmp_path
):
    """The shapes are compared before orbax restores (in a child process, so
    the output is the user's: no orbax traceback)."""
    workdir = _copy(trained, tmp_path)
    before = _snapshot(workdir)
    over = _overrides(memo_jsonl, memo_tokenizer, **{"model.hidden_size": 48})
    argv = ["train", "sft", f"--config={SPEC}", "--workdir", str(workdir)]
    argv += ["--no-progress", "--allow-config-change"]
    proc = subprocess.run(
        [sys.executable, "-m", "hat_jax.cli.main", *argv]
        + [f"--config.{o}" for o in over],
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "does not fit the state this config builds" in proc.stderr
    assert "holds params." in proc.stderr and "Traceback" not in proc.stderr
    assert _snapshot(workdir) == before  # `hat convert` still reads the old run


def test_longer_run_resumes_to_the_state_of_a_straight_one(
    trained, memo_jsonl, memo_tokenizer, tmp_path
):
    """train.steps alone (the schedule kept: optim.total_steps, which follows
    train.steps, pinned to its old value) resumes, recorded; and ends
    bit-identical to an uninterrupted run of the new length."""
    workdir = _copy(trained, tmp_path)
    change = {"train.steps": 3, "optim.total_steps": 2, "train.keep": 3}
    cfg = load_config(SPEC, _overrides(memo_jsonl, memo_tokenizer, **change))
    resumed, _, _ = run_sft(cfg, workdir, progress=False)
    straight, _, _ = run_sft(cfg, tmp_path / "straight", progress=False)
    for x, y in zip(jax.tree.leaves(resumed), jax.tree.leaves(straight), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    rows = read_metrics(workdir / "metrics.jsonl")
    changes = [r["config_change"] for r in rows if "config_change" in r]
    assert changes == [{"train.steps": {"old": 2, "new": 3}}]
    losses = [r["train/loss"] for r in rows if "train/loss" in r]
    want = [r["train/loss"] for r in read_metrics(tmp_path / "straight/metrics.jsonl")]
    assert losses == want


def test_fresh_deletes_the_old_run_and_starts_over(
    trained, memo_jsonl, memo_tokenizer, tmp_path
):
    workdir = _copy(trained, tmp_path)
    (workdir / "notes.txt").write_text("mine")
    over = _overrides(memo_jsonl, memo_tokenizer, **{"model.hidden_size": 48})
    state, _, _ = run_sft(load_config(SPEC, over), workdir, progress=False, fresh=True)
    assert int(state.step) == 2 and saved_steps(workdir) == [2]
    embed = [x for x in jax.tree.leaves(state.params) if x.ndim == 2][0]
    assert 48 in embed.shape  # the new width, trained from scratch
    rows = read_metrics(workdir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]  # the old rows are gone
    assert (
        json.loads((workdir / "config.json").read_text())["model"]["hidden_size"] == 48
    )
    assert (workdir / "notes.txt").read_text() == "mine"  # not a run output


def test_open_run_writes_nothing_before_commit(tmp_path):
    workdir = tmp_path / "w"
    (workdir / "ckpt" / "4").mkdir(parents=True)
    (workdir / "ckpt" / "6.orbax-checkpoint-tmp").mkdir()  # unfinished: no step
    assert saved_steps(workdir) == [4]
    old = {"optim": {"lr": 1.0}, "train": {"steps": 4}}
    (workdir / "config.json").write_text(json.dumps(old))
    run = open_run(workdir, {"optim": {"lr": 1.0}, "train": {"steps": 8}})
    assert json.loads((workdir / "config.json").read_text()) == old
    assert not (workdir / "metrics.jsonl").exists()
    run.commit(4)
    assert json.loads((workdir / "config.json").read_text())["train"]["steps"] == 8
    row = json.loads((workdir / "metrics.jsonl").read_text())
    assert row == {"step": 4, "config_change": {"train.steps": {"old": 4, "new": 8}}}


def test_a_workdir_without_a_checkpoint_starts_over(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"seed": 0}))
    run = open_run(tmp_path, {"seed": 1})  # no ckpt/: nothing to protect
    run.commit(0)
    written = json.loads((tmp_path / "config.json").read_text())
    assert isinstance(written.pop("provenance"), dict)  # hat_jax.provenance
    assert written == {"seed": 1}
    assert not (tmp_path / "metrics.jsonl").exists()


def test_config_diff_names_dotted_keys_added_and_removed():
    old = {"a": 1, "g": {"x": [1, 2], "y": "s"}, "gone": 0, "e": {}}
    new = {"a": 1, "g": {"x": (1, 3), "y": "s"}, "new": None, "e": {"k": 1}}
    assert config_diff(old, new) == {
        "e": {"old": {}, "new": "<absent>"},
        "e.k": {"old": "<absent>", "new": 1},
        "g.x": {"old": [1, 2], "new": [1, 3]},
        "gone": {"old": 0, "new": "<absent>"},
        "new": {"old": "<absent>", "new": None},
    }
    assert config_diff(old, json.loads(json.dumps(old))) == {}


def test_opd_refuses_a_changed_config(memo_tokenizer, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    lines = [{"prompt": t.user_message} for t in memo_trajectories(4)]
    prompts.write_text("".join(json.dumps(x) + "\n" for x in lines))

    def cfg(**kw):
        over = opd_overrides(prompts, memo_tokenizer, **{"train.save_every": 1}, **kw)
        return load_config(f"{OPD}:steps=1,max_new_tokens=4,batch_size=2", over)

    workdir = tmp_path / "opd"
    run_opd(cfg(), workdir, progress=False)
    before = _snapshot(workdir)
    with pytest.raises(ConfigChangeError, match="divergence: 'reverse_kl' -> 'jsd"):
        run_opd(cfg(divergence="jsd(0.5)"), workdir, progress=False)
    assert _snapshot(workdir) == before


def test_a_longer_run_on_a_new_schedule_is_refused_with_the_way_to_keep_it(
    trained, memo_jsonl, memo_tokenizer, tmp_path
):
    workdir = _copy(trained, tmp_path)
    cfg = load_config(
        SPEC, _overrides(memo_jsonl, memo_tokenizer, **{"train.steps": 3})
    )
    assert cfg.optim.total_steps == 3  # the schedule follows the run's length
    before = _snapshot(workdir)
    with pytest.raises(ConfigChangeError, match="optim.total_steps: 2 -> 3") as e:
        run_sft(cfg, workdir, progress=False)
    assert "also pass --config.optim.total_steps=2" in str(e.value)
    assert _snapshot(workdir) == before
