"""GGUF files (llama.cpp): config, dequantised tensors and tokenizer, no torch needed.

GGUF names map onto HF names with one table per architecture; from there the
family's HF table takes over, so GGUF loading reuses the HF path. llama.cpp stores
Q and K rows of Llama models permuted for its RoPE kernel; we undo that.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import tokenizers
from gguf import GGUFReader
from gguf.quants import dequantize
from tokenizers import decoders, models, pre_tokenizers

from hat_jax.checkpoints.hf import load_params
from hat_jax.models import CausalLM, ModelConfig, abstract_model
from hat_jax.printable import shown
from hat_jax.text.tokenizer import Tokenizer

# GGUF tensor name -> HF tensor name. {i} layer; `_exps` tensors hold all experts.
GGUF_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.attn_q_norm.weight": "model.layers.{i}.self_attn.q_norm.weight",
    "blk.{i}.attn_k_norm.weight": "model.layers.{i}.self_attn.k_norm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
    "blk.{i}.ffn_gate_inp.weight": "model.layers.{i}.mlp.gate.weight",
    "blk.{i}.ffn_gate_exps.weight": "model.layers.{i}.mlp.experts.{e}.gate_proj.weight",
    "blk.{i}.ffn_up_exps.weight": "model.layers.{i}.mlp.experts.{e}.up_proj.weight",
    "blk.{i}.ffn_down_exps.weight": "model.layers.{i}.mlp.experts.{e}.down_proj.weight",
}

# GGUF general.architecture -> (HF model_type, Q/K rows permuted by llama.cpp)
ARCHITECTURES = {
    "llama": ("llama", True),
    "qwen3": ("qwen3", False),
    "qwen3moe": ("qwen3_moe", False),
}

# GGUF metadata key (after "{arch}.") -> HF config key
CONFIG_KEYS = {
    "block_count": "num_hidden_layers",
    "context_length": "max_position_embeddings",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim",
    "rope.freq_base": "rope_theta",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "expert_count": "num_experts",
    "expert_used_count": "num_experts_per_tok",
    "expert_feed_forward_length": "moe_intermediate_size",
}


def _field(reader: GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def _template_regex(template: str) -> re.Pattern:
    return re.compile("^" + re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)") + "$")


_NAME_RULES = [(_template_regex(g), h) for g, h in GGUF_NAMES.items()]


class GGUFSource:
    """HF-named, dequantised float32 tensors from a GGUF file."""

    def __init__(self, reader: GGUFReader, cfg: ModelConfig, permuted_qk: bool):
        self.cfg, self.permuted_qk = cfg, permuted_qk
        self._by_hf: dict[str, tuple[object, int | None]] = {}
        self.read: set[str] = set()
        for t in reader.tensors:
            for regex, hf in _NAME_RULES:
                m = regex.match(t.name)
                if m is None:
                    continue
                if "{e}" in hf:
                    for e in range(int(t.shape[-1])):  # GGUF shapes are reversed
                        self._by_hf[hf.format(e=e, **m.groupdict())] = (t, e)
                else:
                    self._by_hf[hf.format(**m.groupdict())] = (t, None)
                break
            else:
                raise ValueError(f"GGUF tensor {t.name!r} has no HF name in GGUF_NAMES")
        self._cache: dict[str, np.ndarray] = {}

    def _dequant(self, t) -> np.ndarray:
        if t.name not in self._cache:
            x = dequantize(t.data, t.tensor_type).astype(np.float32)
            self._cache[t.name] = x.reshape([int(d) for d in reversed(t.shape)])
        return self._cache[t.name]

    def get(self, name: str) -> np.ndarray | None:
        if name not in self._by_hf:
            return None
        t, expert = self._by_hf[name]
        self.read.add(t.name)
        x = self._dequant(t)
        x = x[expert] if expert is not None else x
        if self.permuted_qk and re.search(r"self_attn\.(q|k)_proj\.weight$", name):
            heads = (
                self.cfg.num_attention_heads
                if ".q_proj" in name
                else self.cfg.num_key_value_heads
            )
            x = _unpermute(x, heads)
        if ".mlp.experts." not in name:
            self._cache.pop(t.name, None)  # single-use: free the float32 copy
        return x

    def unused(self) -> list[str]:
        return sorted({t.name for t, _ in self._by_hf.values()} - self.read)


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of llama.cpp's Q/K row permutation (interleaved -> half-split RoPE)."""
    d_out = w.shape[0]
    return (
        w.reshape(n_head, d_out // n_head // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)
    )


def gguf_config(reader: GGUFReader, **overrides) -> tuple[ModelConfig, bool]:
    arch = _field(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise ValueError(
            f"unsupported GGUF architecture {arch!r}; have {list(ARCHITECTURES)}"
        )
    model_type, permuted = ARCHITECTURES[arch]
    hf = {"model_type": model_type}
    for key, hf_key in CONFIG_KEYS.items():
        v = _field(reader, f"{arch}.{key}")
        if v is not None:
            hf[hf_key] = v
    names = {t.name for t in reader.tensors}
    hf["tie_word_embeddings"] = "output.weight" not in names
    tokens = reader.fields["tokenizer.ggml.tokens"]
    hf["vocab_size"] = _field(reader, f"{arch}.vocab_size") or len(tokens.data)
    for key in ("bos", "eos", "padding"):
        v = _field(reader, f"tokenizer.ggml.{key}_token_id")
        if v is not None:
            hf[f"{'pad' if key == 'padding' else key}_token_id"] = int(v)
    return ModelConfig.from_hf(hf, **overrides), permuted


# tokenizer.ggml.pre -> pre-tokenizer for byte-level BPE vocabularies
_GPT2_SPLIT = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
)
PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    ),
    "gpt-2": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False),
    "default": lambda: pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(tokenizers.Regex(_GPT2_SPLIT), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    ),
}


