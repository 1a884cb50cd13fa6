"""A HF config.json from elsewhere: every size a positive integer of sane size, the
heads dividing, RoPE and epsilon numbers, each refused as `config.json: key: ...`
(no ZeroDivisionError, no hang building 10**8 layers, no NaN kept)."""

import json

import pytest

from hat_jax.checkpoints.hf import save_hf
from hat_jax.cli.main import main as hat_main
from hat_jax.models import ModelConfig, build_model
from hat_jax.models.config import config_from_fields, load_config

TINY = {
    "model_type": "qwen3", "vocab_size": 32, "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 4,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
}  # fmt: skip
NAN, INF = float("nan"), float("inf")


def _write(tmp_path, **change):
    hf = {**TINY, **change}
    hf = {k: v for k, v in hf.items() if v is not ...}  # ...: the key is removed
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf))  # NaN / Infinity as Python's json writes them
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_attention_heads": 0, "head_dim": ...},
         "num_attention_heads: expected an integer 1..16384, got 0"),
        ({"num_attention_heads": 0}, "num_attention_heads: expected an integer 1.."),
        ({"hidden_size": True},
         "hidden_size: expected an integer 1..1048576, got True"),
        ({"hidden_size": 8.0}, "hidden_size: expected an integer 1..1048576, got 8.0"),
        ({"hidden_size": None},
         "hidden_size: expected an integer 1..1048576, got null"),
        ({"num_hidden_layers": 10**8},
         "num_hidden_layers: expected an integer 1..1024"),
        ({"vocab_size": 2**31}, "vocab_size: expected an integer 1..2147483647"),
        ({"vocab_size": 1e20},
         "vocab_size: expected an integer 1..2147483647, got 1e+20"),
        ({"num_key_value_heads": -1}, "num_key_value_heads: expected an integer 1.."),
        ({"head_dim": "4"}, "head_dim: expected an integer 1..1048576, got '4'"),
        ({"intermediate_size": -5}, "intermediate_size: expected an integer 0.."),
        ({"intermediate_size": 0},
         "intermediate_size: expected >= 1 (a layer has a dense MLP)"),
        ({"max_position_embeddings": 0},
         "max_position_embeddings: expected an integer 1.."),
        ({"num_key_value_heads": 3, "num_attention_heads": 4},
         "num_attention_heads 4 is not divisible by num_key_value_heads 3"),
        ({"hidden_size": 9, "head_dim": ...},
         "hidden_size 9 is not divisible by num_attention_heads 2 (and no head_dim"),
        ({"vocab_size": ...}, "missing key 'vocab_size'"),
        ({"rope_parameters": "ab"},
         "rope_parameters: expected an object or null, got 'ab'"),
        ({"rope_parameters": {"rope_theta": "x"}},
         "rope_parameters.rope_theta: expected a number > 0, got 'x'"),
        ({"rope_parameters": None, "rope_theta": "1e4"},
         "rope_theta: expected a number > 0, got '1e4'"),
        ({"rope_parameters": None, "rope_theta": -1.0},
         "rope_theta: expected a number > 0"),
        ({"rope_scaling": [1]}, "rope_scaling: expected an object or null, got [1]"),
        ({"rope_scaling": {"rope_type": "linear", "factor": NAN}},
         "rope_scaling.factor: expected a finite number, got nan"),
        ({"partial_rotary_factor": 2.0},
         "partial_rotary_factor: expected a number in (0, 1]"),
        ({"rms_norm_eps": NAN}, "rms_norm_eps: expected a number in (0, 1), got nan"),
        ({"rms_norm_eps": INF}, "rms_norm_eps: expected a number in (0, 1), got inf"),
        ({"rms_norm_eps": -1e-6},
         "rms_norm_eps: expected a number in (0, 1), got -1e-06"),
        ({"rms_norm_eps": "1e-6"},
         "rms_norm_eps: expected a number in (0, 1), got '1e-6'"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings: expected true or false"),
        ({"eos_token_id": "x"},
         "eos_token_id: expected an integer, a list of integers"),
        ({"hidden_act": "gelu_new"},
         "hidden_act: expected one of ['gelu', 'relu', 'silu']"),
        ({"hidden_act": ["silu"]}, "hidden_act: expected one of"),
        ({"layer_types": "full"}, "layer_types: expected a list, got 'full'"),
        ({"layer_types": ["full_attention"] * 3},
         "layer_types: expected 1 entries, got 3"),
        ({"mlp_only_layers": [5]}, "mlp_only_layers: expected layer indices 0..0"),
        ({"model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 5,
          "moe_intermediate_size": 8}, "num_experts_per_tok: expected 1..4, got 5"),
        ({"model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 8, "decoder_sparse_step": 0},
         "decoder_sparse_step: expected an integer 1..1024, got 0"),
        ({"model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2},
         "moe_intermediate_size: expected >= 1 with num_experts > 0"),
        ({"model_type": "qwen3_5_moe_text", "full_attention_interval": 0},
         "full_attention_interval: expected an integer 1..1024, got 0"),
    ],
)  # fmt: skip
def test_bad_values_are_named_with_the_file(tmp_path, change, message):
    path = _write(tmp_path, **change)
    with pytest.raises(ValueError) as e:
        load_config(tmp_path)
    assert str(e.value).startswith(f"{path}: ")
    assert message in str(e.value)


def test_the_tiny_config_itself_loads(tmp_path):
    _write(tmp_path)
    assert load_config(tmp_path).num_attention_heads == 2


def test_every_bad_key_is_named_at_once(tmp_path):
    _write(tmp_path, hidden_size=0, num_hidden_layers=-1, rms_norm_eps=NAN)
    with pytest.raises(ValueError) as e:
        load_config(tmp_path)
    for key in ("hidden_size", "num_hidden_layers"):
        assert f"{key}: expected" in str(e.value)


@pytest.fixture
def folder(tmp_path):
    return save_hf(build_model(ModelConfig.from_hf(TINY)), tmp_path / "m")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_attention_heads": 0, "head_dim": None}, "num_attention_heads: expected"),
        ({"rope_parameters": "ab"}, "rope_parameters: expected an object or null"),
        (
            {"num_hidden_layers": 10**8},
            "num_hidden_layers: expected an integer 1..1024",
        ),
    ],
)
def test_hat_convert_names_the_file_and_key(folder, tmp_path, capsys, change, message):
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    rc = hat_main(["convert", str(folder), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert f"hat convert: error: {path}: {message}" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1", "x"])
def test_hat_convert_shard_gb_must_be_a_positive_number(
    folder, tmp_path, capsys, value
):
    with pytest.raises(SystemExit) as e:
        hat_main(["convert", str(folder), str(tmp_path / "o"), "--shard-gb", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --shard-gb: expected a" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("dst", [".", "sub", ".."])
def test_hat_convert_refuses_an_output_overlapping_its_source(folder, capsys, dst):
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert hat_main(["convert", str(folder), str(folder / dst)]) == 1
    assert "overlaps the source" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_hat_convert_shard_gb_small_still_writes(folder, tmp_path, capsys):
    assert (
        hat_main(["convert", str(folder), str(tmp_path / "o"), "--shard-gb", "1e-9"])
        == 0
    )
    assert len(list((tmp_path / "o").glob("*.safetensors"))) > 1  # one per tensor


@pytest.mark.parametrize(
    "change, message",
    [
        ({"bogus": 1}, "unknown key 'bogus'"),
        ({"head_dim": ...}, "missing key 'head_dim'"),
        ({"dtype": "int8"}, "dtype: expected one of"),
        ({"moe_impl": "sparse"}, "moe_impl: expected one of ['dense', 'topk']"),
        ({"num_attention_heads": 3, "num_key_value_heads": 2},
         "num_attention_heads 3 is not divisible by num_key_value_heads 2"),
        ({"rope_scaling": ((1,),)}, "rope_scaling: expected (key, value) pairs"),
    ],
)  # fmt: skip
def test_fields_of_a_run_config_are_checked_too(change, message):
    fields = {**{k: v for k, v in TINY.items() if k != "rope_parameters"}, **change}
    fields = {k: v for k, v in fields.items() if v is not ...}
    with pytest.raises(ValueError) as e:
        config_from_fields(fields)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_hidden_layers": TINY["num_hidden_layers"] + 1}, "missing tensor"),
        ({"num_attention_heads": 2 * TINY["num_attention_heads"]}, "shape mismatch"),
    ],
)
def test_weights_that_do_not_fit_the_config_name_the_folder(
    folder, tmp_path, capsys, change, message
):
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    rc = hat_main(["convert", str(folder), str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and message in err
    assert f"{folder}: the weights do not fit config.json: " in err
