"""`load_model(path_or_name)`: a HF folder, a GGUF file or a named asset."""

from __future__ import annotations

import warnings
from pathlib import Path

from hat_jax import assets
from hat_jax.checkpoints import load_gguf, load_hf
from hat_jax.models import CausalLM, ModelConfig
from hat_jax.text.tokenizer import Tokenizer

TOKENIZER_FILE = "tokenizer.json"  # the only tokenizer format read here
# Short names for fetched assets (see `hat assets fetch`).
MODEL_NAMES = {"smollm2-135m-instruct": "smollm2-135m-instruct"}


def resolve(path_or_name: str | Path) -> Path:
    p = Path(path_or_name).expanduser()
    if p.exists():
        return p
    if str(path_or_name) in MODEL_NAMES:
        return assets.path(MODEL_NAMES[str(path_or_name)])
    raise FileNotFoundError(
        f"{path_or_name}: no such file or folder, and not a model name "
        f"(known: {', '.join(MODEL_NAMES)})"
    )


def load_model(
    path_or_name: str | Path, **overrides
) -> tuple[CausalLM, ModelConfig, Tokenizer | None]:
    """Loads a model and its tokenizer.

    Args:
      path_or_name: a HF folder (config.json + safetensors, with tokenizer.json
        or without: weights only, as `save_pretrained` writes a model), a
        `.gguf` file, or a fetched asset's name such as "smollm2-135m-instruct".
      **overrides: `ModelConfig` fields, e.g. `param_dtype="bfloat16"`.

    Returns:
      (model, config, tokenizer); `model(tokens)` gives logits [B, T, V]. The
      tokenizer is None (with a warning) for a folder without tokenizer.json.
    """
    p = resolve(path_or_name)
    if p.suffix == ".gguf":
        return load_gguf(p, **overrides)
    if not (p / "config.json").exists():
        raise FileNotFoundError(
            f"{p}: expected a .gguf file or a folder with config.json"
        )
    model, cfg = load_hf(p, **overrides)
    if not (p / TOKENIZER_FILE).exists():
        warnings.warn(
            f"{p} has no {TOKENIZER_FILE}: the model is loaded without a "
            "tokenizer (None); load one from its base model's folder",
            stacklevel=2,
        )
        return model, cfg, None
    return model, cfg, Tokenizer.from_folder(p)
