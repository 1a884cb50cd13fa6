"""Shared fixtures: a tiny random Qwen3 (with an MTP layer) and a short trace."""

import pytest


@pytest.fixture(scope="session")
def qwen_tokenizer():
    from hat_jax.text.qwen_tokenizer import load_qwen3_6_tokenizer

    return load_qwen3_6_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(qwen_tokenizer):
    from hat_jax.models import ModelConfig, build_model

    cfg = ModelConfig(
        model_type="qwen3",
        vocab_size=qwen_tokenizer.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        mtp_num_hidden_layers=1,
    )
    return build_model(cfg, seed=0)


@pytest.fixture(scope="session")
def small_trace(tmp_path_factory):
    from serving.trace import make_trace, write_trace

    trace = make_trace(n_messages=4, rooms=2, arrivals="poisson", rate=2.0, seed=0)
    return write_trace(trace, tmp_path_factory.mktemp("trace") / "t.jsonl")
