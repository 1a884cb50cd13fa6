"""Export round trip: our HF folders load in transformers with equal logits."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers

from hat_jax.checkpoints.hf import load_hf, save_hf
from hat_jax.cli.main import main as hat_main
from hat_jax.models import ModelConfig, build_model

TINY = dict(
    vocab_size=89,
    hidden_size=32,
    intermediate_size=40,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)
CONFIGS = {
    "llama": ModelConfig(model_type="llama", tie_word_embeddings=True, **TINY),
    "qwen3": ModelConfig(model_type="qwen3", **TINY),
    "qwen3_moe": ModelConfig(
        model_type="qwen3_moe",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=24,
        mlp_only_layers=(0,),
        **TINY,
    ),
}


def _hf_logits(folder, tokens):
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.no_grad():
        return hf.eval()(torch.tensor(tokens)).logits.numpy()


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_export_loads_in_transformers(tmp_path, family):
    model = build_model(CONFIGS[family], seed=1)
    save_hf(model, tmp_path, max_shard_bytes=20_000)  # force several shards
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    tokens = np.random.default_rng(0).integers(0, 89, size=(2, 9))
    ours = np.asarray(model(jnp.asarray(tokens)))
    assert np.abs(_hf_logits(tmp_path, tokens) - ours).max() <= 1e-4
    again, _ = load_hf(tmp_path)  # and back into ours
    assert np.abs(np.asarray(again(jnp.asarray(tokens))) - ours).max() == 0


def test_export_bfloat16(tmp_path):
    model = build_model(CONFIGS["qwen3"], seed=2)
    save_hf(model, tmp_path, dtype="bfloat16")
    assert (
        json.loads((tmp_path / "config.json").read_text())["torch_dtype"] == "bfloat16"
    )
    back, cfg = load_hf(tmp_path)
    assert cfg.param_dtype == "float32"  # loads as float32 unless asked
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert next(hf.parameters()).dtype == torch.bfloat16


def test_hat_convert_smollm2(tmp_path, smollm2, chat_prompts):
    model, _, tok = smollm2
    out = tmp_path / "smollm2"
    assert hat_main(["convert", "smollm2-135m-instruct", str(out)]) == 0
    for f in (
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "model.safetensors.index.json",
    ):
        assert (out / f).exists(), f
    ids = np.array([chat_prompts[1]])
    ours = np.asarray(model(jnp.asarray(ids)))
    assert np.abs(_hf_logits(out, ids) - ours).max() <= 1e-4
    hf_tok = transformers.AutoTokenizer.from_pretrained(out)
    text = "Paris 2024: café ☕ and 東京!"
    assert hf_tok.encode(text, add_special_tokens=False) == tok.encode(text)
    assert hf_tok.eos_token == "<|im_end|>"
