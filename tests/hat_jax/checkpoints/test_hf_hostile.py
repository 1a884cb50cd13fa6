"""HF folders from strangers: bad config.json, damaged safetensors, an index
pointing outside the folder, each a ValueError naming the file (no traceback
from `hat convert`)."""

import json

import pytest

from hat_jax.checkpoints.hf import load_hf, save_hf
from hat_jax.cli.main import main as hat_main
from hat_jax.models import ModelConfig, build_model
from hat_jax.models.config import load_config

TINY = {
    "model_type": "qwen3", "vocab_size": 32, "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 4,
}  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    model = build_model(ModelConfig.from_hf(TINY))
    return save_hf(model, tmp_path / "m")


@pytest.mark.parametrize(
    "text, why",
    [("[1, 2]", "expected a JSON object"), ("{", "invalid JSON"),
     ('{"model_type": "qwen3"}', "missing key"), (b"\xff", "not UTF-8")],
)  # fmt: skip
def test_bad_config_json_is_named(folder, text, why):
    cfg = folder / "config.json"
    cfg.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError, match=why) as e:
        load_config(folder)
    assert str(cfg) in str(e.value)


def test_damaged_safetensors_is_named(folder):
    (shard,) = folder.glob("*.safetensors")
    shard.write_bytes(b"\x10" + b"\0" * 7 + b"{junk}")
    with pytest.raises(ValueError, match=f"{shard.name}: not a readable"):
        load_hf(folder)


@pytest.mark.parametrize("name", ["../outside.safetensors", "/etc/passwd", "a/b"])
def test_an_index_may_not_point_outside_the_folder(folder, name):
    index = {"weight_map": {"model.embed_tokens.weight": name}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="file names inside the folder"):
        load_hf(folder)


def test_hat_convert_reports_without_traceback(folder, tmp_path, capsys):
    (folder / "config.json").write_text("[1]")
    assert hat_main(["convert", str(folder), str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err
    assert "config.json: expected a JSON object" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
