"""Model configuration, built from a Hugging Face `config.json`.

One frozen dataclass covers the decoder families we implement. Fields keep the HF
names so a reader can match them against `config.json`; `from_hf` and `to_hf` are the
only places that know the file's layout.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax.numpy as jnp

from hat_jax.models import hf_check

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "float16": jnp.float16}
MOE_IMPLS = ("dense", "topk")

# HF config.json model_type -> our family name (each family is one models/*.py file).
MODEL_TYPES = {
    "llama": "llama",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen3_5_moe_text": "qwen3_5_moe",  # HF's multimodal `qwen3_5_moe`: its text_config
}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Decoder hyper-parameters (HF names) plus our dtype choices."""

    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int = 4096
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: tuple[tuple[str, Any], ...] | None = None  # non-default rope params
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    hidden_act: str = "silu"
    # Mixture of experts (qwen3_moe).
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = True
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple[int, ...] = ()
    router_aux_loss_coef: float = 0.001
    # Ours: how routed experts run ("dense": every expert on every token, weighted;
    # "topk": tokens sorted to their k experts, grouped matmuls). Same numbers.
    moe_impl: str = "dense"
    # Qwen3.5 hybrid: per-layer token mixer ("linear_attention" = Gated DeltaNet,
    # "full_attention" = gated attention), the DeltaNet sizes, the gated shared
    # expert beside the routed ones, and RoPE on the first head_dim * factor dims.
    layer_types: tuple[str, ...] = ()
    linear_conv_kernel_dim: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    shared_expert_intermediate_size: int = 0
    partial_rotary_factor: float = 1.0
    # Multi-token prediction (Qwen3.5 `mtp.*`): MTP decoder layers; 0 = no head.
    mtp_num_hidden_layers: int = 0
    # Special tokens (kept for export and generation_config.json).
    bos_token_id: int | None = None
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None
    # Ours: storage and compute dtypes ("float32" | "bfloat16").
    param_dtype: str = "float32"
    dtype: str = "float32"

    @property
    def family(self) -> str:
        return MODEL_TYPES[self.model_type]

    @property
    def jnp_param_dtype(self):
        return DTYPES[self.param_dtype]

    @property
    def jnp_dtype(self):
        return DTYPES[self.dtype]

    @property
    def rotary_dim(self) -> int:
        """R, the leading dims of each head that RoPE rotates (HF rounds down)."""
        return int(self.head_dim * self.partial_rotary_factor)

    def is_moe_layer(self, i: int) -> bool:
        return (
            self.num_experts > 0
            and i not in self.mlp_only_layers
            and (i + 1) % self.decoder_sparse_step == 0
        )

    def replace(self, **kw) -> ModelConfig:
        return dataclasses.replace(self, **kw)

    @classmethod
    def from_hf(cls, hf: dict[str, Any], **overrides) -> ModelConfig:
        """Builds a config from a parsed HF `config.json` dict.

        A multimodal config (Qwen3.5's `qwen3_5_moe`) yields its `text_config`.

        Raises:
          ValueError: naming each key whose value no model can use
            (`hat_jax.models.hf_check`).
        """
        hf = _text_part(hf)
        model_type = hf.get("model_type")
        if not _one_of(model_type, MODEL_TYPES):
            raise ValueError(
                f"unsupported model_type {model_type!r}; "
                f"supported: {sorted(MODEL_TYPES)}"
            )
        hf = {_ALIASES.get(k, k): v for k, v in hf.items()}
        hf_check.check_sizes(hf)
        hf_check.check_numbers(hf)
        hf = _HF_DEFAULTS.get(model_type, dict)(hf)
        heads = hf["num_attention_heads"]
        rope = dict(hf.get("rope_parameters") or {})
        theta = rope.pop("rope_theta", hf.get("rope_theta", 10000.0))
        scaling = dict(hf.get("rope_scaling") or {})
        scaling.update(rope)
        scaling.pop("rope_theta", None)
        partial = scaling.pop("partial_rotary_factor", None)
        if partial is None:
            partial = hf.get("partial_rotary_factor", 1.0)
        for k in _TEXT_ONLY_ROPE_KEYS:
            scaling.pop(k, None)
        if scaling.get("rope_type", scaling.get("type", "default")) == "default":
            scaling = {}
        fields = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in hf.items() if k in fields}
        kw.update(
            model_type=model_type,
            head_dim=hf.get("head_dim") or hf["hidden_size"] // heads,
            num_key_value_heads=hf.get("num_key_value_heads") or heads,
            rope_theta=float(theta),
            rope_scaling=tuple(sorted(scaling.items())) or None,
            mlp_only_layers=tuple(hf.get("mlp_only_layers") or ()),
            intermediate_size=hf.get("intermediate_size") or 0,
            layer_types=tuple(hf.get("layer_types") or ()),
            partial_rotary_factor=float(partial),
        )
        if isinstance(kw.get("eos_token_id"), list):
            kw["eos_token_id"] = tuple(kw["eos_token_id"])
        hf_check.check_model(
            kw, MODEL_TYPES[model_type], head_dim_given=bool(hf.get("head_dim"))
        )
        kw.update(overrides)
        return cls(**kw)

    def to_hf(self) -> dict[str, Any]:
        """The `config.json` dict transformers (and vLLM) read."""
        skip = {"param_dtype", "dtype", "rope_scaling", "rope_theta", "model_type"}
        skip.add("moe_impl")
        skip |= set(_HF_SKIP.get(self.model_type, ()))
        out: dict[str, Any] = {
            "architectures": [ARCHITECTURES[self.model_type]],
            "model_type": self.model_type,
        }
        for f in dataclasses.fields(self):
            if f.name in skip:
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        if self.num_experts == 0:
            for k in (
                "num_experts",
                "num_experts_per_tok",
                "moe_intermediate_size",
                "norm_topk_prob",
                "decoder_sparse_step",
                "mlp_only_layers",
                "router_aux_loss_coef",
            ):
                out.pop(k, None)
        if self.mtp_num_hidden_layers == 0:  # plain checkpoints do not name it
            out.pop("mtp_num_hidden_layers")
        for k, off in _HYBRID_FIELDS.items():  # only hybrid configs name these
            if out.get(k) == off:
                out.pop(k)
        rope = {"rope_type": "default", "rope_theta": self.rope_theta}
        rope.update(dict(self.rope_scaling or ()))
        if self.partial_rotary_factor != 1.0:  # both places: HF 5 and older readers
            rope["partial_rotary_factor"] = self.partial_rotary_factor
        else:
            out.pop("partial_rotary_factor")
        out["rope_parameters"] = rope
        out["rope_theta"] = self.rope_theta
        out["torch_dtype"] = self.param_dtype
        return out


