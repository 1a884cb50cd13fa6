"""`hat world base|prompts|tokenizer` through experiments.world.cli."""

import pytest

from experiments.world.cli import main
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


def test_cli_errors(tmp_path):
    with pytest.raises(ValueError, match="--n must be positive"):
        main(["base", "--n", "0", "--out", str(tmp_path / "x.jsonl")])
    with pytest.raises(ValueError, match="no such file"):
        main(["tokenizer", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": "hi"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1: expected a trajectory"):
        main(["tokenizer", str(bad), "--out", str(tmp_path / "t")])
    with pytest.raises(ValueError, match="vocab_size must exceed"):
        main(["tokenizer", str(bad), "--vocab-size", "100", "--out", str(tmp_path)])
