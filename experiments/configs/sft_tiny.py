"""Stage 1 (HSA-SFT) on a tiny Qwen3 model built from scratch, on CPU.

The model is a 2-layer Qwen3 (hidden 64) over SmolLM2's tokenizer (vocab 49,152,
read from the GGUF's metadata without its tensors): Qwen3.6's vocabulary (248,077)
would make the embedding and logits 5x larger for no gain at this size. The data is
a trajectory JSONL from `hat sim generate`.

Launch (on 2 CPU cores about 1.5 s a step at batch 1 x 3,072 tokens, measured
quiet; the T x T attention and the [T, V] LM head dominate)::

    hat sim generate --harness taolive_v1 --n 200 --out data/sft.jsonl
    hat train sft --config=experiments/configs/sft_tiny.py:steps=100 \\
        --workdir runs/sft_tiny --config.data.train=data/sft.jsonl

Sim trajectories are 1,800-2,900 SmolLM2 tokens, hence seq_len 3,072 (longer ones
are dropped; `data.overlong="truncate"` keeps their start instead).

Arguments (`:k=v,...`): steps, batch_size, seq_len, lr, fixed_harness, data.
LoRA: `--config.lora.rank=16`; an MTP head: `--config.model.mtp_num_hidden_layers=1`.
Held-out loss: `--config.data.eval=data/dev.jsonl` (every `train.eval_every` steps);
W&B: `--config.tracking.wandb=offline` (`tracking_block`).
Feeds no paper table on its own: it is the smoke-test scale of the SFT stage.
"""

from __future__ import annotations

import ml_collections

from hat_jax.cli.config_flags import parse_arg_string
from hat_jax.train.build import model_block

DEFAULTS = {
    "steps": 100,
    "batch_size": 1,
    "seq_len": 3072,
    "lr": 1e-3,
    "fixed_harness": False,
    "data": "data/sft.jsonl",
}


def tiny_model() -> ml_collections.ConfigDict:
    """The 2-layer Qwen3 built from scratch (SmolLM2's vocabulary), shared by OPD.

    Every `ModelConfig` field is in the block (`build.model_block`), the ones
    not named here at their defaults: the Qwen3.5 hybrid and MoE fields are off
    (a qwen3_5_moe_text model_type sets them: experiments/configs/hat_tiny.py,
    scale tiny), and `mtp_num_hidden_layers` 0 (1 adds an MTP head trained with
    weight `mtp_weight`).
    """
    return model_block(
        model_type="qwen3",
        vocab_size=49152,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=4096,
        rope_theta=10000.0,
        tie_word_embeddings=True,
    )


def lora_block() -> ml_collections.ConfigDict:
    """LoRA adapters (hat_jax.models.lora), off by default; shared by OPD.

    rank > 0 wraps `target_modules` of every decoder layer in adapters and trains
    only them (plus the MTP head when `mtp_weight` > 0); exports merge them. The
    MLP names also reach a Qwen3.5 shared expert; its Gated DeltaNet layers take
    in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj (add them here).
    """
    return ml_collections.ConfigDict(
        {
            "rank": 0,  # 0 = off (full fine-tuning); e.g. 16
            "alpha": 32.0,  # the delta is scaled by alpha / rank
            "target_modules": (
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ),
            "dropout": 0.0,  # must be 0: the jitted steps carry no dropout RNG
        }
    )


def tracking_block() -> ml_collections.ConfigDict:
    """Where metrics go besides metrics.jsonl (hat_jax/train/tracking.py); shared.

    wandb: "" (off), "offline" (WORKDIR/wandb, no network; `wandb sync` later) or
    "online" (your own `wandb login`); needs `pip install 'hat_jax[wandb]'`.
    name: the TensorBoard run folder WORKDIR/tb/<name> and the W&B run name;
    "" = WORKDIR/tb and the workdir's folder name (the sweep driver may pass
    "<run>/<step>"). project: the W&B project.
    """
    return ml_collections.ConfigDict({"wandb": "", "project": "hat_jax", "name": ""})


