"""Stage 1 (HSA-SFT) on a tiny Qwen3 model built from scratch, on CPU.

The model is a 2-layer Qwen3 (hidden 64) over SmolLM2's tokenizer (vocab 49,152,
read from the GGUF's metadata without its tensors): Qwen3.6's vocabulary (248,077)
would make the embedding and logits 5x larger for no gain at this size. The data is
a trajectory JSONL from `hat sim generate`.

Launch (on 2 CPU cores about 10-15 s a step at batch 1 x 3,072 tokens, ~200 real
tokens/s: the [T, V] logits and the T x T attention dominate; 100 steps ~ 20 min)::

    hat sim generate --harness taolive_v1 --n 200 --out data/sft.jsonl
    hat train sft --config=experiments/configs/sft_tiny.py:steps=100 \\
        --workdir runs/sft_tiny --config.data.train=data/sft.jsonl

Sim trajectories are 1,800-2,900 SmolLM2 tokens, hence seq_len 3,072 (longer ones
are dropped; `data.overlong="truncate"` keeps their start instead).

Arguments (`:k=v,...`): steps, batch_size, seq_len, lr, fixed_harness, data.
Feeds no paper table on its own: it is the smoke-test scale of the SFT stage.
"""

from __future__ import annotations

import ml_collections

from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {
    "steps": 100,
    "batch_size": 1,
    "seq_len": 3072,
    "lr": 1e-3,
    "fixed_harness": False,
    "data": "data/sft.jsonl",
}


def tiny_model() -> ml_collections.ConfigDict:
    """The 2-layer Qwen3 built from scratch (SmolLM2's vocabulary), shared by OPD."""
    return ml_collections.ConfigDict(
        {
            "model_type": "qwen3",
            "vocab_size": 49152,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 4096,
            "rope_theta": 10000.0,
            "tie_word_embeddings": True,
        }
    )


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = ml_collections.ConfigDict()
    c.stage = "sft"
    c.seed = 0
    c.init_from = ""  # a workdir, HF folder, .gguf or asset name; "" = from scratch
    c.tokenizer = "smollm2-135m-instruct"
    c.model = tiny_model()
    c.data = ml_collections.ConfigDict(
        {
            "train": a.data,
            "fmt": "qwen_xml",
            "fixed_harness": a.fixed_harness,  # True: drop HSA trajectories
            "overlong": "drop",  # or "truncate"
        }
    )
    c.batch_size = a.batch_size
    c.seq_len = a.seq_len
    c.grad_accum = 1  # micro-batches per step (divides batch_size)
    # "bfloat16": bf16 matmuls (params cast in the loss), fp32 master params and
    # optimiser state. Keep float32 on CPU: XLA runs bf16 matmuls slower there.
    c.compute_dtype = "float32"
    c.optim = ml_collections.ConfigDict(
        {
            "lr": a.lr,
            "b1": 0.9,
            "b2": 0.95,
            "eps": 1e-8,
            "weight_decay": 0.01,
            "warmup_steps": min(10, a.steps // 10),
            "total_steps": a.steps,
            "end_lr_frac": 0.1,
            "clip_norm": 1.0,
        }
    )
    c.train = ml_collections.ConfigDict(
        {"steps": a.steps, "save_every": 50, "keep": 2, "log_every": 1}
    )
    return c
