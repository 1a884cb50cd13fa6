"""Convert a GGUF file, HF folder or training run into a HF folder (transformers, vLLM).

Examples:
  hat convert smollm2-135m-instruct out/smollm2-hf --dtype bfloat16
  hat convert runs/sft_tiny out/sft-hf     # a run's latest checkpoint, LoRA merged
"""

from __future__ import annotations

from pathlib import Path

from hat_jax.checkpoints.hf import save_hf
from hat_jax.cli.argtypes import finite
from hat_jax.loading import load_model


def add_arguments(p) -> None:
    p.add_argument(
        "src", help="a .gguf file, a HF folder, an asset name or a `hat train` workdir"
    )
    p.add_argument("dst", help="output folder")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="tensor dtype to write (default: the model's)",
    )
    p.add_argument(
        "--shard-gb",
        type=finite(low=0, open_low=True),
        default=2.0,
        help="max shard size in GB (a number > 0)",
    )


def _load(src: str):
    from hat_jax.train import build

    if build.is_workdir(Path(src).expanduser()):
        model, cfg = build.model_from_workdir(src)
        run_cfg = build.load_workdir_config(src)
        return model, cfg, build.load_tokenizer(run_cfg.tokenizer)
    return load_model(src)


def _overlap(src: str, dst: str) -> bool:
    a, b = Path(src).expanduser().resolve(), Path(dst).expanduser().resolve()
    return a.exists() and (a == b or a in b.parents or b in a.parents)


def run(args) -> int:
    if _overlap(args.src, args.dst):  # writing would overwrite what it reads
        raise ValueError(
            f"{args.dst}: the output folder overlaps the source {args.src}"
        )
    model, cfg, tok = _load(args.src)
    out = save_hf(
        model,
        args.dst,
        tokenizer=tok,
        dtype=args.dtype,
        max_shard_bytes=int(args.shard_gb * (1 << 30)),
    )
    print(f"wrote {cfg.model_type} ({cfg.num_hidden_layers} layers) to {out}")
    return 0
