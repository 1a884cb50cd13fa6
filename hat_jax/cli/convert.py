"""Convert a GGUF file or HF folder into a HF folder transformers and vLLM load.

Example:
  hat convert smollm2-135m-instruct out/smollm2-hf --dtype bfloat16
"""

from __future__ import annotations

from hat_jax.checkpoints.hf import save_hf
from hat_jax.loading import load_model


def add_arguments(p) -> None:
    p.add_argument("src", help="a .gguf file, a HF folder or an asset name")
    p.add_argument("dst", help="output folder")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="tensor dtype to write (default: the model's)",
    )
    p.add_argument("--shard-gb", type=float, default=2.0, help="max shard size in GB")


def run(args) -> int:
    model, cfg, tok = load_model(args.src)
    out = save_hf(
        model,
        args.dst,
        tokenizer=tok,
        dtype=args.dtype,
        max_shard_bytes=int(args.shard_gb * (1 << 30)),
    )
    print(f"wrote {cfg.model_type} ({cfg.num_hidden_layers} layers) to {out}")
    return 0
