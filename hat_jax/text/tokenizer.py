"""Tokenizer: a `tokenizers.Tokenizer` plus the special tokens a chat model needs.

Saved as `tokenizer.json` + `tokenizer_config.json`, the pair transformers'
`AutoTokenizer` and vLLM read.
"""

from __future__ import annotations

import json
from pathlib import Path

import tokenizers

# Tokens that end an assistant turn in the chat formats we render.
TURN_END_TOKENS = ("<|im_end|>", "<|endoftext|>")


class Tokenizer:
    """Encodes text to ids and back; knows bos/eos/pad and the stop tokens."""

    def __init__(
        self,
        backend: tokenizers.Tokenizer,
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        pad_token: str | None = None,
        chat_template: str | None = None,
    ):
        self.backend = backend
        self.bos_token, self.eos_token, self.pad_token = bos_token, eos_token, pad_token
        self.chat_template = chat_template

    # ------------------------------------------------------------------ io
    @classmethod
    def from_folder(cls, folder: str | Path) -> Tokenizer:
        folder = Path(folder)
        backend = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        conf_path = folder / "tokenizer_config.json"
        conf = json.loads(conf_path.read_text()) if conf_path.exists() else {}

        def tok(key):
            v = conf.get(key)
            return v.get("content") if isinstance(v, dict) else v

        template = conf.get("chat_template")
        tpl_file = folder / "chat_template.jinja"
        if template is None and tpl_file.exists():
            template = tpl_file.read_text()
        return cls(
            backend,
            bos_token=tok("bos_token"),
            eos_token=tok("eos_token"),
            pad_token=tok("pad_token"),
            chat_template=template,
        )

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.backend.save(str(folder / "tokenizer.json"))
        conf = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            "pad_token": self.pad_token,
            "clean_up_tokenization_spaces": False,
            "model_max_length": 1 << 20,
        }
        if self.chat_template:
            conf["chat_template"] = self.chat_template
        (folder / "tokenizer_config.json").write_text(json.dumps(conf, indent=2))

    # ------------------------------------------------------------- encode/decode
    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Ids for `text`; special-token strings in it map to their ids."""
        return self.backend.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [
            e.ids for e in self.backend.encode_batch(texts, add_special_tokens=False)
        ]

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        return self.backend.decode(
            list(map(int, ids)), skip_special_tokens=skip_special_tokens
        )

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self.backend.id_to_token(int(i))

    @property
    def eos_id(self) -> int | None:
        return None if self.eos_token is None else self.token_to_id(self.eos_token)

    @property
    def pad_id(self) -> int:
        for t in (self.pad_token, self.eos_token):
            if t is not None and self.token_to_id(t) is not None:
                return self.token_to_id(t)
        return 0

    @property
    def stop_ids(self) -> tuple[int, ...]:
        """eos and the chat turn-end tokens present in this vocabulary."""
        ids = [self.eos_id] + [self.token_to_id(t) for t in TURN_END_TOKENS]
        return tuple(sorted({i for i in ids if i is not None}))
