"""Partition rules: which mesh axes split which dimension of each parameter.

A rule is `(regex, PartitionSpec)`; the first rule whose regex is found
(`re.search`) in a leaf's path ("layers/3/self_attn/q_proj/kernel") gives its spec.
The same rules shard the optimiser state: AdamW's `mu`/`nu` paths end with the
param's path. Layouts (Flax): Linear kernels are [in, out], the embedding [V, D],
stacked experts [E, D, F] / [E, F, D].

    kernels into heads / FFN   [D, out]  -> (fsdp, tensor)
    kernels out of them        [in, D]   -> (tensor, fsdp)
    routed experts             [E, ., .] -> (expert, fsdp | tensor, tensor | fsdp)
    norms, biases of D, scalars          -> replicated

A dimension that its axes do not divide is replicated instead (`shard_specs`
reports it); a leaf no rule matches is replicated and reported as unmatched.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hat_jax.parallel.mesh import axis_sizes

__all__ = [
    "RULES",
    "ShardingReport",
    "get_rules",
    "leaf_path",
    "named_shardings",
    "shard_specs",
    "spec_for",
]

Rule = tuple[str, P]

_IN = ("fsdp", "tensor")  # [D, out]
_OUT = ("tensor", "fsdp")  # [in, D]

EMBED: tuple[Rule, ...] = (
    (r"(^|/)embed_tokens/embedding$", P("tensor", "fsdp")),  # [V, D]
    (r"(^|/)lm_head/kernel$", P(*_IN)),  # [D, V]
)
ATTENTION: tuple[Rule, ...] = (
    (r"(^|/)(q|k|v)_proj/kernel$", P(*_IN)),
    (r"(^|/)(q|k|v)_proj/bias$", P("tensor")),
    (r"(^|/)o_proj/kernel$", P(*_OUT)),
    (r"(^|/)o_proj/bias$", P()),
)
MLP: tuple[Rule, ...] = (
    (r"(^|/)(gate|up)_proj/kernel$", P(*_IN)),  # dense and shared expert
    (r"(^|/)down_proj/kernel$", P(*_OUT)),
    (r"(^|/)(gate|up|down)_proj/bias$", P()),
)
EXPERTS: tuple[Rule, ...] = (
    (r"(^|/)mlp/(gate|up)_proj$", P("expert", *_IN)),  # [E, D, F]
    (r"(^|/)mlp/down_proj$", P("expert", *_OUT)),  # [E, F, D]
    (r"(^|/)mlp/gate/kernel$", P("fsdp", None)),  # router [D, E]
    (r"(^|/)shared_expert_gate/kernel$", P("fsdp", None)),  # [D, 1]
)
DELTANET: tuple[Rule, ...] = (
    (r"(^|/)linear_attn/in_proj_(qkv|z|a|b)/kernel$", P(*_IN)),
    (r"(^|/)linear_attn/out_proj/kernel$", P(*_OUT)),
    (r"(^|/)linear_attn/conv1d/weight$", P("tensor", None, None)),  # [C, 1, K]
    (r"(^|/)linear_attn/(dt_bias|A_log)$", P()),  # [HV]
)
MTP: tuple[Rule, ...] = ((r"(^|/)mtp/fc/kernel$", P("fsdp", None)),)  # [2D, D]
REPLICATED: tuple[Rule, ...] = (
    (r"norm[^/]*/(weight|scale|bias)$", P()),  # every RMSNorm / LayerNorm
    (r"(^|/)lora_(a|b)$", P()),  # LoRA adapters: small
    (r"^(rng|step)$", P()),  # TrainState bookkeeping
)

_DENSE = EMBED + ATTENTION + MLP + REPLICATED
# family (hat_jax.models.config.MODEL_TYPES values) -> rules, first match wins
RULES: dict[str, tuple[Rule, ...]] = {
    "llama": _DENSE,
    "qwen3": _DENSE,
    "qwen3_moe": EXPERTS + _DENSE,
    "qwen3_5_moe": EXPERTS + DELTANET + MTP + _DENSE,
}


def get_rules(family: str) -> tuple[Rule, ...]:
    if family not in RULES:
        raise ValueError(f"no partition rules for {family!r}; have {sorted(RULES)}")
    return RULES[family]


def leaf_path(path) -> str:
    """ "a/b/c" for a key path; nnx Variables' trailing "value" is dropped."""
    s = jax.tree_util.keystr(tuple(path), simple=True, separator="/")
    return s[: -len("/value")] if s.endswith("/value") else s


@dataclasses.dataclass
class ShardingReport:
    """What `shard_specs` decided: leaves without a rule, dims left replicated."""

    unmatched: list[str] = dataclasses.field(default_factory=list)
    replicated_dims: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"unmatched (replicated): {p}" for p in self.unmatched]
        lines += [f"not divisible (replicated): {r}" for r in self.replicated_dims]
        return "\n".join(lines) or "every leaf matched a rule and divides its axes"


def spec_for(
    path: str,
    shape: tuple[int, ...],
    sizes: dict[str, int],
    rules: tuple[Rule, ...],
    report: ShardingReport | None = None,
) -> P:
    """The PartitionSpec of one leaf for mesh axis `sizes` (no devices needed)."""
    if not shape:  # scalars (step counts, ...) are replicated without a rule
        return P()
    spec = next((s for pattern, s in rules if re.search(pattern, path)), None)
    if spec is None:
        if report is not None:
            report.unmatched.append(path)
        return P()
    if len(spec) > len(shape):
        if report is not None:
            report.replicated_dims.append(f"{path} {shape}: rank < spec {spec}")
        return P()
    out = []
    for i, axes in enumerate(tuple(spec) + (None,) * (len(shape) - len(spec))):
        names = (axes,) if isinstance(axes, str) else tuple(axes or ())
        n = math.prod(sizes.get(a, 1) for a in names)
        if names and shape[i] % n:
            if report is not None:
                report.replicated_dims.append(
                    f"{path} dim {i} ({shape[i]}) by {names} ({n})"
                )
            axes = None
        out.append(axes)
    while out and out[-1] is None:
        out.pop()
    return P(*out)


def shard_specs(
    tree: Any, sizes: dict[str, int], rules: tuple[Rule, ...]
) -> tuple[Any, ShardingReport]:
    """PartitionSpecs for every array leaf of `tree` (arrays or ShapeDtypeStructs)."""
    report = ShardingReport()
    specs = jax.tree_util.tree_map_with_path(
        lambda p, x: spec_for(leaf_path(p), tuple(x.shape), sizes, rules, report), tree
    )
    return specs, report


def named_shardings(
    tree: Any, mesh: Mesh, rules: tuple[Rule, ...]
) -> tuple[Any, ShardingReport]:
    """`NamedSharding`s on `mesh` for every leaf of `tree`, plus the report."""
    specs, report = shard_specs(tree, axis_sizes(mesh), rules)
    shardings = jax.tree.map(
        lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda s: isinstance(s, P)
    )
    return shardings, report