def gguf_tokenizer(reader: GGUFReader) -> Tokenizer:
    """The byte-level BPE tokenizer stored in a GGUF file's metadata."""
    kind = _field(reader, "tokenizer.ggml.model")
    if kind != "gpt2":
        raise ValueError(
            f"GGUF tokenizer model {kind!r} is not supported (only gpt2 BPE)"
        )
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    vocab = {t: i for i, t in enumerate(tokens)}
    backend = tokenizers.Tokenizer(models.BPE(vocab, merges, fuse_unk=False))
    pre = _field(reader, "tokenizer.ggml.pre", "default")
    backend.pre_tokenizer = PRE_TOKENIZERS.get(pre, PRE_TOKENIZERS["default"])()
    backend.decoder = decoders.ByteLevel()
    control = [t for t, ty in zip(tokens, types, strict=True) if ty == 3]  # 3: CONTROL
    backend.add_special_tokens(
        [tokenizers.AddedToken(t, special=True) for t in control]
    )

    def tok(key):
        i = _field(reader, f"tokenizer.ggml.{key}_token_id")
        return None if i is None else tokens[int(i)]

    return Tokenizer(
        backend,
        bos_token=tok("bos"),
        eos_token=tok("eos"),
        pad_token=tok("padding"),
        chat_template=_field(reader, "tokenizer.chat_template"),
    )


def load_gguf(path: str | Path, **overrides) -> tuple[CausalLM, ModelConfig, Tokenizer]:
    """Loads a GGUF file as our model (float32 unless `param_dtype` overridden).

    Raises:
      ValueError: ``path: ...`` for a file that is not a GGUF file we read
        (bad magic, truncated, a field of the wrong type, an unsupported
        architecture or tokenizer), whatever the reader raised inside.
    """
    try:
        reader = GGUFReader(str(path))
        cfg, permuted = gguf_config(reader, **overrides)
        model = load_params(abstract_model(cfg), GGUFSource(reader, cfg, permuted))
        return model, cfg, gguf_tokenizer(reader)
    except (
        ValueError, KeyError, IndexError, TypeError, OverflowError,
        NotImplementedError,  # a quantization type gguf cannot dequantize
    ) as e:  # fmt: skip
        raise ValueError(f"{shown(path)}: not a GGUF model we can read: {e}") from e
