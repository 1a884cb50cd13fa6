"""Export a checkpoint as a HF folder that vLLM serves as is.

``export(src, out)`` loads a ``hat train`` workdir (latest params), a HF
folder or a GGUF (``hat_jax.cli.convert_cmd``'s sources), then writes with
``hat_jax.checkpoints.hf.save_hf``: LoRA merged, MTP tensors as ``mtp.*`` and
``mtp_num_hidden_layers`` in ``config.json``, the tokenizer, plus:

- a chat template (``serving.chat_template``) for the tool-call format, in
  ``tokenizer_config.json`` and ``chat_template.jinja``;
- ``serving.json``: what ``hat serve`` needs to choose flags (tool parser,
  MTP layers and vLLM's speculative method, the tool-call format), and the
  vLLM-CPU checks that failed, if any (:func:`cpu_problems`).

vLLM's CPU backend wants bf16 weights, attention head_dim in
``CPU_HEAD_DIMS`` and linear-attention (Gated DeltaNet) head dims of 64 or 128.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serving.chat_template import TOOL_PARSERS, chat_template

CPU_HEAD_DIMS = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256)
GDN_HEAD_DIMS = (64, 128)
# model_type -> vLLM speculative method of its MTP head (None: vLLM has none).
# vLLM 0.32 maps the per-family names (qwen3_5_mtp...) to "mtp" with a warning.
MTP_METHODS: dict[str, str | None] = {
    "qwen3_5_moe_text": "mtp",
    "qwen3_5_moe": "mtp",
    "qwen3_5_text": "mtp",
    "qwen3_5": "mtp",
    "qwen3_next": "mtp",
    "qwen3": None,
    "qwen3_moe": None,
    "llama": None,
}


def load_source(src: str | Path):
    """(model, config, tokenizer) from a workdir, HF folder, GGUF or asset name."""
    from hat_jax.loading import load_model
    from hat_jax.train import build

    if build.is_workdir(Path(src).expanduser()):
        model, cfg = build.model_from_workdir(src)
        return (
            model,
            cfg,
            build.load_tokenizer(build.load_workdir_config(src).tokenizer),
        )
    return load_model(str(src))


def cpu_problems(cfg, dtype: str | None) -> list[str]:
    """Why vLLM's CPU backend would refuse this config (empty: none known)."""
    problems = []
    if (dtype or cfg.param_dtype) != "bfloat16":
        problems.append("vLLM CPU needs bf16 weights (export with --dtype bfloat16)")
    if cfg.head_dim not in CPU_HEAD_DIMS:
        problems.append(f"attention head_dim {cfg.head_dim} not in {CPU_HEAD_DIMS}")
    for key in ("linear_key_head_dim", "linear_value_head_dim"):
        value = getattr(cfg, key, None)
        if value and (cfg.layer_types or ()) and value not in GDN_HEAD_DIMS:
            problems.append(f"{key} {value} not in {GDN_HEAD_DIMS}")
    return problems


def export(
    src: Any,
    out: str | Path,
    *,
    fmt: str = "qwen_xml",
    dtype: str | None = None,
) -> dict[str, Any]:
    """Writes the vLLM-ready folder (module docstring); returns ``serving.json``.

    Args:
      src: a path or name (``load_source``), or a ``(model, tokenizer)`` pair.
      out: the output folder.
      fmt: the tool-call format the model was trained on (``TOOL_PARSERS``).
      dtype: ``bfloat16`` / ``float32`` (None: the model's).
    """
    from hat_jax.checkpoints.hf import save_hf

    if fmt not in TOOL_PARSERS:
        raise ValueError(
            f"no vLLM tool parser for {fmt!r}; have {sorted(TOOL_PARSERS)}"
        )
    if isinstance(src, tuple):
        model, tokenizer = src
    else:
        model, _, tokenizer = load_source(src)
    cfg = model.config
    tokenizer.chat_template = chat_template(fmt)
    out = save_hf(model, out, tokenizer=tokenizer, dtype=dtype)
    (out / "chat_template.jinja").write_text(tokenizer.chat_template)
    n_mtp = int(cfg.mtp_num_hidden_layers or 0)
    info = {
        "model_type": cfg.model_type,
        "tool_call_format": fmt,
        "tool_parser": TOOL_PARSERS[fmt],
        "mtp_layers": n_mtp,
        "mtp_method": MTP_METHODS.get(cfg.model_type) if n_mtp else None,
        "hybrid": bool(cfg.layer_types)
        and any(t != "full_attention" for t in cfg.layer_types),
        "dtype": dtype or cfg.param_dtype,
        "max_position_embeddings": cfg.max_position_embeddings,
        "cpu_problems": cpu_problems(cfg, dtype),
    }
    (out / "serving.json").write_text(json.dumps(info, indent=2))
    return info
