"""Memory plan: bytes per device for training and rollout of a model on a mesh.

Parameter shapes come from `nnx.eval_shape` of the real model (no memory is
allocated) and are split by the partition rules exactly as `state_shardings`
would split them. The rest is analytic:

    master params  fp32, 4 B/param          gradients      fp32, 4 B/param
    AdamW m + v    fp32, 8 B/param          compute copy   bf16, 2 B/param
    activations    bf16, per token and layer (below), / tensor axis
    rollout        bf16 weights + KV cache of the full-attention layers (bf16)
                   + DeltaNet state (fp32 S, bf16 conv window) per sequence

Activations saved for the backward pass, per token and layer, in elements:
full attention 4D + 5NH + 3KH; DeltaNet 4D + 2C + 3 HV DV + 64 HV (C conv
channels, 64 the chunk); routed experts with top-k dispatch (`moe_impl="topk"`)
k (D + 3F) + E, or every expert on every token (`moe_impl="dense"`) E (3F) + E;
shared expert 3 Fs. With `remat` only each layer's input (D) is kept, plus one
layer recomputed. The attention probabilities are not in these rows: the
training kernel (`attention_ops.fused_attention`) keeps each query block's
float32 P for its backward pass (N x T x S / 2 per sequence, about), which a
note sizes. These are estimates (XLA fuses some and keeps others); params,
gradients and optimiser state are exact.
"""

from __future__ import annotations

import dataclasses
import math

import jax
from flax import nnx

from hat_jax.models import ModelConfig, build_model
from hat_jax.models.attention_ops import Q_BLOCK
from hat_jax.parallel.mesh import AXES
from hat_jax.parallel.rules import get_rules, leaf_path, spec_for

__all__ = ["HARDWARE", "Plan", "activation_elems", "make_plan", "param_shapes"]

GB = 1e9
HARDWARE = {"h20": 96 * GB, "h200": 141 * GB, "h100": 80 * GB, "a100": 80 * GB}
CHUNK = 64  # DeltaNet chunk length (hat_jax.models.gated_deltanet.CHUNK)


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """{path: shape} of every `nnx.Param` of the model, without allocating it."""
    model = nnx.eval_shape(lambda: build_model(cfg, seed=0))
    _, params = nnx.split(model, nnx.Param, ...)[:2]
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    return {leaf_path(p): tuple(x.shape) for p, x in flat}


def _per_device(shape, spec, sizes) -> int:
    n = math.prod(shape)
    for axes in spec:
        names = (axes,) if isinstance(axes, str) else tuple(axes or ())
        n //= math.prod(sizes[a] for a in names)
    return n


def activation_elems(cfg: ModelConfig, layer_type: str, moe_impl: str) -> int:
    """Elements saved per token by one layer for the backward pass (see module)."""
    d, n, k, h = (
        cfg.hidden_size,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.head_dim,
    )
    if layer_type == "linear_attention":
        hv, dv = cfg.linear_num_value_heads, cfg.linear_value_head_dim
        c = 2 * cfg.linear_num_key_heads * cfg.linear_key_head_dim + hv * dv
        mixer = 4 * d + 2 * c + 3 * hv * dv + CHUNK * hv
    else:
        mixer = 4 * d + 5 * n * h + 3 * k * h
    if cfg.num_experts:
        e, f = cfg.num_experts, cfg.moe_intermediate_size
        if moe_impl == "dense":
            mlp = e * 3 * f + e
        else:
            mlp = cfg.num_experts_per_tok * (d + 3 * f) + e
        mlp += 3 * cfg.shared_expert_intermediate_size
    else:
        mlp = 3 * cfg.intermediate_size
    return mixer + mlp


@dataclasses.dataclass
class Plan:
    """Bytes per device; `rows` are (name, total over the mesh, per device)."""

    mesh: dict[str, int]
    n_params: int
    rows: list[tuple[str, float, float]]
    train_bytes: float
    rollout_bytes: float
    notes: list[str]

    def table(self, hardware: dict[str, float]) -> str:
        n = math.prod(self.mesh.values())
        mesh = " ".join(f"{a}={s}" for a, s in self.mesh.items())
        out = [
            f"{self.n_params / 1e9:.2f}B params on {n} devices ({mesh})",
            "",
            f"| {'item':38s} | {'total GB':>9s} | {'per device GB':>13s} |",
            f"|{'-' * 40}|{'-' * 11}|{'-' * 15}|",
        ]
        for name, total, dev in self.rows:
            out.append(f"| {name:38s} | {total / GB:9.1f} | {dev / GB:13.2f} |")
        out.append("")
        for hw, cap in hardware.items():
            for what, b in (
                ("train", self.train_bytes),
                ("rollout", self.rollout_bytes),
            ):
                ok = "fits" if b <= cap else "DOES NOT FIT"
                out.append(
                    f"{n}x{hw} ({cap / GB:.0f} GB): {what} {b / GB:.1f} GB/device, "
                    f"{ok} ({(cap - b) / GB:+.1f} GB)"
                )
        out += [f"note: {x}" for x in self.notes]
        return "\n".join(out)


