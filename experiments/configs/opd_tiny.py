"""Stage 2 (general on-policy distillation) on a tiny Qwen3 student, on CPU.

The student (`init_from`, usually the SFT workdir) samples replies to general chat
prompts with our KV-cache sampler; the frozen teacher (`init_teacher_from`, the
pre-SFT base; "" = a copy of the initial student) scores the same tokens, and the
loss is the named per-token divergence on the student's tokens (`divergence`:
"reverse_kl" default, "forward_kl", "jsd(0.5)"; exact over the vocabulary unless
`top_k` > 0). The prompts are any JSONL of `{"messages": [...]}` or
`{"prompt": "..."}` lines. The model is the 2-layer Qwen3 of sft_tiny over
SmolLM2's tokenizer.

Launch (about a minute for 50 steps on 2 CPU cores, after ~10 s of compilation)::

    hat train opd --config=experiments/configs/opd_tiny.py:steps=50 \\
        --workdir runs/opd_tiny --config.data.train=data/prompts.jsonl \\
        --config.init_from=runs/sft_tiny --config.init_teacher_from=""

Arguments (`:k=v,...`): steps, batch_size, max_new_tokens, temperature, lr,
divergence, top_k, data. Held-out prompts: `--config.data.eval=FILE`
(hat_jax/train/heldout.py); W&B: `--config.tracking.wandb=offline`.
Feeds no paper table on its own: it is the smoke-test scale of the OPD stage.
"""

from __future__ import annotations

import ml_collections

from experiments.configs import sft_tiny
from hat_jax.cli.config_flags import parse_arg_string

DEFAULTS = {
    "steps": 50,
    "batch_size": 4,
    "max_new_tokens": 32,
    "temperature": 1.0,
    "lr": 1e-4,
    "divergence": "reverse_kl",
    "top_k": 0,
    "data": "data/prompts.jsonl",
}


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = ml_collections.ConfigDict()
    c.stage = "opd"
    c.seed = 0
    c.init_from = ""  # the student: a workdir, HF folder, .gguf or asset name
    c.init_teacher_from = ""  # the frozen teacher; "" = a copy of the student
    c.tokenizer = "smollm2-135m-instruct"
    c.model = sft_tiny.tiny_model()  # used only when init_from is ""
    c.lora = sft_tiny.lora_block()  # rank 0 = off; adapters on the student only
    c.data = ml_collections.ConfigDict(
        {
            "train": a.data,
            "max_prompt_tokens": 256,  # longer prompts are dropped
            "enable_thinking": ml_collections.FieldReference(None, field_type=bool),
            # held-out prompts (same format as train), scored on the teacher's
            # greedy completions every train.eval_every steps; "" = off
            "eval": "",
        }
    )
    c.sampling = ml_collections.ConfigDict(
        {
            "max_new_tokens": a.max_new_tokens,
            "temperature": a.temperature,  # sample at 1.0 to stay on-policy
            "top_k": 0,
            "top_p": 1.0,
        }
    )
    c.divergence = a.divergence  # "reverse_kl" | "forward_kl" | "jsd(0.5)"
    c.top_k = a.top_k  # 0: exact over the vocabulary; k: top-k support
    c.batch_size = a.batch_size
    c.compute_dtype = "float32"  # "bfloat16": bf16 compute, fp32 master params
    # train.steps is a reference the schedule's length follows, so that
    # --config.train.steps=N also moves optim.total_steps (unless that is set too)
    steps = ml_collections.FieldReference(a.steps)
    c.optim = ml_collections.ConfigDict(
        {
            "lr": a.lr,
            "b1": 0.9,
            "b2": 0.95,
            "eps": 1e-8,
            "weight_decay": 0.0,
            "warmup_steps": min(5, a.steps // 10),
            "total_steps": steps * 1,  # follows --config.train.steps
            "end_lr_frac": 0.1,
            "clip_norm": 1.0,
        }
    )
    c.train = ml_collections.ConfigDict(
        {
            "steps": steps,
            "save_every": 25,
            "keep": 2,
            "log_every": 1,
            # held-out eval/loss (teacher-forced CE on the teacher's greedy
            # replies), eval/accuracy and eval/divergence every N steps and at the
            # last (0 = off), on the first eval_batches batches of prompts (0 = all)
            "eval_every": 25,
            "eval_batches": 2,
        }
    )
    c.tracking = sft_tiny.tracking_block()  # W&B sink and TensorBoard run name
    c.mesh = sft_tiny.mesh_block()  # student and teacher sharded alike
    return c