def _one_of(value: object, allowed) -> bool:
    return isinstance(value, str) and value in allowed


def config_from_fields(fields: dict[str, Any]) -> ModelConfig:
    """A ModelConfig from its field values (a run's `cfg.model`), checked as
    `from_hf` checks a file.

    Raises:
      ValueError: naming each unknown, missing or unusable key.
    """
    names = {f.name: f for f in dataclasses.fields(ModelConfig)}
    bad = [f"unknown key {k!r}" for k in sorted(set(fields) - set(names))]
    need = [n for n, f in names.items() if f.default is dataclasses.MISSING]
    bad += [f"missing key {k!r}" for k in need if k not in fields]
    if not _one_of(fields.get("model_type"), MODEL_TYPES):
        bad.append(
            f"model_type: expected one of {sorted(MODEL_TYPES)}, "
            f"got {fields.get('model_type')!r}"
        )
    for key, allowed in (
        ("param_dtype", DTYPES),
        ("dtype", DTYPES),
        ("moe_impl", MOE_IMPLS),
    ):
        if key in fields and not _one_of(fields[key], allowed):
            bad.append(f"{key}: expected one of {sorted(allowed)}, got {fields[key]!r}")
    if bad:
        raise ValueError("; ".join(bad))
    plain = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    scaling = fields.get("rope_scaling")  # (key, value) pairs, as a ModelConfig has
    if isinstance(scaling, list | tuple):
        if not all(isinstance(p, list | tuple) and len(p) == 2 for p in scaling):
            raise ValueError("rope_scaling: expected (key, value) pairs or null")
        plain["rope_scaling"] = dict(scaling)
    hf_check.check_sizes(plain)
    hf_check.check_numbers(plain)
    hf_check.check_model(fields, MODEL_TYPES[fields["model_type"]], head_dim_given=True)
    return ModelConfig(**fields)


