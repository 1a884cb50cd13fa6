"""Workdirs and stage configs that no run can use: sizes past a sane cap, a
config.json that is not one, outputs that are symlinks (never followed by
--fresh), each refused naming the key or the file, before any work."""

import json
import os
import re

import pytest

from hat_jax.cli.config_flags import load_config
from hat_jax.cli.main import main as hat_main
from hat_jax.train.workdir import RunConfigError, check_config, open_run
from tests.train_helpers import CONFIG

OPD = "experiments/configs/opd_tiny.py"
RL = "experiments/configs/rl_tiny.py"


@pytest.mark.parametrize(
    "spec, overrides, message",
    [
        (f"{CONFIG}:seq_len=100000000000000", [],
         "seq_len=100000000000000 (must be <= 1048576)"),
        (f"{CONFIG}:seq_len=4097", [],
         "seq_len=4097 is longer than model.max_position_embeddings=4096"),
        (f"{CONFIG}:batch_size=1000000", [], "batch_size=1000000 (must be <= 65536)"),
        (f"{CONFIG}:batch_size=65536,seq_len=4096", [],
         "batch_size * seq_len = 65536 * 4096 tokens per step (must be <= 134217728)"),
        (f"{CONFIG}:steps=10000000000", [], "train.steps=10000000000 (must be <= "),
        (CONFIG, ["model.num_hidden_layers=100000000"],
         "model: num_hidden_layers: expected an integer 1..1024, got 100000000"),
        (CONFIG, ["model.vocab_size=4294967400"],
         "model.vocab_size=4294967400 (must be <= 2147483647)"),
        (CONFIG, ["model.hidden_size=2000000"],
         "model: hidden_size: expected an integer 1..1048576, got 2000000"),
        (CONFIG, ["model.num_attention_heads=3"],
         "model: num_attention_heads 3 is not divisible by num_key_value_heads 2"),
        (CONFIG, ["model.rope_theta=-1.0"], "model: rope_theta: expected a number > 0"),
        (CONFIG, ["compute_dtype=int8"], "compute_dtype='int8' (must be one of"),
        (f"{OPD}:batch_size=100000", [], "batch_size=100000 (must be <= 65536)"),
        (f"{OPD}:max_new_tokens=10000000", [], "sampling.max_new_tokens=10000000"),
        (f"{RL}:group=1000000", [], "rollout.group=1000000 (must be <= 65536)"),
        (CONFIG, ["optim.b1=2.0"], "optim.b1=2.0 (must be in [0, 1))"),
        (CONFIG, ["optim.b2=-0.5"], "optim.b2=-0.5 (must be in [0, 1))"),
        (CONFIG, ["optim.eps=0.0"], "optim.eps=0.0 (must be in (0, 1))"),
        (CONFIG, ["loss_share=1.5"], "loss_share=1.5 (must be in [0, 1])"),
        (CONFIG, ["loss_share=-0.1"], "loss_share=-0.1 (must be in [0, 1])"),
        (RL, ["rl.max_len=5000"],
         "rl.max_len=5000 is longer than model.max_position_embeddings=4096"),
    ],
)  # fmt: skip
def test_sizes_past_their_cap_name_the_key(spec, overrides, message):
    with pytest.raises(RunConfigError, match="config error: .*" + re.escape(message)):
        check_config(load_config(spec, overrides))


def test_a_model_from_elsewhere_is_capped_but_not_compared(tmp_path):
    cfg = load_config(f"{CONFIG}:seq_len=8192", ["init_from=some/workdir"])
    check_config(cfg)  # its max_position_embeddings is unknown before loading
    cfg = load_config(f"{CONFIG}:seq_len=2000000", ["init_from=some/workdir"])
    with pytest.raises(RunConfigError, match="seq_len=2000000 .must be <= 1048576"):
        check_config(cfg)


def test_cli_refuses_a_huge_seq_len_before_any_work(tmp_path, capsys):
    workdir = tmp_path / "w"
    argv = ["train", "sft", f"--config={CONFIG}:seq_len=100000000000000"]
    rc = hat_main([*argv, "--workdir", str(workdir)])
    err = capsys.readouterr().err
    assert rc == 2 and "seq_len=100000000000000 (must be <= 1048576)" in err
    assert "Traceback" not in err and not workdir.exists()


