"""SFT train-step speed: our jitted step vs a PyTorch loop (transformers), CPU.

The same model (SmolLM2-135M-Instruct from the project's GGUF), the same random
batch [B, T] with a full loss mask, fp32 weights and AdamW (b1 0.9, b2 0.95, eps
1e-8, weight decay 0.01, global-norm clipping at 1.0) on both sides:

  jax fp32 (ours)    `hat_jax.train.jit_sft_step` (state donated), the project's
                     `init_state` / `make_optimizer`, compute_dtype float32;
  torch fp32         `AutoModelForCausalLM` (sdpa attention), F.cross_entropy on
                     the same shifted targets, clip_grad_norm_, torch.optim.AdamW;
  torch bf16 autocast  the same loop with the forward under
                     torch.autocast("cpu", dtype=torch.bfloat16) (fp32 master
                     weights; oneDNN uses AMX here, XLA does not).

Steps are interleaved (ours, torch fp32, torch bf16, repeat) after a warm-up step
each, so machine drift hits all alike; medians are reported, and "paired" is the
median over reps of each rep's own ratio (robust to drift). In the same loop a
jitted fp32 matmul (M x M x M, JAX) and torch.mm (fp32) are timed, giving each
framework's own matmul ceiling. Model FLOPs per step (stated, PaLM-style, causal
mask not discounted):

    flops = 6 * P * B * T  +  12 * L * (N * H) * B * T**2

P = all parameters (the tied embedding counts once: it is the LM head matmul),
L layers, N heads, H head dim. Achieved FLOP/s = flops / median step time, and
"of matmul" = achieved / the same framework's fp32 matmul rate.

`--breakdown` also times parts of our step (forward loss; loss + grads, no
optimiser; the LM head + CE alone, forward + backward) to show where time goes.

Memory: with the fused attention and the chunked LM head + CE our step at 8 x 512
runs with --grad-accum 1 at an 11.7 GB peak RSS (before them it was killed past
18 GB); --grad-accum 4 (micro-batches of 2 x 512, the same tokens and update per
step) is the default measurement, --remat trades compute for memory further.

Measured figures (with the CPU they ran on): docs/results/measurements.md; the
last run's: benchmarks/results/train_step.json.

    python benchmarks/train_step.py [--batch 8] [--seq 512] [--reps 3]
        [--grad-accum 4] [--matmul 4096] [--breakdown]
        [--out benchmarks/results/train_step.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import torch
import torch.nn.functional as F
import transformers
from flax import nnx

from hat_jax import assets
from hat_jax.checkpoints.gguf import load_gguf
from hat_jax.losses.sft import cross_entropy
from hat_jax.models.attention_ops import fused_attention
from hat_jax.models.layers import dot_product_attention
from hat_jax.train.sft import jit_sft_step, sft_loss
from hat_jax.train.state import init_state, make_optimizer

OPTIM = {
    "lr": 1e-5,
    "b1": 0.9,
    "b2": 0.95,
    "eps": 1e-8,
    "weight_decay": 0.01,
    "warmup_steps": 0,
    "total_steps": 1000,
    "end_lr_frac": 1.0,
    "clip_norm": 1.0,
}


def _batch(b: int, t: int, vocab: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(100, vocab, size=(b, t + 1), dtype=np.int32)
    return {
        "inputs": tokens[:, :-1],
        "targets": tokens[:, 1:],
        "loss_mask": np.ones((b, t), np.float32),
        "segment_ids": np.ones((b, t), np.int32),
        "positions": np.broadcast_to(np.arange(t, dtype=np.int32), (b, t)).copy(),
    }


def _ours(model, batch, compute_dtype="float32", grad_accum=1, remat=False):
    cfg = ml_collections.ConfigDict(
        {
            "grad_accum": grad_accum,
            "compute_dtype": compute_dtype,
            "remat": remat,
            "loss_chunk": 512,
            "optim": ml_collections.ConfigDict(OPTIM),
        }
    )
    graphdef, state = init_state(model, make_optimizer(cfg.optim), seed=0)
    step = jit_sft_step(graphdef, cfg)
    dev_batch = jax.device_put(batch)
    rng = jax.random.PRNGKey(0)
    box = {"state": state}

    def run():
        box["state"], metrics = step(box["state"], dev_batch, rng)
        jax.block_until_ready(metrics)
        return float(metrics["train/loss"])

    return run, box, graphdef, cfg, dev_batch


def _torch(model, batch, autocast: bool):
    model.train()
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=OPTIM["lr"],
        betas=(OPTIM["b1"], OPTIM["b2"]),
        eps=OPTIM["eps"],
        weight_decay=OPTIM["weight_decay"],
    )
    inputs = torch.from_numpy(batch["inputs"]).long()
    targets = torch.from_numpy(batch["targets"]).long()

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=inputs).logits
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), OPTIM["clip_norm"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    return run


def _matmuls(m: int):
    key = jax.random.PRNGKey(1)
    a = jax.random.normal(key, (m, m), jnp.float32)
    bm = jax.random.normal(jax.random.fold_in(key, 1), (m, m), jnp.float32)
    mm = jax.jit(jnp.matmul)
    ta, tb = torch.randn(m, m), torch.randn(m, m)

    def jax_mm():
        mm(a, bm).block_until_ready()

    def torch_mm():
        torch.mm(ta, tb)

    return jax_mm, torch_mm


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _breakdown(box, graphdef, cfg, batch, model_cfg, reps: int) -> dict:
    """Seconds (median) of parts of our step, jitted separately."""
    params, frozen = box["state"].params, box["state"].frozen
    loss_fn = functools.partial(sft_loss, graphdef=graphdef, cfg=cfg)
    fwd = jax.jit(lambda p, f, b: loss_fn(p, f, b)[0])
    grad = jax.jit(jax.value_and_grad(lambda p, f, b: loss_fn(p, f, b)[0]))
    b, t = batch["inputs"].shape
    d, v = model_cfg.hidden_size, model_cfg.vocab_size
    hidden = jax.random.normal(jax.random.PRNGKey(2), (b, t, d), jnp.float32)
    emb = jax.random.normal(jax.random.PRNGKey(3), (v, d), jnp.float32) * 0.02

    def head_ce(h, e, tg, mk):
        logits = jnp.einsum("btd,vd->btv", h, e)
        return cross_entropy(logits=logits, targets=tg, mask=mk)[0]

    head = jax.jit(jax.value_and_grad(head_ce, argnums=(0, 1)))
    mb = b // int(cfg.grad_accum)  # the step runs micro-batches of this many rows
    n, kv, hd = (
        model_cfg.num_attention_heads,
        model_cfg.num_key_value_heads,
        model_cfg.head_dim,
    )
    ks = jax.random.split(jax.random.PRNGKey(4), 2)
    q = jax.random.normal(ks[0], (mb, t, n, hd), jnp.float32)
    kk = jax.random.normal(ks[1], (mb, t, kv, hd), jnp.float32)
    allowed = jnp.broadcast_to(jnp.tril(jnp.ones((t, t), bool)), (mb, t, t))

    def attn_grad(fn):
        g = jax.jit(jax.grad(lambda q, k: jnp.sum(fn(q, k, k, allowed)), (0, 1)))
        return lambda: jax.block_until_ready(g(q, kk))

    tx = make_optimizer(cfg.optim)
    opt_only = jax.jit(
        lambda p, o: optax.apply_updates(p, tx.update(p, o, p)[0]),
    )
    parts = {
        "forward_loss": lambda: jax.block_until_ready(fwd(params, frozen, batch)),
        "loss_and_grads": lambda: jax.block_until_ready(grad(params, frozen, batch)),
        "head_ce_fwd_bwd": lambda: jax.block_until_ready(
            head(hidden, emb, batch["targets"], batch["loss_mask"])
        ),
        "optimizer_update": lambda: jax.block_until_ready(
            opt_only(params, box["state"].opt_state)
        ),
        # one layer's attention core, fwd + bwd, on one micro-batch
        "attn_fused_1layer": attn_grad(fused_attention),
        "attn_plain_1layer": attn_grad(dot_product_attention),
    }
    out = {}
    for name, fn in parts.items():
        fn()  # compile
        out[name] = statistics.median(_time(fn) for _ in range(reps))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--matmul", type=int, default=4096, help="M of the M^3 matmul")
    ap.add_argument(
        "--systems",
        default="ours,torch32,torch16",
        help="comma list of ours, ours_bf16, torch32, torch16",
    )
    ap.add_argument(
        "--grad-accum",
        type=int,
        default=1,
        help="our step's micro-batches (same tokens/step; bounds activation memory)",
    )
    ap.add_argument(
        "--remat", action="store_true", help="our step recomputes layers (memory)"
    )
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--out", default="benchmarks/results/train_step.json")
    args = ap.parse_args()

    path = assets.path("smollm2-135m-instruct")
    model, mcfg, _ = load_gguf(path)
    n_params = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    batch = _batch(args.batch, args.seq, mcfg.vocab_size)
    tokens = args.batch * args.seq
    attn = mcfg.num_attention_heads * mcfg.head_dim
    flops = 6 * n_params * tokens + 12 * mcfg.num_hidden_layers * attn * tokens * (
        args.seq
    )

    wanted = args.systems.split(",")
    systems, frameworks = {}, {}
    box = graphdef = cfg = dev_batch = None
    if "ours" in wanted:
        run, box, graphdef, cfg, dev_batch = _ours(
            model, batch, grad_accum=args.grad_accum, remat=args.remat
        )
        systems["jax fp32 (ours)"], frameworks["jax fp32 (ours)"] = run, "jax"
    if "ours_bf16" in wanted:
        m16, _, _ = load_gguf(path)
        systems["jax bf16 compute"] = _ours(m16, batch, "bfloat16", args.grad_accum)[0]
        frameworks["jax bf16 compute"] = "jax"
    for key, name, ac in (
        ("torch32", "torch fp32", False),
        ("torch16", "torch bf16 autocast", True),
    ):
        if key in wanted:
            hf = transformers.AutoModelForCausalLM.from_pretrained(
                str(path.parent), gguf_file=path.name, dtype=torch.float32
            )
            systems[name], frameworks[name] = _torch(hf, batch, ac), "torch"
    jax_mm, torch_mm = _matmuls(args.matmul)
    timed = {**systems, "jax matmul fp32": jax_mm, "torch matmul fp32": torch_mm}

    losses = {}
    for name, fn in timed.items():  # warm up: compile / allocate
        t = _time(fn)
        print(f"warm-up {name}: {t:.1f} s", flush=True)
    times = {name: [] for name in timed}
    for rep in range(args.reps):
        for name, fn in timed.items():
            t0 = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t0)
            if name in systems:
                losses[name] = out
        line = ", ".join(f"{n} {ts[-1]:.2f}s" for n, ts in times.items())
        print(f"rep {rep + 1}/{args.reps}: {line}", flush=True)

    med = {name: statistics.median(ts) for name, ts in times.items()}
    mm_rate = {
        "jax": 2 * args.matmul**3 / med["jax matmul fp32"],
        "torch": 2 * args.matmul**3 / med["torch matmul fp32"],
    }
    ours_name = next(iter(systems)) if systems else None
    rows = []
    for name in systems:
        rate = flops / med[name]
        rows.append(
            {
                "system": name,
                "step_s": med[name],
                "step_s_all": times[name],
                "tokens_per_s": tokens / med[name],
                "gflop_per_s": rate / 1e9,
                "frac_of_own_fp32_matmul": rate / mm_rate[frameworks[name]],
                "last_loss": losses.get(name),
            }
        )
    for r in rows:
        ours_tps = rows[0]["tokens_per_s"] if ours_name else float("nan")
        r["ours_over_this"] = ours_tps / r["tokens_per_s"]
        if ours_name:  # paired per rep: robust to drift between reps
            r["ours_over_this_per_rep"] = [
                t / o for o, t in zip(times[ours_name], r["step_s_all"])
            ]

    print(
        f"\nSFT train step, SmolLM2-135M-Instruct ({n_params / 1e6:.1f} M params), "
        f"batch {args.batch} x {args.seq}, median of {args.reps} interleaved runs"
    )
    print(
        f"model FLOPs/step = 6*P*B*T + 12*L*(N*H)*B*T^2 = {flops / 1e12:.3f} TFLOP "
        f"(6*P*B*T alone: {6 * n_params * tokens / 1e12:.3f})"
    )
    head = (
        f"{'system':20s} {'step s':>7s} {'tokens/s':>9s} {'GFLOP/s':>8s} "
        f"{'of own matmul':>13s} {'ours/this':>9s} {'paired':>6s}"
    )
    print(head)
    for r in rows:
        print(
            f"{r['system']:20s} {r['step_s']:7.2f} {r['tokens_per_s']:9.1f} "
            f"{r['gflop_per_s']:8.1f} {r['frac_of_own_fp32_matmul']:13.2f} "
            f"{r['ours_over_this']:9.2f} "
            f"{statistics.median(r.get('ours_over_this_per_rep', [0.0])):6.2f}"
        )
    print(
        f"fp32 matmul {args.matmul}^3: jax {mm_rate['jax'] / 1e9:.1f} GFLOP/s, "
        f"torch {mm_rate['torch'] / 1e9:.1f} GFLOP/s "
        f"(jax/torch {mm_rate['jax'] / mm_rate['torch']:.2f})"
    )

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "jax": jax.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "args": vars(args),
        "n_params": int(n_params),
        "flops_per_step": flops,
        "flops_formula": "6*P*B*T + 12*L*(N*H)*B*T^2",
    }
    result = {
        "meta": meta,
        "rows": rows,
        "matmul_gflop_per_s": {k: v / 1e9 for k, v in mm_rate.items()},
        "matmul_s_all": {
            "jax": times["jax matmul fp32"],
            "torch": times["torch matmul fp32"],
        },
        "breakdown_s": None,
    }
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")
    # The breakdown runs last and rewrites the file: its full-batch parts can need
    # more memory than the accumulated step (killed at 8 x 512 on a 24 GB machine).
    if args.breakdown and box is not None:
        parts = _breakdown(box, graphdef, cfg, dev_batch, mcfg, args.reps)
        print(f"\nbreakdown of our step (median s; full step {med[ours_name]:.2f} s)")
        for name, s in parts.items():
            print(f"  {name:18s} {s:7.2f}  ({s / med[ours_name]:.0%} of the step)")
        result["breakdown_s"] = parts
        out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