def make_plan(
    cfg: ModelConfig,
    mesh: dict[str, int],
    *,
    tokens_per_device: int = 8192,
    remat: bool = True,
    compute_dtype: str = "bfloat16",
    moe_impl: str = "topk",
    loss_chunk: int = 512,
    kv_batch: int = 64,
    kv_len: int = 32768,
    seq_len: int | None = None,
    shapes: dict[str, tuple[int, ...]] | None = None,
) -> Plan:
    """The memory plan of `cfg` on a mesh given as {axis: size} (all of `AXES`).

    `seq_len` (default: `tokens_per_device`) only sizes the note on the saved
    attention probabilities.
    """
    sizes = {a: int(mesh.get(a, 1)) for a in AXES}
    n_dev = math.prod(sizes.values())
    shapes = param_shapes(cfg) if shapes is None else shapes
    rules = get_rules(cfg.family)
    n_params = sum(math.prod(s) for s in shapes.values())
    per_dev = sum(
        _per_device(s, spec_for(p, s, sizes, rules), sizes) for p, s in shapes.items()
    )
    rows = [
        ("params, fp32 master", 4 * n_params, 4 * per_dev),
        ("gradients, fp32", 4 * n_params, 4 * per_dev),
        ("AdamW m + v, fp32", 8 * n_params, 8 * per_dev),
    ]
    if compute_dtype == "bfloat16":
        rows.append(("params, bf16 compute copy", 2 * n_params, 2 * per_dev))

    kinds = cfg.layer_types or ("full_attention",) * cfg.num_hidden_layers
    per_layer = [activation_elems(cfg, t, moe_impl) for t in kinds]
    if remat:
        per_tok = cfg.num_hidden_layers * cfg.hidden_size + max(per_layer)
    else:
        per_tok = sum(per_layer)
    t = sizes["tensor"]
    act = 2 * tokens_per_device * per_tok / t
    act += 2 * 4 * loss_chunk * cfg.vocab_size / t  # a chunk's fp32 logits + grad
    rows.append((f"activations ({tokens_per_device} tok/device)", act * n_dev, act))
    train = sum(r[2] for r in rows)

    n_full = sum(k == "full_attention" for k in kinds)
    n_lin = len(kinds) - n_full
    kv_seq = n_full * 2 * cfg.num_key_value_heads * cfg.head_dim * kv_len * 2
    c = 2 * cfg.linear_num_key_heads * cfg.linear_key_head_dim
    c += cfg.linear_num_value_heads * cfg.linear_value_head_dim
    gdn_seq = n_lin * (
        4
        * cfg.linear_num_value_heads
        * cfg.linear_key_head_dim
        * cfg.linear_value_head_dim
        + 2 * max(cfg.linear_conv_kernel_dim - 1, 0) * c
    )
    kv_total = kv_batch * (kv_seq + gdn_seq)
    rows += [
        ("rollout: params, bf16", 2 * n_params, 2 * per_dev),
        (
            f"rollout: KV cache ({kv_batch} x {kv_len} tok)",
            kv_batch * kv_seq,
            kv_batch * kv_seq / n_dev,
        ),
        ("rollout: DeltaNet state", kv_batch * gdn_seq, kv_batch * gdn_seq / n_dev),
    ]
    rollout = 2 * per_dev + kv_total / n_dev
    notes = [
        f"activations: remat={remat}, moe_impl={moe_impl}, counted in bf16 (2 B), "
        f"/ tensor={t}; an estimate (params, grads, optimiser state are exact)",
        "rollout: assumes sequences spread over all devices and weights sharded as "
        "in training; the sampler runs on one device today (`hat train opd` and "
        "`hat train rl` refuse a mesh)",
    ]
    if compute_dtype != "bfloat16":
        notes.append(
            f"activations: compute_dtype={compute_dtype} keeps them in 4 B, twice "
            "the bf16 estimate above"
        )
    if n_full:
        notes.append(_attention_note(cfg, n_full, tokens_per_device, seq_len, remat, t))
    if cfg.num_experts:
        notes.append(_moe_note(cfg, kinds, moe_impl, tokens_per_device, remat, t))
    return Plan(sizes, n_params, rows, train, rollout, notes)


def _attention_note(
    cfg: ModelConfig, n_full: int, tokens: int, seq_len: int | None, remat: bool, t: int
) -> str:
    """The float32 probabilities `fused_attention` saves for its backward pass:
    per sequence, N heads x each query block's rows x the keys up to its end."""
    seq = seq_len or tokens
    step = Q_BLOCK if 0 < Q_BLOCK < seq else seq
    per_seq = cfg.num_attention_heads * sum(
        (min(lo + step, seq) - lo) * min(lo + step, seq) for lo in range(0, seq, step)
    )
    layers = 1 if remat else n_full
    gb = 4 * per_seq * (tokens / seq) * layers / t / GB
    which = "one layer's at a time (remat)" if remat else f"{n_full} layers'"
    return (
        "attention: the training kernel (attention_ops.fused_attention) keeps each "
        f"query block's fp32 probabilities for the backward pass, {which}, "
        f"sequences of {seq} tokens: +{gb:.1f} GB/device over the activations row"
    )


def _moe_note(
    cfg: ModelConfig,
    kinds: tuple[str, ...],
    moe_impl: str,
    tokens: int,
    remat: bool,
    t: int,
) -> str:
    """What `moe_impl` runs (`qwen3_moe.SparseMoeBlock`) and what the other
    implementation would cost or save in activations."""
    topk = [activation_elems(cfg, k, "topk") for k in kinds]
    dense = [activation_elems(cfg, k, "dense") for k in kinds]
    extra = (max(dense) - max(topk)) if remat else sum(dense) - sum(topk)
    gb = 2 * tokens * extra / t / GB
    k, e = cfg.num_experts_per_tok, cfg.num_experts
    if moe_impl == "dense":
        return (
            f"moe_impl=dense: every one of the {e} experts runs on every token; "
            f"moe_impl=topk (top-{k} dispatch) would save {gb:.1f} GB/device of "
            "activations"
        )
    return (
        f"moe_impl=topk: each token runs through its top-{k} of {e} experts "
        f"(grouped matmuls); moe_impl=dense would add {gb:.1f} GB/device of "
        "activations"
    )
