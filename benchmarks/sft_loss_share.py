"""SFT step with the LM head on the trained positions only (`loss_share`) vs on all.

Where it should pay: a small vocabulary model whose trajectories train few of
their tokens. The compact tiny world's SFT (experiments/configs/hat_tiny.py,
scale compact_long): a dense 4 x 128 Qwen3 with a co-trained MTP layer, vocab
2,048, batches of 3 x 2,048 packed tokens of which ~9 % are trained (its golds,
measured in docs/results/measurements.md). The LM head and CE then run on every
position twice (the trunk's head and the MTP head's) though only ~9 % count.

Both steps are `hat_jax.train.sft.jit_sft_step` on the same random batch whose
loss mask has trained spans covering `--trained` of the positions: `loss_share`
0 (every position meets the head) and `--share` (the trained ones gathered
first). Steps are interleaved after a warm-up each; medians, and "paired" is
the median of each rep's own ratio. In the same run: the fp32 matmul rate (the
compute bound of a training step, `limits.matmul_gflops`), and the model FLOPs
of each step (6 x matmul weights x rows through them, the head counted on the
rows it sees, plus attention), so the speed-up can be read against what the
skipped work allows.

    python benchmarks/sft_loss_share.py [--reps 7] [--trained 0.09] [--share 0.25]
        [--out benchmarks/results/sft_loss_share.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import jax
import numpy as np
from limits import matmul_gflops

from hat_jax.cli.config_flags import load_config
from hat_jax.cli.env_cmd import cpu_model
from hat_jax.train import build
from hat_jax.train.sft import jit_sft_step
from hat_jax.train.state import init_state, make_optimizer

MODEL = {  # the compact scales' model (hat_tiny.py COMPACT, hat_pipeline)
    "vocab_size": 2048,
    "hidden_size": 128,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "mtp_num_hidden_layers": 1,
}


def batch(b: int, t: int, trained: float, vocab: int, seed: int = 0) -> dict:
    """Random tokens in 4 packed documents a row; trained spans of ~60 tokens
    covering `trained` of the positions (as the golds' assistant messages)."""
    rng = np.random.default_rng(seed)
    inputs = rng.integers(0, vocab, (b, t), dtype=np.int32)
    seg = np.repeat(np.arange(1, 5, dtype=np.int32), t // 4)[None].repeat(b, 0)
    pos = np.tile(np.arange(t // 4, dtype=np.int32), 4)[None].repeat(b, 0)
    mask = np.zeros((b, t), bool)
    span = 60
    for r in range(b):
        starts = rng.choice(t - span, int(trained * t / span), replace=False)
        for s in starts:
            mask[r, s : s + span] = True
    return {
        "inputs": inputs,
        "targets": np.roll(inputs, -1, axis=1),
        "positions": pos,
        "segment_ids": seg,
        "loss_mask": mask,
    }


def step_flops(cfg, rows: int, head_rows: int) -> float:
    """6 x weights x rows (forward + backward) for the trunk, the MTP layer and
    the two LM heads on the rows they see, plus causal attention."""
    d, f, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads
    layer = d * q * 2 + 2 * d * kv * cfg.head_dim + 3 * d * f
    layers = cfg.num_hidden_layers + 1  # + the MTP layer
    trunk = 6.0 * rows * (layers * layer + 2 * d * d)  # + the MTP projection
    heads = 6.0 * 2 * head_rows * d * v
    return trunk + heads + 6.0 * layers * q * rows * 512  # ~t/4/2 keys a query


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--trained", type=float, default=0.09)
    ap.add_argument("--share", type=float, default=0.25)
    ap.add_argument("--out", default="benchmarks/results/sft_loss_share.json")
    args = ap.parse_args()

    overrides = [f"model.{k}={v}" for k, v in MODEL.items()]
    spec = f"experiments/configs/sft_tiny.py:batch_size={args.batch},seq_len={args.seq}"
    modes = {"all positions": 0.0, f"loss_share {args.share}": args.share}
    data = batch(args.batch, args.seq, args.trained, MODEL["vocab_size"])
    steps, states = {}, {}
    for name, share in modes.items():
        cfg = load_config(spec, [*overrides, f"loss_share={share}"])
        model, mcfg = build.make_model(cfg)
        opt = make_optimizer(cfg.optim)
        graphdef, states[name] = init_state(model, opt, seed=0)
        steps[name] = jit_sft_step(graphdef, cfg)
    rng = jax.random.PRNGKey(0)
    times: dict[str, list[float]] = {m: [] for m in modes}
    losses = {}
    for rep in range(args.reps + 1):  # rep 0: compile and warm up
        for m in modes:
            t0 = time.perf_counter()
            states[m], metrics = steps[m](states[m], data, rng)
            loss = float(metrics["train/loss"])  # blocks
            if rep:
                times[m].append(time.perf_counter() - t0)
            losses.setdefault(m, loss)
    gflops = matmul_gflops()
    rows = args.batch * args.seq
    trained = int(data["loss_mask"].sum())
    base, fast = modes
    paired = statistics.median(a / b for a, b in zip(times[base], times[fast]))
    result = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "matmul_gflops": gflops,
        "batch": [args.batch, args.seq],
        "trained_share": trained / rows,
        "loss_share": args.share,
        "first_loss": losses,
        "speedup_paired": paired,
        "modes": {},
    }
    print(
        f"{cpu_model()}, {os.cpu_count()} cpus; fp32 matmul {gflops:.0f} GFLOP/s; "
        f"{args.batch} x {args.seq}, {trained / rows:.1%} trained"
    )
    print(f"{'mode':<22}{'median s':>10}{'GFLOP':>8}{'GFLOP/s':>9}{'of matmul':>11}")
    for m, share in modes.items():
        head_rows = rows if not share else trained
        flops = step_flops(mcfg, rows, head_rows)
        med = statistics.median(times[m])
        result["modes"][m] = {"median_s": med, "times_s": times[m], "flops": flops}
        print(
            f"{m:<22}{med:>10.3f}{flops / 1e9:>8.1f}{flops / med / 1e9:>9.1f}"
            f"{flops / med / 1e9 / gflops:>11.1%}"
        )
    bound = step_flops(mcfg, rows, rows) / step_flops(mcfg, rows, trained)
    result["flops_ratio"] = bound
    print(f"speed-up (paired median): {paired:.2f}x; FLOPs ratio {bound:.2f}x")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