# Names some configs use for our fields (transformers' attribute_map).
_ALIASES = {
    "num_local_experts": "num_experts",
    "num_nextn_predict_layers": "mtp_num_hidden_layers",  # Qwen3-Next, DeepSeek-V3
}

ARCHITECTURES = {
    "llama": "LlamaForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "qwen3_5_moe_text": "Qwen3_5MoeForCausalLM",  # what AutoModelForCausalLM builds
}

# Fields that only hybrid (Qwen3.5) configs carry, with their "absent" value.
_HYBRID_FIELDS = {
    "layer_types": [],
    "linear_conv_kernel_dim": 0,
    "linear_key_head_dim": 0,
    "linear_value_head_dim": 0,
    "linear_num_key_heads": 0,
    "linear_num_value_heads": 0,
    "shared_expert_intermediate_size": 0,
}
# Our fields a family's HF config does not have (Qwen3.5-MoE: every layer is MoE,
# top-k weights are always renormalised, there is no dense MLP).
_HF_SKIP = {
    "qwen3_5_moe_text": (
        "intermediate_size",
        "norm_topk_prob",
        "decoder_sparse_step",
        "mlp_only_layers",
    ),
}
# mRoPE sections: text tokens have equal t/h/w positions, so plain RoPE results.
_TEXT_ONLY_ROPE_KEYS = ("mrope_section", "mrope_interleaved")


def _text_part(hf: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's `text_config` (special tokens filled from the top)."""
    text = hf.get("text_config")
    if not isinstance(text, dict):
        return hf
    out = dict(text)
    out.setdefault("model_type", f"{hf.get('model_type')}_text")
    for k in ("tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id"):
        if out.get(k) is None and hf.get(k) is not None:
            out[k] = hf[k]
    return out


def _qwen3_5_defaults(hf: dict[str, Any]) -> dict[str, Any]:
    """transformers' `Qwen3_5MoeTextConfig` defaults for fields a file may omit."""
    hf = dict(hf)
    every = hf.get("full_attention_interval", 4)
    if not hf.get("layer_types"):
        hf["layer_types"] = [
            "full_attention" if (i + 1) % every == 0 else "linear_attention"
            for i in range(hf["num_hidden_layers"])
        ]
    rope = hf.get("rope_parameters") or {}
    if "partial_rotary_factor" not in rope:
        hf.setdefault("partial_rotary_factor", 0.25)
    return hf


_HF_DEFAULTS = {"qwen3_5_moe_text": _qwen3_5_defaults}


def load_config(path: str | Path, **overrides) -> ModelConfig:
    """Reads `config.json` (a file or the folder holding it)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        hf = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}:{e.lineno}: invalid JSON ({e.msg})") from e
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not UTF-8 text") from None
    if not isinstance(hf, dict):
        raise ValueError(f"{p}: expected a JSON object, got {type(hf).__name__}")
    try:
        return ModelConfig.from_hf(hf, **overrides)
    except KeyError as e:
        raise ValueError(f"{p}: missing key {e}") from None
    except (TypeError, AttributeError) as e:  # a field of the wrong type
        raise ValueError(f"{p}: a field has the wrong type ({e})") from None
    except ValueError as e:  # hf_check's, or an unsupported model_type
        raise ValueError(f"{p}: {e}") from None
