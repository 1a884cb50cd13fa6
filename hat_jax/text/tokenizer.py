"""Tokenizer: a `tokenizers.Tokenizer` plus the special tokens a chat model needs.

Saved as `tokenizer.json` + `tokenizer_config.json`, the pair transformers'
`AutoTokenizer` and vLLM read.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import tokenizers

from hat_jax.jsonl import json_type, read_json
from hat_jax.printable import shown

# Tokens that end an assistant turn in the chat formats we render.
TURN_END_TOKENS = ("<|im_end|>", "<|endoftext|>")
# The largest token id we load: ids are int32 on device, and vocab_size (the
# largest id + 1) must be one too.
MAX_ID = 2**31 - 2
SPECIAL_KEYS = ("bos_token", "eos_token", "pad_token")


def _check_regular(path: Path) -> None:
    """Refuses a missing path, or a fifo, device or folder (reading one blocks)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not stat.S_ISREG(path.stat().st_mode):
        raise ValueError(f"{path}: not a regular file (a fifo, device or folder)")


def _read_config(path: Path) -> dict:
    """`tokenizer_config.json` as a dict ({} when absent), its fields checked."""
    if not path.exists():
        return {}
    _check_regular(path)
    conf = read_json(path)
    if not isinstance(conf, dict):
        raise ValueError(f"{path}: expected a JSON object, got {json_type(conf)}")
    for key in SPECIAL_KEYS:
        v = conf.get(key)
        v = v.get("content") if isinstance(v, dict) else v
        if v is not None and not isinstance(v, str):
            raise ValueError(
                f"{path}: {key} must be a string, an object with a 'content' "
                f"string, or null; got {json_type(v)}"
            )
    tpl = conf.get("chat_template")
    if tpl is not None and not isinstance(tpl, str | list):
        raise ValueError(
            f"{path}: chat_template must be a string or a list of named templates, "
            f"got {json_type(tpl)}"
        )
    return conf


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
        """Reads `tokenizer.json` (+ `tokenizer_config.json`, `chat_template.jinja`).

        Raises:
          ValueError: `path: ...` for a file that is not a regular file, not a
            tokenizer, holds a token id past `MAX_ID`, or a config of the wrong
            shape.
        """
        folder = Path(folder)
        path = folder / "tokenizer.json"
        _check_regular(path)
        try:
            backend = tokenizers.Tokenizer.from_file(str(path))
        except Exception as e:  # tokenizers raises a bare Exception for a bad file
            raise ValueError(f"{path}: not a readable tokenizer ({shown(e)})") from None
        top = max(backend.get_vocab(with_added_tokens=True).values(), default=-1)
        if top > MAX_ID:
            raise ValueError(
                f"{path}: token id {top} is out of range (ids must be <= {MAX_ID}, "
                "int32 on device)"
            )
        conf = _read_config(folder / "tokenizer_config.json")

        def tok(key):
            v = conf.get(key)
            return v.get("content") if isinstance(v, dict) else v

        template = conf.get("chat_template")
        tpl_file = folder / "chat_template.jinja"
        if template is None and tpl_file.exists():
            _check_regular(tpl_file)
            template = tpl_file.read_text(encoding="utf-8", errors="replace")
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
