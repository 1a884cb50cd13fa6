"""Checks on a HF `config.json` from elsewhere, before any size in it is used.

A size of 0 divides by zero, a bool passes for 1, 10**8 layers hangs the model
build, a NaN epsilon is silently kept: `check_sizes` and `check_numbers` refuse
each on the raw dict (HF key names), `check_model` the combinations (heads that do
not divide, a layer list of the wrong length). Each raises ValueError naming
every bad key with what was expected and what was given; `load_config` puts the
file's path in front.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from hat_jax.printable import shown

IDS = 2**31 - 1  # token ids and positions are int32 on device
WIDTH = 1 << 20  # hidden / MLP / head widths (the largest models use ~5e4)
LAYERS = 1024  # decoder layers (the largest models have ~130)
HEADS = 1 << 14  # attention heads, experts
# key -> (least, most); a key that is absent or null is not checked here.
SIZES: dict[str, tuple[int, int]] = {
    "vocab_size": (1, IDS),
    "hidden_size": (1, WIDTH),
    "num_hidden_layers": (1, LAYERS),
    "num_attention_heads": (1, HEADS),
    "num_key_value_heads": (1, HEADS),
    "head_dim": (1, WIDTH),
    "max_position_embeddings": (1, IDS),
    "intermediate_size": (0, WIDTH),
    "num_experts": (0, HEADS),
    "num_experts_per_tok": (0, HEADS),
    "moe_intermediate_size": (0, WIDTH),
    "shared_expert_intermediate_size": (0, WIDTH),
    "decoder_sparse_step": (1, LAYERS),
    "full_attention_interval": (1, LAYERS),
    "linear_conv_kernel_dim": (0, 1024),
    "linear_key_head_dim": (0, WIDTH),
    "linear_value_head_dim": (0, WIDTH),
    "linear_num_key_heads": (0, HEADS),
    "linear_num_value_heads": (0, HEADS),
    "mtp_num_hidden_layers": (0, LAYERS),
}
REQUIRED = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
BOOLS = ("tie_word_embeddings", "attention_bias", "mlp_bias", "norm_topk_prob")
TOKEN_IDS = ("bos_token_id", "eos_token_id", "pad_token_id")
LAYER_TYPES = ("linear_attention", "full_attention")  # the hybrid's token mixers
OTHER_LAYER_TYPES = ("full_attention", "sliding_attention")  # transformers writes


def is_int(v: object) -> bool:
    """An integer that is not a bool (JSON `true` is no size)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(v: object) -> bool:
    """A finite real number that is not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _fail(bad: list[str]) -> None:
    if bad:
        raise ValueError("; ".join(bad))


def check_sizes(hf: Mapping[str, Any]) -> None:
    """Refuses a missing required size or one that is not an integer in range."""
    bad = [
        f"missing key {k!r} (expected a positive integer)"
        for k in REQUIRED
        if k not in hf
    ]
    for key, (least, most) in SIZES.items():
        v = hf.get(key)
        if v is None:
            if key in REQUIRED and key in hf:
                bad.append(f"{key}: expected an integer {least}..{most}, got null")
            continue
        if not is_int(v) or not least <= v <= most:
            bad.append(f"{key}: expected an integer {least}..{most}, got {_given(v)}")
    _fail(bad)


def _given(v: object) -> str:
    return shown(repr(v))[:80]


def check_numbers(hf: Mapping[str, Any]) -> None:
    """Refuses a bad epsilon, RoPE base or factor, flag, token id or layer list."""
    bad = []
    eps = hf.get("rms_norm_eps")
    if eps is not None and not (is_number(eps) and 0 < eps < 1):
        bad.append(f"rms_norm_eps: expected a number in (0, 1), got {_given(eps)}")
    for key in ("rope_parameters", "rope_scaling"):
        v = hf.get(key)
        if v is not None and not isinstance(v, Mapping):
            bad.append(f"{key}: expected an object or null, got {_given(v)}")
        elif v:
            bad += _rope_problems(key, v)
    bad += _rope_problems("", hf)  # the top-level rope_theta / partial_rotary_factor
    coef = hf.get("router_aux_loss_coef")
    if coef is not None and not (is_number(coef) and coef >= 0):
        bad.append(f"router_aux_loss_coef: expected a number >= 0, got {_given(coef)}")
    for key in BOOLS:
        if key in hf and hf[key] is not None and not isinstance(hf[key], bool):
            bad.append(f"{key}: expected true or false, got {_given(hf[key])}")
    for key in TOKEN_IDS:
        v = hf.get(key)
        ids = v if isinstance(v, list) and key == "eos_token_id" else [v]
        if v is not None and not (ids and all(is_int(i) for i in ids)):
            want = (
                "an integer, a list of integers"
                if key == "eos_token_id"
                else "an integer"
            )
            bad.append(f"{key}: expected {want} or null, got {_given(v)}")
    act = hf.get("hidden_act", "silu")
    from hat_jax.models.layers import ACTIVATIONS

    if not isinstance(act, str) or act not in ACTIVATIONS:
        bad.append(
            f"hidden_act: expected one of {sorted(ACTIVATIONS)}, got {_given(act)}"
        )
    for key in ("layer_types", "mlp_only_layers"):
        v = hf.get(key)
        if v is not None and not isinstance(v, list):
            bad.append(f"{key}: expected a list, got {_given(v)}")
    _fail(bad)


def _rope_problems(where: str, rope: Mapping[str, Any]) -> list[str]:
    bad = []
    prefix = f"{where}." if where else ""
    theta = rope.get("rope_theta")
    if theta is not None and not (is_number(theta) and theta > 0):
        bad.append(f"{prefix}rope_theta: expected a number > 0, got {_given(theta)}")
    f = rope.get("partial_rotary_factor")
    if f is not None and not (is_number(f) and 0 < f <= 1):
        bad.append(
            f"{prefix}partial_rotary_factor: expected a number in (0, 1], "
            f"got {_given(f)}"
        )
    for k, v in rope.items() if where else ():  # factor, low_freq_factor, ...
        if isinstance(v, float) and not math.isfinite(v):
            bad.append(f"{prefix}{k}: expected a finite number, got {v!r}")
    return bad


def check_model(kw: Mapping[str, Any], family: str, *, head_dim_given: bool) -> None:
    """Refuses sizes that do not fit together (ModelConfig field names)."""
    bad = []
    heads, kv = kw["num_attention_heads"], kw["num_key_value_heads"]
    hidden, layers = kw["hidden_size"], kw["num_hidden_layers"]
    if not head_dim_given and hidden % heads:
        bad.append(
            f"hidden_size {hidden} is not divisible by num_attention_heads {heads} "
            "(and no head_dim is given)"
        )
    if heads % kv:
        bad.append(
            f"num_attention_heads {heads} is not divisible by num_key_value_heads {kv}"
        )
    types = kw.get("layer_types") or ()
    if types and len(types) != layers:
        bad.append(f"layer_types: expected {layers} entries, got {len(types)}")
    allowed = LAYER_TYPES if family == "qwen3_5_moe" else OTHER_LAYER_TYPES
    wrong = sorted({shown(repr(t)) for t in types if t not in allowed})
    if wrong:
        bad.append(f"layer_types: expected {' or '.join(allowed)}, got {wrong[0]}")
    only = kw.get("mlp_only_layers") or ()
    if any(not is_int(i) or not 0 <= i < layers for i in only):
        bad.append(f"mlp_only_layers: expected layer indices 0..{layers - 1}")
    experts, k = kw.get("num_experts", 0), kw.get("num_experts_per_tok", 0)
    step = kw.get("decoder_sparse_step", 1)
    dense = family != "qwen3_5_moe" and any(
        not (experts and i not in only and (i + 1) % step == 0) for i in range(layers)
    )
    if dense and not kw.get("intermediate_size"):
        bad.append("intermediate_size: expected >= 1 (a layer has a dense MLP)")
    if experts:
        if not 1 <= k <= experts:
            bad.append(f"num_experts_per_tok: expected 1..{experts}, got {k}")
        if not kw.get("moe_intermediate_size"):
            bad.append("moe_intermediate_size: expected >= 1 with num_experts > 0")
    if "linear_attention" in types:
        hk, hv = kw.get("linear_num_key_heads", 0), kw.get("linear_num_value_heads", 0)
        for key in (
            "linear_conv_kernel_dim",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_num_key_heads",
            "linear_num_value_heads",
        ):
            if not kw.get(key):
                bad.append(f"{key}: expected >= 1 with linear_attention layers")
        if hk and hv and hv % hk:
            bad.append(
                f"linear_num_value_heads {hv} is not divisible by "
                f"linear_num_key_heads {hk}"
            )
    _fail(bad)
