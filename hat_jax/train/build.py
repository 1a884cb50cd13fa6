"""What a stage starts from: the tokenizer, the model (`init_from`), its adapters.

`init_from` chains stages: "" builds `cfg.model` from scratch (seeded); a workdir
of an earlier run (it holds `config.json` and `ckpt/`) gives its latest params, with
any LoRA adapters merged into the base weights; a HF folder (config.json +
safetensors, e.g. from `save_hf`) is read by `load_hf`, no tokenizer needed; a
`.gguf` file or an asset name goes through `hat_jax.load_model`.

`cfg.lora` (`rank` 0 = off) then decides what the optimiser trains:
`add_adapters` wraps the decoder's projections in LoRA adapters and
`trainable_filter` picks the adapters (plus the MTP head when the run trains one)
for `init_state(..., trainable=...)`; everything else is carried frozen.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import ml_collections
from flax import nnx

from hat_jax import assets
from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.models import CausalLM, ModelConfig, build_model
from hat_jax.models.config import config_from_fields
from hat_jax.models.lora import LoRAConfig, LoRAParam, apply_lora, has_lora, merge_lora
from hat_jax.text.tokenizer import Tokenizer

__all__ = [
    "add_adapters",
    "check_vocab",
    "load_tokenizer",
    "load_workdir_config",
    "lora_config",
    "make_model",
    "model_from_workdir",
    "trainable_filter",
]


def load_tokenizer(name: str) -> Tokenizer:
    """A tokenizer from a `.gguf` file, a folder with tokenizer.json or an asset."""
    p = Path(name).expanduser()
    if not p.exists():
        p = assets.path(name)  # raises AssetError for an unknown name
    if p.suffix == ".gguf":
        from gguf import GGUFReader

        from hat_jax.checkpoints.gguf import gguf_tokenizer

        return gguf_tokenizer(GGUFReader(str(p)))  # metadata only, no tensors
    if p.is_file():
        p = p.parent  # an asset file beside its converted tokenizer.json
    if not (p / "tokenizer.json").exists():  # else a bare "os error 2" from Rust
        raise FileNotFoundError(f"tokenizer {name}: {p}/tokenizer.json not found")
    return Tokenizer.from_folder(p)


def check_vocab(tokenizer: Tokenizer, vocab_size: int) -> None:
    """Refuses a model vocabulary smaller than the tokenizer's.

    An id past the embedding table is no error in JAX (the gather clamps, or
    fills with NaN), so without this check it surfaces later as a NaN loss.

    Raises:
      ValueError: naming both sizes.
    """
    ids = tokenizer.backend.get_vocab(with_added_tokens=True).values()
    need = max(tokenizer.vocab_size, max(ids, default=-1) + 1)
    if int(vocab_size) < need:
        raise ValueError(
            f"model vocab_size {vocab_size} is smaller than the tokenizer's "
            f"{need} tokens (ids 0..{need - 1}): set model.vocab_size >= {need} "
            "or use the model's own tokenizer"
        )


def load_workdir_config(workdir: str | Path) -> ml_collections.ConfigDict:
    """The `config.json` a run wrote into its workdir.

    Raises:
      RunConfigError: `path:line: ...` when it is not a JSON object, or its
        `model` / `optim` groups are not objects.
    """
    from hat_jax.train.workdir import RunConfigError, read_run_config

    path = Path(workdir) / "config.json"
    record = read_run_config(path)
    for group in ("model", "optim"):
        if not isinstance(record.get(group), dict):
            raise RunConfigError(f"{path}: expected an object {group!r}")
    return ml_collections.ConfigDict(record)


def model_block(**fields) -> ml_collections.ConfigDict:
    """A config's `model` block holding every `ModelConfig` field: `fields` set,
    the others at their defaults, so `--config.model.KEY=VALUE` can set any of
    them (a config names only what differs from the defaults)."""
    return ml_collections.ConfigDict(dataclasses.asdict(ModelConfig(**fields)))


def model_config(cfg: ml_collections.ConfigDict) -> ModelConfig:
    """`cfg.model` (HF field names) as a ModelConfig: float32 params, and the
    matmuls in `cfg.compute_dtype` (bf16 compute keeps fp32 master weights).

    Raises:
      ValueError: `model: ...` naming each unknown, missing or unusable key.
    """
    fields = {k: _tuples(v) for k, v in cfg.model.to_dict().items()}
    fields["param_dtype"] = "float32"
    fields["dtype"] = cfg.get("compute_dtype", fields.get("dtype", "float32"))
    try:
        return config_from_fields(fields)
    except ValueError as e:
        raise ValueError(f"model: {e}") from None


def _tuples(v):
    # JSON turns the config's tuples into lists; ModelConfig must stay hashable.
    return tuple(_tuples(x) for x in v) if isinstance(v, list | tuple) else v


def lora_config(cfg: ml_collections.ConfigDict) -> LoRAConfig | None:
    """`cfg.lora` as a LoRAConfig; None when absent or `rank` is 0 (off)."""
    lc = cfg.get("lora")
    if lc is None or int(lc.rank) == 0:
        return None
    if float(lc.get("dropout", 0.0)) != 0.0:
        # The jitted steps carry no dropout RNG state between steps: a mask drawn
        # inside them would repeat every step, so refuse rather than mislead.
        raise ValueError(f"lora.dropout must be 0 in the trainers, got {lc.dropout}")
    return LoRAConfig(
        rank=int(lc.rank),
        alpha=float(lc.alpha),
        targets=tuple(lc.target_modules),
    )


def add_adapters(cfg: ml_collections.ConfigDict, model: CausalLM) -> CausalLM:
    """`model` with LoRA adapters per `cfg.lora` (B = 0: same function); or as is."""
    lcfg = lora_config(cfg)
    if lcfg is None:
        return model
    # A key apart from the one that initialised the base weights.
    key = jax.random.fold_in(jax.random.PRNGKey(int(cfg.seed)), 0x10A)
    return apply_lora(model, lcfg, rngs=nnx.Rngs(params=key))


def trainable_filter(cfg: ml_collections.ConfigDict, model: CausalLM):
    """The nnx filter of what the optimiser updates (`init_state(trainable=)`).

    `cfg.mtp_only`: the MTP head's params alone. Full fine-tuning: every
    `nnx.Param`, except an MTP head no loss reaches
    (`cfg.mtp_weight` = 0: frozen, so weight decay does not shrink it). LoRA: the
    adapters, and the MTP head's params too when the model has one and
    `cfg.mtp_weight` > 0 (a head not co-trained with the adapted trunk drafts
    badly, and it is small).
    """
    has_mtp = getattr(model, "mtp", None) is not None
    train_mtp = has_mtp and float(cfg.get("mtp_weight", 0)) > 0
    if cfg.get("mtp_only", False):  # the standalone MTP mode: the trunk is frozen
        if not has_mtp:
            raise ValueError(
                "mtp_only=True needs an MTP head: set model.mtp_num_hidden_layers"
            )
        return nnx.All(nnx.Param, nnx.PathContains("mtp"))
    if lora_config(cfg) is None:
        if has_mtp and not train_mtp:  # no loss reaches it: keep it out of decay
            return nnx.All(nnx.Param, nnx.Not(nnx.PathContains("mtp")))
        return nnx.Param
    if train_mtp:
        return nnx.Any(LoRAParam, nnx.All(nnx.Param, nnx.PathContains("mtp")))
    return LoRAParam


_INDEX = "model.safetensors.index.json"


def is_workdir(p: Path) -> bool:
    return p.is_dir() and (p / "config.json").exists() and (p / "ckpt").is_dir()


def _is_hf_folder(p: Path) -> bool:
    return (
        p.is_dir()
        and (p / "config.json").exists()
        and any((p / f).exists() for f in ("model.safetensors", _INDEX))
    )


def model_from_workdir(
    workdir: str | Path, dtype: str = "float32"
) -> tuple[CausalLM, ModelConfig]:
    """The latest params of an earlier run, LoRA adapters merged (a plain model).

    The restore template is rebuilt from the run's own `config.json` (its model,
    `lora`, `mtp_weight` and `optim`), so the split matches what it saved.
    """
    from hat_jax.train.state import init_state, make_optimizer

    workdir = Path(workdir)
    prev = load_workdir_config(workdir)
    try:
        mcfg = model_config(prev).replace(dtype=dtype)
    except ValueError as e:
        raise ValueError(f"{workdir / 'config.json'}: {e}") from None
    model = nnx.eval_shape(lambda: add_adapters(prev, build_model(mcfg)))
    graphdef, template = init_state(
        model,
        make_optimizer(prev.optim),
        seed=0,
        trainable=trainable_filter(prev, model),
    )
    template = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), template)
    # keep: large, so opening the earlier run's folder never prunes its steps.
    with Checkpointer(workdir / "ckpt", save_every=1, keep=1 << 20) as ckpt:
        restored = ckpt.restore_latest(template)
    if restored is None:
        raise FileNotFoundError(f"{workdir}/ckpt holds no checkpoint")
    state, _, _ = restored
    model = nnx.merge(graphdef, state.params, state.frozen)
    return (merge_lora(model) if has_lora(model) else model), mcfg


def _from_hf_folder(p: Path, dtype: str) -> tuple[CausalLM, ModelConfig]:
    from hat_jax.checkpoints.hf import load_hf

    return load_hf(p, param_dtype="float32", dtype=dtype)


# Where a stage can start from, tried in order: (test, loader(path, dtype)).
_SOURCES = (
    (is_workdir, model_from_workdir),
    (_is_hf_folder, _from_hf_folder),
)


def make_model(cfg: ml_collections.ConfigDict) -> tuple[CausalLM, ModelConfig]:
    """The model a stage starts from (module docstring), without adapters."""
    src = str(cfg.get("init_from") or "")
    if not src:
        mcfg = model_config(cfg)
        return build_model(mcfg, seed=int(cfg.seed)), mcfg
    p = Path(src).expanduser()
    dtype = cfg.get("compute_dtype", "float32")
    for test, load in _SOURCES:
        if test(p):
            return with_moe_impl(cfg, *with_mtp_head(cfg, *load(p, dtype)))
    if p.is_dir():
        raise FileNotFoundError(
            f"init_from={src}: neither a run workdir (config.json + ckpt/) nor a "
            f"HF folder (config.json + model.safetensors or {_INDEX})"
        )
    from hat_jax.loading import load_model

    model, mcfg, _ = load_model(src, param_dtype="float32", dtype=dtype)
    return with_moe_impl(cfg, *with_mtp_head(cfg, model, mcfg))


def with_moe_impl(cfg, model: CausalLM, mcfg: ModelConfig):
    """`cfg.model.moe_impl` on a loaded model: a checkpoint's or HF folder's
    config.json does not carry it (it is how experts run, not what they are)."""
    impl = (cfg.get("model") or {}).get("moe_impl")
    if not impl or impl == mcfg.moe_impl or not mcfg.num_experts:
        return model, mcfg
    if impl not in ("dense", "topk"):
        raise ValueError(f"model.moe_impl must be 'dense' or 'topk', got {impl!r}")
    from hat_jax.models.qwen3_moe import SparseMoeBlock

    for _, module in nnx.iter_modules(model):
        if isinstance(module, SparseMoeBlock):  # the hybrid's block subclasses it
            module.impl = impl
    mcfg = mcfg.replace(moe_impl=impl)
    model.config = mcfg
    return model, mcfg


def with_mtp_head(cfg, model: CausalLM, mcfg: ModelConfig):
    """Adds a freshly initialised MTP head to a loaded model that has none.

    When `cfg.model.mtp_num_hidden_layers` asks for a head and the model a stage
    starts from (a base without `mtp.*` weights, e.g. SmolLM2) has none, the head
    is built from `cfg.seed` and the trunk's weights are kept as loaded. A model
    that already has a head (its base's `mtp.*` weights) is returned unchanged.
    """
    want = int((cfg.get("model") or {}).get("mtp_num_hidden_layers", 0) or 0)
    if want <= 0 or getattr(model, "mtp", None) is not None:
        return model, mcfg
    mcfg = mcfg.replace(mtp_num_hidden_layers=want)
    fresh = build_model(mcfg, seed=int(cfg.get("seed", 0)))
    nnx.update(fresh, nnx.state(model))  # every trunk param; the head stays fresh
    return fresh, mcfg
