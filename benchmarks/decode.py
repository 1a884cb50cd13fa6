"""Prefill and decode speed: our JAX sampler vs transformers (torch CPU), SmolLM2-135M.

Runs are interleaved (ours, HF fp32, HF bf16, repeat) so machine drift hits all
alike; medians are reported with the ratio ours / HF in one table, and written as
JSON. Decode tokens/s = batch * (N - 1) / (t(generate N) - t(generate 1)): the
prefill and first token cancel out. Prefill tokens/s = batch * P / t(generate 1).

    python benchmarks/decode.py [--reps 3] [--new 64] [--prompt-len 128]
        [--out benchmarks/results/decode.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from hat_jax import assets
from hat_jax.checkpoints.gguf import load_gguf
from hat_jax.sampling import Sampler, SamplingParams


def _ours(model, tok):
    sampler = Sampler(model, tok)

    def run(prompts, n):
        sampler.generate(prompts, SamplingParams(max_new_tokens=n, stop_ids=()))

    return run


def _hf(model):
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
            )

    return run


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
    ap.add_argument("--out", default="benchmarks/results/decode.json")
    args = ap.parse_args()

    path = assets.path("smollm2-135m-instruct")
    model, _, tok = load_gguf(path)
    hf32 = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    ).eval()
    hf16 = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.bfloat16
    ).eval()
    systems = {
        "jax fp32 (ours)": _ours(model, tok),
        "hf fp32": _hf(hf32),
        "hf bf16": _hf(hf16),
    }

    rng = np.random.default_rng(0)
    rows = []
    for b in map(int, args.batches.split(",")):
        prompts = rng.integers(100, 40000, size=(b, args.prompt_len)).tolist()
        for fn in systems.values():  # warm up: compile / allocate
            fn(prompts, 2)
            fn(prompts, args.new)
        times = {name: {"t1": [], "tn": []} for name in systems}
        for _ in range(args.reps):
            for name, fn in systems.items():
                times[name]["t1"].append(_time(fn, prompts, 1))
                times[name]["tn"].append(_time(fn, prompts, args.new))
        for name, t in times.items():
            t1, tn = statistics.median(t["t1"]), statistics.median(t["tn"])
            rows.append(
                {
                    "system": name,
                    "batch": b,
                    "prefill_tok_s": b * args.prompt_len / t1,
                    "decode_tok_s": b * (args.new - 1) / max(tn - t1, 1e-9),
                }
            )
    ours = {r["batch"]: r for r in rows if r["system"].endswith("(ours)")}
    for r in rows:
        o = ours[r["batch"]]
        r["ours_over_this_prefill"] = o["prefill_tok_s"] / r["prefill_tok_s"]
        r["ours_over_this_decode"] = o["decode_tok_s"] / r["decode_tok_s"]

    print(
        f"\nSmolLM2-135M-Instruct, prompt {args.prompt_len}, {args.new} new tokens, "
        f"median of {args.reps} interleaved runs"
    )
    head = f"{'system':16s} {'batch':>5s} {'prefill tok/s':>14s} {'decode tok/s':>13s}"
    print(head + f" {'ours/this prefill':>18s} {'ours/this decode':>17s}")
    for r in rows:
        print(
            f"{r['system']:16s} {r['batch']:5d} {r['prefill_tok_s']:14.1f} "
            f"{r['decode_tok_s']:13.1f} {r['ours_over_this_prefill']:18.2f} "
            f"{r['ours_over_this_decode']:17.2f}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "args": vars(args),
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
