"""The paper's scale: Qwen3.6-35B-A3B (hybrid Gated DeltaNet / gated attention, MoE).

Architecture numbers are the `text_config` of Qwen/Qwen3.6-35B-A3B's `config.json`
(https://huggingface.co/Qwen/Qwen3.6-35B-A3B; identical to Qwen3.5-35B-A3B, as the
transformers `qwen3_5_moe` docs state: 256 experts, 8 routed + 1 shared, 3:1
DeltaNet : attention). Read from copies of that config in public code, not
fetched from the Hub here; `hat plan` counts 35.x B params from them.

Memory plan (no accelerator needed; prints params / optimiser / activations / KV
per device)::

    hat plan --config=experiments/configs/paper_35b.py --devices 8 --hardware h20
    hat plan --config=experiments/configs/paper_35b.py --devices 8 --hardware h200

Training on a cluster (one process per host, see `hat_jax.parallel.distributed`)::

    HAT_COORDINATOR=node0:12345 HAT_NUM_PROCESSES=2 HAT_PROCESS_ID=$i \\
        hat train sft --config=experiments/configs/paper_35b.py --workdir runs/35b

Arguments (`:k=v,...`): seq_len, batch_size, remat. Feeds the paper's 35B rows.
"""

from __future__ import annotations

import ml_collections

from hat_jax.cli.config_flags import parse_arg_string

try:  # the SFT stage's other blocks (data, optim, lora, train) stay shared
    from experiments.configs import sft_tiny
except ImportError:  # loaded as a file by `hat plan`
    sft_tiny = None

DEFAULTS = {"seq_len": 8192, "batch_size": 64, "remat": True}

NUM_LAYERS = 40
FULL_ATTENTION_INTERVAL = 4  # every 4th layer is gated attention, the rest DeltaNet


def model() -> ml_collections.ConfigDict:
    """Qwen3.6-35B-A3B's text model in `ModelConfig` field names."""
    return ml_collections.ConfigDict(
        {
            "model_type": "qwen3_5_moe_text",
            "vocab_size": 248320,
            "hidden_size": 2048,
            "intermediate_size": 0,  # no dense MLP: every layer is MoE
            "num_hidden_layers": NUM_LAYERS,
            "layer_types": tuple(
                "full_attention"
                if (i + 1) % FULL_ATTENTION_INTERVAL == 0
                else "linear_attention"
                for i in range(NUM_LAYERS)
            ),
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "partial_rotary_factor": 0.25,
            "rope_theta": 10000000.0,
            "max_position_embeddings": 262144,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": False,
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "num_experts": 256,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
            "mtp_num_hidden_layers": 1,
            # top-k dispatch (hat_jax.models.qwen3_moe): 8 of 256 experts per
            # token, not all of them; `hat plan --moe-impl` prices both
            "moe_impl": "topk",
        }
    )


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = sft_tiny.get_config() if sft_tiny is not None else ml_collections.ConfigDict()
    c.model = model()
    c.init_from = "Qwen/Qwen3.6-35B-A3B"  # a local HF folder on the cluster
    c.tokenizer = "qwen3_6-tokenizer"
    c.seq_len = a.seq_len
    c.batch_size = a.batch_size
    c.remat = a.remat
    c.compute_dtype = "bfloat16"
    # Mesh (hat_jax.parallel.make_mesh): -1 takes the remaining devices.
    c.mesh = ml_collections.ConfigDict(
        {"data": 1, "fsdp": -1, "tensor": 1, "expert": 1}
    )
    # `hat plan` inputs: tokens each device holds per micro-batch, rollout KV.
    c.plan = ml_collections.ConfigDict(
        {"tokens_per_device": a.seq_len, "kv_batch": 64, "kv_len": 32768}
    )
    return c
