"""Hugging Face folders: load safetensors (single or sharded) into NNX, export back.

Loading is target-driven: we build the model abstractly (no memory), walk its
parameters and fetch each one's HF tensor through the family's weight table, so a
missing tensor, a wrong shape or an unused tensor is reported by name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax.numpy as jnp
import ml_dtypes
import numpy as np
from flax import nnx
from safetensors import safe_open
from safetensors.numpy import save_file

from hat_jax.checkpoints.mapping import (
    compile_table,
    gather_param,
    path_str,
    scatter_param,
)
from hat_jax.models import CausalLM, ModelConfig, abstract_model, family, load_config
from hat_jax.models.lora import has_lora, merge_lora
from hat_jax.models.mtp import hf_weights as mtp_hf_weights

_NP_DTYPES = {
    "float32": np.float32,
    "bfloat16": ml_dtypes.bfloat16,
    "float16": np.float16,
}
_FUSED_EXPERT = re.compile(r"^(.*\.mlp\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$")


def _plain_name(name: str) -> bool:
    """A file name with no folder part (an index may not point elsewhere)."""
    return bool(name) and Path(name).name == name and name not in (".", "..")


def _check_header(path: Path) -> list[str]:
    """The tensor names of a safetensors file; a damaged one is a ValueError."""
    try:
        with safe_open(path, "np") as f:
            return list(f.keys())
    except Exception as e:  # safetensors raises its own error types
        raise ValueError(f"{path}: not a readable safetensors file ({e})") from None


class TensorSource:
    """Lazy name -> numpy access over one or more safetensors files."""

    def __init__(self, files: dict[str, Path]):
        self._files = files  # tensor name -> file
        self._handles: dict[Path, object] = {}
        self._fused: dict[str, np.ndarray] = {}
        self.read: set[str] = set()  # names actually read, to report unused ones

    @classmethod
    def from_folder(cls, folder: Path) -> TensorSource:
        index = folder / "model.safetensors.index.json"
        if index.exists():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(
                    f"{index}: expected {{'weight_map': ...}} ({e})"
                ) from None
            if not isinstance(weight_map, dict) or not all(
                isinstance(v, str) and _plain_name(v) for v in weight_map.values()
            ):
                raise ValueError(
                    f"{index}: weight_map must map tensor names to file names "
                    "inside the folder"
                )
            files = {k: folder / v for k, v in weight_map.items()}
            for path in set(files.values()):
                _check_header(path)
            return cls(files)
        single = folder / "model.safetensors"
        if not single.exists():
            raise FileNotFoundError(
                f"{folder}: no model.safetensors or model.safetensors.index.json"
            )
        return cls({k: single for k in _check_header(single)})

    def names(self) -> set[str]:
        return set(self._files)

    def _read(self, name: str) -> np.ndarray:
        self.read.add(name)
        path = self._files[name]
        if path not in self._handles:
            self._handles[path] = safe_open(path, "np")
        return self._handles[path].get_tensor(name)

    def get(self, name: str) -> np.ndarray | None:
        for alias in _aliases(name):
            x = self._get(alias)
            if x is not None:
                return x
        return None

    def _get(self, name: str) -> np.ndarray | None:
        if name in self._files:
            return self._read(name)
        # transformers 5 may save experts fused: experts.gate_up_proj [E, 2F, D].
        m = _FUSED_EXPERT.match(name)
        if m is None:
            return None
        prefix, e, which = m.group(1), int(m.group(2)), m.group(3)
        fused = f"{prefix}.{'down_proj' if which == 'down' else 'gate_up_proj'}"
        if fused not in self._files:
            return None
        if fused not in self._fused:
            self._fused[fused] = self._read(fused)
        t = self._fused[fused][e]
        if which == "down":
            return t
        half = t.shape[0] // 2
        return t[:half] if which == "gate" else t[half:]

    def unused(self) -> list[str]:
        # MTP tensors belong to the MTP head: a model built without one (config
        # mtp_num_hidden_layers = 0) loads the trunk alone. A multimodal folder's
        # vision tower is not part of the text model.
        return sorted(
            n for n in self.names() - self.read if not n.startswith(_NOT_TEXT_MODEL)
        )


# Multimodal checkpoints (Qwen3.5's `...ForConditionalGeneration`) keep the text
# model under `model.language_model.`; the vision tower under `model.visual.`.
_PREFIX_ALIASES = (("model.", "model.language_model."),)
_NOT_TEXT_MODEL = ("mtp.", "model.visual.")


def _aliases(name: str) -> list[str]:
    """`name`, then the names a multimodal checkpoint gives the same tensor."""
    out = [name]
    for ours, theirs in _PREFIX_ALIASES:
        if name.startswith(ours):
            out.append(theirs + name.removeprefix(ours))
    return out


def weight_rules(cfg: ModelConfig):
    """The family's weight table plus the MTP head's (`mtp.*`) when it has one."""
    table = list(family(cfg).HF_WEIGHTS)
    if cfg.mtp_num_hidden_layers:
        table += mtp_hf_weights(table)
    return compile_table(table)


def load_params(model: CausalLM, source) -> CausalLM:
    """Fills an (abstract) model's parameters from `source` via its weight table.

    `source` has `get(hf_name) -> np.ndarray | None` and `unused() -> list[str]`.
    """
    cfg = model.config
    rules = weight_rules(cfg)
    graphdef, state = nnx.split(model)
    flat = nnx.to_flat_state(state)
    leaves = []
    for path, var in flat:
        p = path_str(path)
        x, _ = gather_param(rules, p, tuple(var.shape), source.get)
        dt = var.dtype if hasattr(var, "dtype") else var.value.dtype
        leaves.append((path, var.replace(jnp.asarray(x.astype(dt)))))
    extra = source.unused()
    if extra:
        raise ValueError(f"unused tensors (not in the {cfg.family} table): {extra[:8]}")
    state = nnx.from_flat_state(leaves)
    return nnx.merge(graphdef, state)


def load_hf(folder: str | Path, **overrides) -> tuple[CausalLM, ModelConfig]:
    """Loads a HF folder (config.json + safetensors) as our model."""
    folder = Path(folder)
    cfg = load_config(folder, **overrides)
    src = TensorSource.from_folder(folder)
    try:
        model = load_params(abstract_model(cfg), src)
    except ValueError as e:  # a missing, extra or misshapen tensor
        raise ValueError(f"{folder}: the weights do not fit config.json: {e}") from None
    return model, cfg


def model_tensors(model: CausalLM, dtype: str | None = None) -> dict[str, np.ndarray]:
    """Our parameters as HF-named numpy tensors."""
    cfg = model.config
    rules = weight_rules(cfg)
    out: dict[str, np.ndarray] = {}
    for path, var in nnx.to_flat_state(nnx.state(model, nnx.Param)):
        value = np.asarray(var[...])
        if dtype is not None:
            value = value.astype(_NP_DTYPES[dtype])
        for name, t in scatter_param(rules, path_str(path), value):
            out[name] = np.ascontiguousarray(t)
    return out


def save_hf(
    model: CausalLM,
    out: str | Path,
    *,
    tokenizer=None,
    dtype: str | None = None,
    max_shard_bytes: int = 2 << 30,
    extra_tensors: dict[str, np.ndarray] | None = None,
    extra_config: dict | None = None,
) -> Path:
    """Writes a HF folder transformers and vLLM load as is.

    config.json, model-XXXXX-of-YYYYY.safetensors + model.safetensors.index.json,
    generation_config.json and (given a tokenizer) its files. LoRA adapters, if
    any, are merged into the base weights first.
    """
    if has_lora(model):  # "merge on export": the HF tables know only base weights
        model = merge_lora(model)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = model.config if dtype is None else model.config.replace(param_dtype=dtype)
    tensors = model_tensors(model, dtype)
    tensors.update(extra_tensors or {})
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name in sorted(tensors):
        t = tensors[name]
        if size and size + t.nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += t.nbytes
    weight_map = {}
    for k, shard in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, out / fname, metadata={"format": "pt"})
        weight_map.update({n: fname for n in shard})
    total = sum(t.nbytes for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    hf_cfg = cfg.to_hf()
    hf_cfg.update(extra_config or {})
    (out / "config.json").write_text(json.dumps(hf_cfg, indent=2))
    gen = {
        k: v
        for k, v in {
            "bos_token_id": cfg.bos_token_id,
            "eos_token_id": list(cfg.eos_token_id)
            if isinstance(cfg.eos_token_id, tuple)
            else cfg.eos_token_id,
            "pad_token_id": cfg.pad_token_id,
        }.items()
        if v is not None
    }
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2))
    if tokenizer is not None:
        tokenizer.save(out)
    return out
