"""`hat run --print-config` / `hat sweep --print-config RUN`: resolved stage configs."""

import json

import pytest

from experiments.driver import run_cmd, sweep_cmd

CONFIG = "--config=experiments/configs/hat_tiny.py:scale=micro"


def _blocks(out: str) -> dict[str, tuple[str, str]]:
    """{step name: (header line, body)} of the printed plan."""
    found = {}
    for chunk in out.split("\n## ")[1:]:
        head, _, body = chunk.partition("\n")
        found[head.split(" ")[0]] = (head, body)
    return found


def test_run_prints_each_stage_config_and_writes_nothing(tmp_path, capsys):
    root = tmp_path / "runs"
    argv = [CONFIG, "--run", "fixed_sft", "--root", str(root), "--print-config"]
    assert run_cmd.main(argv) == 0
    assert not root.exists()
    out = capsys.readouterr().out
    assert out.startswith("# run fixed_sft:")
    assert "@" not in out  # every step reference resolved to its folder
    blocks = _blocks(out)
    head, body = blocks["sft"]
    assert "(train)" in head and str(root) in head
    assert body.startswith("# stage sft: sft_tiny.py:")
    cfg = json.loads(body.partition("\n")[2])
    assert cfg["train"]["steps"] == 2 and cfg["data"]["fixed_harness"] is True
    assert cfg["data"]["train"].startswith(blocks["sim_hsa"][0].split(" -> ")[1])
    assert cfg["init_from"] == blocks["base"][0].split(" -> ")[1]
    assert json.loads(blocks["tokenizer"][1])["vocab_size"] > 0  # a non-train spec


def test_sweep_prints_the_named_run(tmp_path, capsys):
    root = tmp_path / "runs"
    argv = [CONFIG, "--root", str(root), "--print-config", "hsa_sft"]
    assert sweep_cmd.main(argv) == 0
    assert not root.exists()
    out = capsys.readouterr().out
    assert out.startswith("# run hsa_sft:")
    body = _blocks(out)["sft"][1]
    assert json.loads(body.partition("\n")[2])["data"]["fixed_harness"] is False
    with pytest.raises(ValueError, match="no run 'nope'"):
        sweep_cmd.main([CONFIG, "--root", str(root), "--print-config", "nope"])
