"""The converted Qwen3.6 tokenizer.json against tiktoken reading the same ranks file."""

import base64
import unicodedata

import pytest
import tiktoken

from hat_jax import assets
from hat_jax.text.qwen_tokenizer import (
    FIRST_SPECIAL_ID,
    SPECIAL_TOKENS,
    SPLIT_PATTERN,
    load_qwen3_6_tokenizer,
)

TEXTS = [
    "直播间的宝宝们，3号链接的连衣裙今天只要199元！",
    "Hello, world! It's 2026; isn't it? 12345 + 67.8",
    "  leading spaces\n\n\ttabs and\r\nCRLF   ",
    "emoji 🙂👍🏽 and combining e\u0301 (NFC) vs é",
    "<tool_call>\n<function=get_product_info>\n<parameter=link_id>\n3\n</parameter>",
    "mixed 中英 text with ３ full-width digits and ｈｅｌｌｏ",
]


@pytest.fixture(scope="module")
def reference():
    path = assets.path("qwen3_6-tokenizer")
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
    special = {t: FIRST_SPECIAL_ID + i for i, t in enumerate(SPECIAL_TOKENS)}
    return tiktoken.Encoding(
        "qwen3_6", pat_str=SPLIT_PATTERN, mergeable_ranks=ranks, special_tokens=special
    )


def test_encodings_match_tiktoken(reference):
    tok = load_qwen3_6_tokenizer()
    for text in TEXTS:
        ref = reference.encode(
            unicodedata.normalize("NFC", text), allowed_special="all"
        )
        assert tok.encode(text) == ref, text
        assert tok.decode(tok.encode(text)) == unicodedata.normalize("NFC", text)


def test_special_tokens(reference):
    tok = load_qwen3_6_tokenizer()
    assert tok.vocab_size == FIRST_SPECIAL_ID + len(SPECIAL_TOKENS)
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == FIRST_SPECIAL_ID + i
    assert tok.eos_token == "<|im_end|>"
    assert tok.stop_ids == (248044, 248046)
    assert tok.encode("<|im_start|>user\n") == [248045] + reference.encode("user\n")