def _workdir(tmp_path, config: str | None) -> object:
    """A workdir holding a (fake) step-2 checkpoint and `config` as config.json."""
    workdir = tmp_path / "run"
    (workdir / "ckpt" / "2").mkdir(parents=True)
    if config is not None:
        (workdir / "config.json").write_text(config)
    return workdir


@pytest.mark.parametrize(
    "text, message",
    [("{", "config.json:1: invalid JSON"), ("[1, 2]", "config.json: expected a JSON "
      "object, got list"), ('{"a": 1}\n{"b": 2}', "config.json:2: invalid JSON")],
)  # fmt: skip
def test_a_corrupt_config_json_on_resume_is_named_with_fresh(tmp_path, text, message):
    workdir = _workdir(tmp_path, text)
    with pytest.raises(RunConfigError) as e:
        open_run(workdir, {"seed": 0})
    assert str(e.value).startswith(str(workdir / "config.json"))
    assert message in str(e.value) and "--fresh" in str(e.value)
    assert (workdir / "config.json").read_text() == text  # nothing rewritten


def test_a_corrupt_config_json_starts_over_with_fresh(tmp_path):
    workdir = _workdir(tmp_path, "{")
    run = open_run(workdir, {"seed": 0}, fresh=True)
    assert run.changes == {} and not (workdir / "ckpt").exists()


def test_a_config_json_fifo_is_refused_not_read(tmp_path):
    workdir = _workdir(tmp_path, None)
    os.mkfifo(workdir / "config.json")
    with pytest.raises(RunConfigError, match="config.json: not a regular file"):
        open_run(workdir, {"seed": 0})  # reading it would block for ever


@pytest.mark.parametrize("name", ["eval", "tb", "ckpt", "metrics.jsonl"])
def test_fresh_removes_a_linked_output_not_its_target(tmp_path, name):
    workdir = _workdir(tmp_path, "{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's")
    link = workdir / name
    if link.exists():
        (workdir / "ckpt" / "2").rmdir()
        link.rmdir()
    target = outside if name != "metrics.jsonl" else outside / "keep.txt"
    link.symlink_to(target)
    with pytest.raises(RunConfigError, match=f"{name} is a symbolic link"):
        open_run(workdir, {"seed": 0})  # a resume never writes through it
    open_run(workdir, {"seed": 0}, fresh=True)
    assert not link.is_symlink() and not link.exists()
    assert (outside / "keep.txt").read_text() == "not the run's"


@pytest.mark.parametrize(
    "record, message",
    [
        ("{", "config.json:1: invalid JSON"),
        ("[]", "config.json: expected a JSON object, got list"),
        ('{"optim": {}}', "config.json: expected an object 'model'"),
        ('{"model": {"bogus": 1}, "optim": {}}', "config.json: model: unknown key"),
        (
            json.dumps({"optim": {}, "model": {
                "model_type": "qwen3", "vocab_size": 32, "hidden_size": 8,
                "intermediate_size": 16, "num_hidden_layers": 1, "head_dim": 4,
                "num_attention_heads": 0, "num_key_value_heads": 1}}),
            "config.json: model: num_attention_heads: expected an integer 1..",
        ),
    ],
)  # fmt: skip
def test_hat_convert_of_a_damaged_workdir_names_its_config(
    tmp_path, capsys, record, message
):
    workdir = _workdir(tmp_path, record)
    rc = hat_main(["convert", str(workdir), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert f"hat convert: error: {workdir}/" in err and message in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "spec, overrides, total",
    [
        (CONFIG, ["train.steps=1000"], 1000),
        (OPD, ["train.steps=70"], 70),
        (RL, ["train.steps=9", "rl.inner_steps=2"], 18),  # the schedule counts updates
        (CONFIG, ["train.steps=1000", "optim.total_steps=50"], 50),  # set: kept
    ],
)
def test_the_schedule_follows_the_run_length(spec, overrides, total, capsys):
    cfg = load_config(spec, overrides)
    assert cfg.optim.total_steps == total
    check_config(cfg)
    note = capsys.readouterr().err
    assert ("ends the schedule before the run" in note) == (total == 50)
    if total == 50:
        assert "the last 950 run at optim.lr x optim.end_lr_frac" in note
