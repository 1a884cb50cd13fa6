"""Prefix reuse across a turn's model calls: prefill time and turn time, on and off.

The agent loop calls the model several times a turn, and each call's prompt is the
previous one plus what was said since; `hat eval run` batches cases under one
system prompt. This replays the calls of gold trajectories (simulator rows, e.g.
a `sim_hsa` step's `data.jsonl`) the way `hat_jax.harness.loop.run_turns` makes
them: cases in batches of `--batch`, call k of every case in the batch that has
one in one `Sampler.generate`. Each call's prompt is the gold conversation up to
that assistant message; the model decodes `--new` tokens greedily (its own text
is not fed back, so the generated part of a call is never a prefix of the next
and is not reused here: a trained model that says what the gold says would reuse
more).

Both modes run the same calls on the same model (`--workdir`: any `hat train`
workdir; a base stage of the world is enough, the times do not depend on what the
weights say), interleaved after a warm-up pass that compiles every shape, best of
`--reps` passes per call (other load only ever adds time). Reported: prefill
seconds of a batch's first call and of its later calls, the share of prompt
tokens served from the cache, the model time of a turn (sum of its calls' wall
times, as the batch holds every row; P50 / P95 over cases), the calls whose
outputs differ between modes (expected 0), and the machine's fp32 matmul rate
measured in the same run beside the prefill's approximate rate.

    python benchmarks/prefix_reuse.py --workdir W --data DATA [--cases 64]
        [--batch 16] [--new 32] [--reps 2] [--out benchmarks/results/prefix_reuse.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from limits import matmul_gflops

from hat_jax.cli.env_cmd import cpu_model
from hat_jax.eval.backends import load_jax_model
from hat_jax.harness.policy import render_prompt
from hat_jax.harness.tokens import read_jsonl
from hat_jax.sampling import Sampler, SamplingParams


def turn_calls(rows, tokenizer, fmt: str) -> list[list[list[int]]]:
    """Per case, the prompt token ids of each of its model calls."""
    out = []
    for row in rows:
        msgs = row.messages
        at = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
        texts = [render_prompt(msgs[:i], fmt=fmt) for i in at]
        out.append(tokenizer.encode_batch(texts))
    return out


def schedule(cases, batch: int) -> list[tuple[list[int], list[list[int]]]]:
    """(case indices, prompts) of each call, in the order run_turns makes them."""
    calls = []
    for lo in range(0, len(cases), batch):
        ids = range(lo, min(lo + batch, len(cases)))
        for k in range(max(len(cases[i]) for i in ids)):
            live = [i for i in ids if k < len(cases[i])]
            calls.append((live, [cases[i][k] for i in live]))
    return calls


def prefill_flops(cfg, tokens: int, context: int) -> float:
    """About 2 x matmul weights per token, plus QK^T and PV over `context` keys."""
    d, layers = cfg.hidden_size, cfg.num_hidden_layers
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads
    proj = d * q * 2 + 2 * d * kv * cfg.head_dim + 3 * d * cfg.intermediate_size
    return 2.0 * tokens * (layers * proj + d * cfg.vocab_size) + 4.0 * layers * q * (
        context
    )


def one_pass(sampler, calls, sp):
    rows = []
    for _, prompts in calls:
        out = sampler.generate(prompts, sp)
        info = sampler.last_call
        rows.append(
            {
                "prefill_s": info.prefill_s,
                "wall_s": info.prefill_s + info.decode_s,
                "reused": info.reused_tokens,
                "prompt": info.prompt_tokens,
                "tokens": [c.tokens for c in out],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", required=True, help="a `hat train` workdir")
    ap.add_argument("--data", required=True, help="simulator trajectories (JSONL)")
    ap.add_argument("--cases", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--new", type=int, default=32, help="new tokens per call")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--fmt", default="qwen_xml", help="the tool-call format")
    ap.add_argument("--out", default="benchmarks/results/prefix_reuse.json")
    args = ap.parse_args()

    model, tok = load_jax_model(args.workdir)
    rows = [r for _, r in zip(range(args.cases), read_jsonl(args.data))]
    cases = turn_calls(rows, tok, args.fmt)
    calls = schedule(cases, args.batch)
    sp = SamplingParams(max_new_tokens=args.new, stop_ids=())
    modes = {"reuse": True, "fresh": False}
    samplers = {m: Sampler(model, tok, prefix_reuse=on) for m, on in modes.items()}
    for s in samplers.values():  # warm-up: compile every shape
        one_pass(s, calls, sp)
    passes = {m: [] for m in modes}
    for _ in range(args.reps):
        for m, s in samplers.items():
            s._kept = None  # every pass starts cold, as a new eval does
            passes[m].append(one_pass(s, calls, sp))
    gflops = matmul_gflops()

    result = {}
    for m, reps in passes.items():
        best = [
            {
                **reps[0][j],
                **{k: min(r[j][k] for r in reps) for k in ("prefill_s", "wall_s")},
            }
            for j in range(len(calls))
        ]
        turn = np.zeros(len(cases))
        for (live, _), b in zip(calls, best):
            turn[live] += b["wall_s"]
        # a batch's first call: its first case differs from the previous call's
        first_ids = {0} | {
            j for j in range(1, len(calls)) if calls[j][0][0] != calls[j - 1][0][0]
        }
        first = [best[j]["prefill_s"] for j in sorted(first_ids)]
        later = [b["prefill_s"] for j, b in enumerate(best) if j not in first_ids]
        flops = sum(
            prefill_flops(model.config, b["prompt"] - b["reused"], b["prompt"])
            for b in best
        )
        result[m] = {
            "first_call_prefill_s": float(np.mean(first)),
            "later_call_prefill_s": float(np.mean(later)),
            "prefill_s_total": sum(b["prefill_s"] for b in best),
            "wall_s_total": sum(b["wall_s"] for b in best),
            "prompt_tokens": sum(b["prompt"] for b in best),
            "cached_tokens": sum(b["reused"] for b in best),
            "turn_p50_s": float(np.percentile(turn, 50)),
            "turn_p95_s": float(np.percentile(turn, 95)),
            "prefill_gflops": flops / sum(b["prefill_s"] for b in best) / 1e9,
            "tokens": [b["tokens"] for b in best],
        }
    differ = sum(
        a != b for a, b in zip(result["reuse"]["tokens"], result["fresh"]["tokens"])
    )
    for r in result.values():
        del r["tokens"]
        r["hit_rate"] = r["cached_tokens"] / r["prompt_tokens"]
    on, off = result["reuse"], result["fresh"]
    print(
        f"\n{len(cases)} gold turns ({len(calls)} batched calls, batch {args.batch}, "
        f"{args.new} new tokens a call), best of {args.reps}; "
        f"{cpu_model()}, {os.cpu_count()} cpus; fp32 matmul {gflops:.1f} GFLOP/s"
    )
    keys = [
        ("first-call prefill s", "first_call_prefill_s", "{:.3f}"),
        ("later-call prefill s", "later_call_prefill_s", "{:.3f}"),
        ("prefix cache hit rate", "hit_rate", "{:.1%}"),
        ("turn model time P50 s", "turn_p50_s", "{:.2f}"),
        ("turn model time P95 s", "turn_p95_s", "{:.2f}"),
        ("all calls, wall s", "wall_s_total", "{:.1f}"),
        ("prefill GFLOP/s (approx.)", "prefill_gflops", "{:.1f}"),
    ]
    print(f"{'':28s} {'fresh':>10s} {'reuse':>10s} {'fresh/reuse':>12s}")
    for label, k, f in keys:
        ratio = off[k] / on[k] if on[k] else float("nan")
        print(
            f"{label:28s} {f.format(off[k]):>10s} {f.format(on[k]):>10s} {ratio:12.2f}"
        )
    print(f"calls whose outputs differ between the modes: {differ} of {len(calls)}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "fp32_matmul_gflops": gflops,
        "model": model.config.model_type,
        "layers": model.config.num_hidden_layers,
        "hidden": model.config.hidden_size,
        "calls": len(calls),
        "calls_differing": differ,
        "args": vars(args),
    }
    out.write_text(json.dumps({"meta": meta, "modes": result}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
