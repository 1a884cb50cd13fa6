"""What a stage starts from: the tokenizer and the model (`init_from`).

`init_from` chains stages: "" builds `cfg.model` from scratch (seeded); a workdir
of an earlier run (it holds `config.json` and `ckpt/`) gives its latest params; a
HF folder, a `.gguf` file or an asset name goes through `hat_jax.load_model`.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import ml_collections
from flax import nnx

from hat_jax import assets
from hat_jax.checkpoints.train_state import Checkpointer
from hat_jax.models import CausalLM, ModelConfig, build_model
from hat_jax.text.tokenizer import Tokenizer

__all__ = ["load_tokenizer", "load_workdir_config", "make_model"]


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
    return Tokenizer.from_folder(p)


def load_workdir_config(workdir: str | Path) -> ml_collections.ConfigDict:
    """The `config.json` a run wrote into its workdir."""
    path = Path(workdir) / "config.json"
    return ml_collections.ConfigDict(json.loads(path.read_text()))


def model_config(cfg: ml_collections.ConfigDict) -> ModelConfig:
    """`cfg.model` (HF field names) as a ModelConfig: float32 params, and the
    matmuls in `cfg.compute_dtype` (bf16 compute keeps fp32 master weights)."""
    fields = {k: _tuples(v) for k, v in cfg.model.to_dict().items()}
    fields["param_dtype"] = "float32"
    fields["dtype"] = cfg.get("compute_dtype", fields.get("dtype", "float32"))
    return ModelConfig(**fields)


def _tuples(v):
    # JSON turns the config's tuples into lists; ModelConfig must stay hashable.
    return tuple(_tuples(x) for x in v) if isinstance(v, list | tuple) else v


def _is_workdir(p: Path) -> bool:
    return p.is_dir() and (p / "config.json").exists() and (p / "ckpt").is_dir()


def _from_workdir(workdir: Path, dtype: str) -> tuple[CausalLM, ModelConfig]:
    from hat_jax.train.state import init_state, make_optimizer

    prev = load_workdir_config(workdir)
    mcfg = model_config(prev).replace(dtype=dtype)
    model = nnx.eval_shape(lambda: build_model(mcfg))
    _, template = init_state(model, make_optimizer(prev.optim), seed=0)
    template = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), template)
    # keep: large, so opening the earlier run's folder never prunes its steps.
    with Checkpointer(workdir / "ckpt", save_every=1, keep=1 << 20) as ckpt:
        restored = ckpt.restore_latest(template)
    if restored is None:
        raise FileNotFoundError(f"{workdir}/ckpt holds no checkpoint")
    state, _, _ = restored
    model = build_model(mcfg)
    graphdef, _, rest = nnx.split(model, nnx.Param, ...)
    return nnx.merge(graphdef, state.params, rest), mcfg


def make_model(cfg: ml_collections.ConfigDict) -> tuple[CausalLM, ModelConfig]:
    """The model a stage starts from (module docstring)."""
    src = str(cfg.get("init_from") or "")
    if not src:
        mcfg = model_config(cfg)
        return build_model(mcfg, seed=int(cfg.seed)), mcfg
    p = Path(src).expanduser()
    dtype = cfg.get("compute_dtype", "float32")
    if _is_workdir(p):
        return _from_workdir(p, dtype)
    from hat_jax.loading import load_model

    model, mcfg, _ = load_model(src, param_dtype="float32", dtype=dtype)
    return model, mcfg
