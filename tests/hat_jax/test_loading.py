"""`load_model` on HF folders with and without a tokenizer."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import tokenizers
import torch
import transformers

from hat_jax.checkpoints.hf import save_hf
from hat_jax.loading import load_model
from hat_jax.models import ModelConfig, build_model
from hat_jax.text.tokenizer import Tokenizer
from hat_jax.train.build import load_tokenizer

TINY = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
)
TOKENS = np.random.default_rng(0).integers(0, 64, size=(2, 7))


def _word_tokenizer() -> Tokenizer:
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "hello", "world"])}
    backend = tokenizers.Tokenizer(
        tokenizers.models.WordLevel(vocab, unk_token="[UNK]")
    )
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    return Tokenizer(backend, eos_token="[PAD]", pad_token="[PAD]")


def test_weights_only_save_pretrained_folder_loads_without_tokenizer(tmp_path):
    """config.json + model.safetensors as transformers' `save_pretrained` writes."""
    torch.manual_seed(0)
    hf = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**TINY)).eval()
    hf.save_pretrained(tmp_path)
    assert not (tmp_path / "tokenizer.json").exists()
    with pytest.warns(UserWarning, match=r"no tokenizer\.json.*\(None\)"):
        model, cfg, tok = load_model(tmp_path, param_dtype="float32")
    assert tok is None and cfg.model_type == "qwen3"
    with torch.no_grad():
        want = hf(torch.tensor(TOKENS)).logits.numpy()
    got = np.asarray(model(jnp.asarray(TOKENS)))
    assert np.abs(got - want).max() <= 1e-4  # the weights were read


def test_our_export_loads_with_and_without_its_tokenizer(tmp_path):
    model = build_model(ModelConfig(model_type="qwen3", **TINY), seed=0)
    save_hf(model, tmp_path / "bare")
    with pytest.warns(UserWarning, match="no tokenizer"):
        again, _, tok = load_model(tmp_path / "bare")
    assert tok is None
    with pytest.raises(FileNotFoundError, match=r"bare/tokenizer\.json not found"):
        load_tokenizer(str(tmp_path / "bare"))  # a stage's `tokenizer`: needed
    want = np.asarray(model(jnp.asarray(TOKENS)))
    assert np.array_equal(np.asarray(again(jnp.asarray(TOKENS))), want)

    save_hf(model, tmp_path / "full", tokenizer=_word_tokenizer())
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no tokenizer")  # none here
        _, _, tok = load_model(tmp_path / "full")
    assert tok.encode("hello world") == [2, 3]
