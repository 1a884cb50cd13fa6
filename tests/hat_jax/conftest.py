"""Shared fixtures: SmolLM2-135M-Instruct loaded by us and by transformers."""

import pytest

from hat_jax import assets


@pytest.fixture(scope="session")
def smollm2():
    from hat_jax.checkpoints.gguf import load_gguf

    return load_gguf(assets.path("smollm2-135m-instruct"))


@pytest.fixture(scope="session")
def smollm2_hf():
    import torch
    import transformers

    p = assets.path("smollm2-135m-instruct")
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(p.parent), gguf_file=p.name, dtype=torch.float32
    ).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
    return model, tok


CHAT_PROMPTS = [
    "What is the capital of France?",
    "Write a short poem about the ocean.",
    "List three uses of a paperclip.",
]


@pytest.fixture(scope="session")
def chat_prompts(smollm2):
    from hat_jax.text.chat import render_chat

    _, _, tok = smollm2
    return [
        tok.encode(
            render_chat([{"role": "user", "content": q}], add_generation_prompt=True)
        )
        for q in CHAT_PROMPTS
    ]