def mesh_block() -> ml_collections.ConfigDict:
    """Device mesh (hat_jax.parallel.placement): all 1 = one device, plain jit;
    e.g. --config.mesh.fsdp=-1 shards params, optimiser state and batch over all
    devices (SFT, OPD and RL alike)."""
    return ml_collections.ConfigDict({"data": 1, "fsdp": 1, "tensor": 1, "expert": 1})


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
    a = parse_arg_string(arg, DEFAULTS)
    c = ml_collections.ConfigDict()
    c.stage = "sft"
    c.seed = 0
    c.init_from = ""  # a workdir, HF folder, .gguf or asset name; "" = from scratch
    c.tokenizer = "smollm2-135m-instruct"
    c.model = tiny_model()
    c.lora = lora_block()
    # Weight of the MTP loss (position t predicts token t + 2) added to the CE;
    # used only when the model has an MTP head (model.mtp_num_hidden_layers > 0,
    # or an init_from checkpoint that carries one).
    c.mtp_weight = 0.3
    c.mesh = mesh_block()
    # Standalone MTP mode: train only the head (trunk frozen) on its loss; with
    # init_from a base without a head, model.mtp_num_hidden_layers adds a fresh one.
    c.mtp_only = False
    c.data = ml_collections.ConfigDict(
        {
            "train": a.data,
            "fmt": "qwen_xml",
            "fixed_harness": a.fixed_harness,  # True: drop HSA trajectories
            "overlong": "drop",  # or "truncate"
            # loss weight of the decision tokens (hat_jax/harness/decisions.py:
            # tool, argument, skill, reply number, intent); 1 = plain mean. The
            # logged train/loss and train/accuracy are then weighted too.
            "decision_weight": 1.0,
            # copies of each training trajectory without its system prompt
            # (hat_jax.train.data.prompt_free_copies): its start (viewer
            # message -> first assistant message), the whole of it, and its
            # lookups + results + final reply (only the reply trained)
            "head_copies": 0,
            "no_system_copies": 0,
            "reply_copies": 0,
            # held-out trajectories (same format as train): eval/loss and
            # eval/accuracy every train.eval_every steps; "" = off
            "eval": "",
            # tokens one model call may write where the model is evaluated
            # (max_new_tokens): more than 1 % of the golds' assistant messages
            # longer is an error (hat_jax.train.data.call_budget_stats); 0 =
            # only record the longest in data_stats
            "call_budget": 0,
        }
    )
    c.batch_size = a.batch_size
    c.seq_len = a.seq_len
    c.grad_accum = 1  # micro-batches per step (divides batch_size)
    c.loss_chunk = 512  # rows of the LM head + CE at a time (bounds [rows, V] logits)
    # Share of a micro-batch's positions the LM head sees, the trained ones
    # gathered first (0 = every position); a micro-batch with more trained
    # positions takes the full path, so the loss never depends on it
    # (hat_jax.losses.chunked). SFT trains ~10 % of a trajectory's tokens.
    c.loss_share = 0.25
    c.remat = False  # recompute each layer in the backward pass (less memory)
    # "bfloat16": bf16 matmuls (params cast in the loss), fp32 master params and
    # optimiser state. Keep float32 on CPU: XLA runs bf16 matmuls slower there.
    c.compute_dtype = "float32"
    # train.steps is a reference the schedule's length follows, so that
    # --config.train.steps=N also moves optim.total_steps (unless that is set too)
    steps = ml_collections.FieldReference(a.steps)
    c.optim = ml_collections.ConfigDict(
        {
            "lr": a.lr,
            "b1": 0.9,
            "b2": 0.95,
            "eps": 1e-8,
            "weight_decay": 0.01,
            "warmup_steps": min(10, a.steps // 10),
            "total_steps": steps * 1,  # follows --config.train.steps
            "end_lr_frac": 0.1,
            # k > 1: k equal cycles of warmup + cosine (warm restarts), cycle i
            # peaking at lr * cycle_decay**i (hat_jax.train.state.make_schedule)
            "cycles": 1,
            "cycle_decay": 1.0,
            "clip_norm": 1.0,
        }
    )
    c.train = ml_collections.ConfigDict(
        {
            "steps": steps,
            "save_every": 50,
            "keep": 2,
            "log_every": 1,
            # decision accuracy (hat_jax/train/decision_probe.py) every N steps on
            # the first `decision_rows` trajectories of data.eval (else of the
            # training set); 0 = off
            "decision_every": 50,
            "decision_rows": 8,
            # held-out loss on data.eval (hat_jax/train/heldout.py) every N steps
            # and at the last (0 = off), on its first eval_batches batches (0 = all)
            "eval_every": 50,
            "eval_batches": 4,
        }
    )
    c.tracking = tracking_block()
    return c
