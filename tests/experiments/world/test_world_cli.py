"""`hat world base|prompts|tokenizer` through experiments.world.world_cmd."""

import os

import pytest

from experiments.world.tokenizer import MAX_VOCAB, MIN_VOCAB, train_tokenizer
from experiments.world.world_cmd import main
from hat_jax.train.build import load_tokenizer


def test_cli_writes_all_three(tmp_path, capsys, world_files):
    base, prompts = tmp_path / "b.jsonl", tmp_path / "p.jsonl"
    assert main(["base", "--n", "30", "--seed", "2", "--out", str(base)]) == 0
    assert f"wrote 30 base trajectories to {base} (instruct=" in capsys.readouterr().out
    assert main(["prompts", "--n", "20", "--seed", "2", "--out", str(prompts)]) == 0
    assert "wrote 20 prompts" in capsys.readouterr().out
    out = tmp_path / "tok"
    argv = ["tokenizer", str(world_files["sim"]), str(base), str(prompts)]
    assert main([*argv, "--vocab-size", "600", "--out", str(out)]) == 0
    assert "-token BPE on 3 file(s)" in capsys.readouterr().out
    assert load_tokenizer(str(out)).vocab_size <= 600


def test_cli_errors(tmp_path, capsys):
    def error(argv: list[str]) -> str:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("hat world: error: ") and "Traceback" not in err
        return err

    missing = tmp_path / "missing.jsonl"
    assert f"{missing}: no such file" in error(
        ["tokenizer", str(missing), "--out", str(tmp_path)]
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": "hi"}\n')
    assert "bad.jsonl:1: expected a trajectory" in error(
        ["tokenizer", str(bad), "--out", str(tmp_path / "t")]
    )


@pytest.mark.parametrize("kind", ["devnull", "fifo", "folder"])
def test_tokenizer_input_that_is_not_a_regular_file(tmp_path, capsys, kind):
    path = {"devnull": "/dev/null", "fifo": tmp_path / "f", "folder": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    assert main(["tokenizer", str(path), "--out", str(tmp_path / "t")]) == 1
    err = capsys.readouterr().err
    assert f"{path}: not a regular file (a fifo, device or folder" in err
    assert "no such file" not in err and not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tokenizer", "x.jsonl", "--vocab-size", "1e20"],
         "argument --vocab-size: expected an integer, got '1e20'"),
        (["tokenizer", "x.jsonl", "--vocab-size", str(10**12)],
         f"argument --vocab-size: expected an integer 272..{MAX_VOCAB}, got "
         f"{10**12}"),
        (["tokenizer", "x.jsonl", "--vocab-size", "4294967400"],
         "argument --vocab-size: expected an integer 272.."),
        (["tokenizer", "x.jsonl", "--vocab-size", "100"],
         "argument --vocab-size: expected an integer 272.."),
        (["base", "--n", "0", "--out", "x.jsonl"],
         "argument --n: expected an integer 1..10000000, got 0"),
        (["prompts", "--n", "10", "--seed", "-1", "--out", "x.jsonl"],
         "argument --seed: expected an integer 0..4294967295, got -1"),
    ],
)  # fmt: skip
def test_bad_flags_are_usage_errors(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)  # nothing may be written even by mistake
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("vocab", [MIN_VOCAB - 1, MAX_VOCAB + 1, 2**31 - 1, 2.5])
def test_train_tokenizer_refuses_a_vocab_size_out_of_range(tmp_path, vocab):
    with pytest.raises(ValueError, match="vocab_size must be"):
        train_tokenizer([tmp_path / "x.jsonl"], vocab_size=vocab, out=tmp_path / "t")
    assert not (tmp_path / "t").exists()
