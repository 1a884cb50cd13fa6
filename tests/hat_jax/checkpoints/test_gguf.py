"""SmolLM2-135M-Instruct from its GGUF: tokenizer, logits, greedy decoding vs HF."""

import re

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from hat_jax.sampling import Sampler

TEXTS = [
    "Hello world, 12345 tokens!",
    "What is the capital of France?\n\nIt's Paris.  Tabs\tand   spaces.",
    "<|im_start|>user\nhi<|im_end|>\n",
    "Unicode: café, naïve, 東京, emoji 🙂, math ∑x²",
    "def f(x):\n    return x ** 2  # comment\n",
]


def test_tokenizer_matches_transformers(smollm2, smollm2_hf):
    _, _, tok = smollm2
    _, hf_tok = smollm2_hf
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids == hf_tok.encode(text, add_special_tokens=False), text
        assert tok.decode(ids) == text
    assert tok.eos_token == "<|im_end|>" and tok.stop_ids == (0, 2)


def test_logits_match_transformers(smollm2, smollm2_hf, chat_prompts):
    model, _, _ = smollm2
    hf, _ = smollm2_hf
    ids = np.array([chat_prompts[0]])
    with torch.no_grad():
        ref = hf(torch.tensor(ids)).logits.numpy()
    ours = np.asarray(model(jnp.asarray(ids)))
    assert np.abs(ours - ref).max() < 5e-4  # 30 layers of float32 accumulation


def test_greedy_32_tokens_equal_transformers(smollm2, smollm2_hf, chat_prompts):
    model, _, tok = smollm2
    hf, _ = smollm2_hf
    # our three prompts decode together as one padded batch of mixed lengths
    ours = Sampler(model, tok).generate(chat_prompts, max_new_tokens=32, stop_ids=())
    for prompt, got in zip(chat_prompts, ours):
        ids = torch.tensor([prompt])
        with torch.no_grad():  # explicit mask: HF would mask pad id 2 (= <|im_end|>)
            ref = hf.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=32,
                do_sample=False,
                eos_token_id=None,
                min_new_tokens=32,
            )[0, len(prompt) :].tolist()
        assert got.tokens == ref, (tok.decode(got.tokens), tok.decode(ref))


@pytest.mark.parametrize(
    "data", [b"", b"not a gguf file at all", b"GGUF\x03\x00\x00\x00garbage"]
)
def test_a_file_that_is_not_gguf_is_named_in_the_error(tmp_path, data):
    from hat_jax.checkpoints.gguf import load_gguf

    path = tmp_path / "model.gguf"
    path.write_bytes(data)
    want = f"^{re.escape(str(path))}: not a GGUF model we can read"
    with pytest.raises(ValueError, match=want):
        load_gguf(path)
