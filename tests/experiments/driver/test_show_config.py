"""`hat run --print-config` / `hat sweep --print-config RUN`: resolved stage configs."""

import json
from pathlib import Path

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
    assert sweep_cmd.main([CONFIG, "--root", str(root), "--print-config", "nope"]) == 1
    assert "hat sweep: error: " in (err := capsys.readouterr().err)
    assert "no run 'nope'" in err


CONFIG_DIR = Path(__file__).resolve().parents[3] / "experiments" / "configs"
CONFIGS = sorted(p.name for p in CONFIG_DIR.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_prints_its_resolved_config(name, tmp_path, capsys, monkeypatch):
    """Pipeline configs through `hat run --print-config`, stage configs through
    `hat train STAGE --print-config`; nothing is written either way."""
    from hat_jax.cli.config_flags import load_config
    from hat_jax.cli.main import main

    monkeypatch.chdir(tmp_path)
    path = str(CONFIG_DIR / name)
    stage = load_config(path, []).get("stage")
    if stage is None:
        argv = ["run", f"--config={path}", "--root", "runs", "--print-config"]
    else:
        argv = ["train", stage, f"--config={path}", "--print-config"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.strip()
    if stage is not None:
        assert json.loads(out)["stage"] == stage
    else:
        assert out.startswith("# run ")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_train_without_a_workdir_is_refused_by_name(capsys):
    from hat_jax.cli.main import main

    argv = ["train", "sft", "--config=experiments/configs/sft_tiny.py"]
    assert main(argv) == 2
    assert "--workdir is required" in capsys.readouterr().err
