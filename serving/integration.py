"""The vLLM integration check (`make serve-test`): export → serve → parity → replay.

1. A tiny random Qwen3 with the real Qwen tokenizer (head_dim 32, as vLLM's CPU
   attention requires), or with ``--model`` a trained model with its own
   tokenizer (the tiny world's), is exported in bf16 (``serving.export``).
2. ``hat serve``'s launcher starts vLLM on it (``serving.launch``).
3. Greedy parity: for 5 trace prompts, our JAX sampler (the exported bf16
   weights, computed in float32) and vLLM (``/v1/completions`` on the same
   token ids, ``ignore_eos``) generate ``--max-tokens`` tokens. A prompt is
   ``exact`` when the ids are equal, and ``tie`` when every token vLLM chose
   is, teacher-forced on vLLM's own ids, our argmax or within one bf16 ulp of
   our top logit (vLLM computes in bf16: it cannot order logits closer than
   that; :func:`bf16_ties`). The check passes when every prompt is one of them.
4. vLLM's tool path (``serving.toolcheck``): ``/v1/chat/completions`` with the
   harness's tools, free and with the reply forced to the oracle's gold tool
   calls in our format, and vLLM's parser classes run directly on our
   rendering of a fixed set of calls (both formats, before the server starts):
   vLLM's parsed ``tool_calls`` must equal ours on the identical raw text.
5. A short replay through vLLM (``serving.replay``, endpoint backend); every
   summary metric must be present.
6. The server is stopped; ``integration.json`` records the outcome.

    python -m serving.integration --serve-python .venv-serve/bin/python \\
        --out runs/serve-test
    python -m serving.integration --model runs/hat_tiny/_steps/rl-... --mtp 1 \\
        --out runs/serve-test-world      # the tiny world's HAT model, its MTP head
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PARITY_PROMPTS = 5


# Tiny configs vLLM's CPU backend accepts (head dims 32/64, DeltaNet heads 64).
ARCHS = {
    "qwen3": dict(
        model_type="qwen3", hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        head_dim=32,
    ),
    "qwen3_5_moe": dict(
        model_type="qwen3_5_moe_text", hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        head_dim=64, layer_types=("linear_attention", "full_attention"),
        linear_conv_kernel_dim=4, linear_key_head_dim=64, linear_value_head_dim=64,
        linear_num_key_heads=1, linear_num_value_heads=1, num_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=64, partial_rotary_factor=0.25,
        mtp_num_hidden_layers=1,
    ),
}  # fmt: skip


def tiny_model(tokenizer, arch: str = "qwen3", seed: int = 0):
    from hat_jax.models import ModelConfig, build_model

    cfg = ModelConfig(
        vocab_size=tokenizer.vocab_size, max_position_embeddings=4096, **ARCHS[arch]
    )
    return build_model(cfg, seed=seed)


def bf16_ties(model, prompt: list[int], theirs: list[int]) -> list[dict]:
    """Positions where vLLM's token is not our argmax, with our logit margin.

    ``tie`` is True when the margin is within one bf16 ulp of our top logit.
    """
    import numpy as np

    ids = np.asarray([prompt + theirs], np.int32)
    pos = np.arange(ids.shape[1], dtype=np.int32)[None]
    logits = np.asarray(model.logits(model.hidden_states(ids, pos)[0]))[0]
    out = []
    for k, t in enumerate(theirs):
        row = logits[len(prompt) - 1 + k]
        if int(row.argmax()) != t:
            top = float(row.max())
            ulp = 2.0 ** (np.floor(np.log2(abs(top) + 1e-30)) - 7)  # bf16: 8 bits
            margin = top - float(row[t])
            out.append({"position": k, "margin": margin, "tie": bool(margin <= ulp)})
    return out


def vllm_greedy(url: str, prompt: list[int], n: int) -> list[int]:
    """vLLM's greedy ids for ``prompt`` (``return_token_ids``)."""
    from hat_jax.endpoint import EndpointClient, PolicyError, parse_completion

    body = {
        "model": "hat", "prompt": prompt, "max_tokens": n, "temperature": 0.0,
        "ignore_eos": True, "return_token_ids": True, "skip_special_tokens": False,
    }  # fmt: skip
    with EndpointClient(url, timeout_s=120, retries=0) as client:
        where = f"POST {client.url('completions')}"
        ids = parse_completion(client.post_json("completions", body), where).token_ids
    if ids is None:
        raise PolicyError(f"{where}: no choices[0].token_ids (is vLLM too old?)")
    return ids


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--serve-python", default=".venv-serve/bin/python")
    p.add_argument("--out", default="runs/serve-test")
    p.add_argument("--port", type=int, default=8391)
    p.add_argument("--max-tokens", type=int, default=12)
    p.add_argument("--replay-messages", type=int, default=6)
    p.add_argument("--arch", choices=sorted(ARCHS), default="qwen3")
    p.add_argument("--mtp", type=int, default=0, help="vLLM MTP drafts (qwen3_5_moe)")
    p.add_argument(
        "--model",
        help="a trained workdir or HF folder (e.g. the tiny world's HAT model) "
        "with its own tokenizer, instead of a random --arch model",
    )
    args = p.parse_args(argv)

    from hat_jax.checkpoints.hf import load_hf
    from hat_jax.harness import render_prompt
    from hat_jax.harness.prompt import render_system_prompt
    from hat_jax.sampling import Sampler, SamplingParams
    from hat_jax.text.qwen_tokenizer import load_qwen3_6_tokenizer
    from serving.cases import trace_cases, trace_jobs
    from serving.chat_template import TOOL_PARSERS
    from serving.export import export
    from serving.launch import VLLMServer, vllm_args
    from serving.replay import ReplayOptions, replay
    from serving.toolcheck import run_direct, run_served, summary
    from serving.trace import make_trace, read_trace, write_trace

    out = Path(args.out)
    report: dict = {"steps": {}}
    t0 = time.monotonic()
    if args.model:
        from hat_jax.eval.backends import load_jax_model

        src = load_jax_model(args.model)
        tok = src[1]
    else:
        tok = load_qwen3_6_tokenizer()
        src = (tiny_model(tok, args.arch), tok)
    folder = out / "model"
    info = export(src, folder, dtype="bfloat16")
    report["export"] = info
    trace_path = write_trace(
        make_trace(n_messages=max(args.replay_messages, PARITY_PROMPTS), rooms=2,
                   arrivals="poisson", rate=1.0, seed=0),
        out / "trace.jsonl",
    )  # fmt: skip
    trace = read_trace(trace_path)
    jobs = trace_jobs(trace)
    prompts = []
    for job in jobs[:PARITY_PROMPTS]:
        system = render_system_prompt(job.harness, job.request.room_context)
        msgs = [{"role": "system", "content": system},
                {"role": "user", "content": job.request.user_message}]  # fmt: skip
        prompts.append(tok.encode(render_prompt(msgs)))
    model, _ = load_hf(folder, param_dtype="float32")
    ours = Sampler(model, tok).generate(
        prompts, SamplingParams(max_new_tokens=args.max_tokens, stop_ids=())
    )
    report["steps"]["export_and_jax_s"] = time.monotonic() - t0
    td = time.monotonic()
    direct = run_direct(args.serve_python, folder, TOOL_PARSERS)
    report["tools"] = {"direct": direct}
    report["steps"]["tools_direct_s"] = time.monotonic() - td
    flags = vllm_args(folder, port=args.port, mtp=args.mtp, max_model_len=4096)
    ok = False
    t1 = time.monotonic()
    with VLLMServer(flags, python=args.serve_python, log=out / "vllm.log") as srv:
        report["steps"]["vllm_start_s"] = time.monotonic() - t1
        theirs = [vllm_greedy(srv.url, pr, args.max_tokens) for pr in prompts]
        exact = [list(a.tokens) == b for a, b in zip(ours, theirs)]
        diffs = [bf16_ties(model, pr, b) for pr, b in zip(prompts, theirs)]
        parity = [e or all(d["tie"] for d in ds) for e, ds in zip(exact, diffs)]
        report["parity"] = {
            "exact": exact,
            "equal_up_to_bf16_ties": parity,
            "differences": diffs,
            "ours": [list(a.tokens) for a in ours],
            "vllm": theirs,
        }
        t2 = time.monotonic()
        served = run_served(
            srv.url, jobs, trace_cases(trace), tok, fmt=info["tool_call_format"],
            max_tokens=2 * args.max_tokens,
        )  # fmt: skip
        report["tools"].update(served)
        report["steps"]["tools_served_s"] = time.monotonic() - t2
        tools = {k: summary(v) for k, v in report["tools"].items()}
        report["tools_summary"] = tools
        tools_ok = all(not s["failed"] for s in tools.values())
        result = replay(
            jobs[: args.replay_messages], "endpoint", srv.url, out / "replay",
            concurrency=(1, 2), opts=ReplayOptions(max_new_tokens=32, timeout_s=120),
        )  # fmt: skip
        summaries = [r["summary"] for r in result["runs"]]
        keys = ("latency_s", "ttft_s", "decode_tok_s", "share_under_15s", "time_split")
        if args.mtp:
            keys += ("mtp_acceptance_rate", "mtp_mean_accepted_length")
        metrics_ok = all(s[k] is not None for s in summaries for k in keys)
        report["replay"] = summaries
        ok = all(parity) and metrics_ok and tools_ok
    report["stopped"] = srv.proc.poll() is not None
    report["ok"] = ok and report["stopped"]
    report["steps"]["total_s"] = time.monotonic() - t0
    (out / "integration.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps({k: report[k] for k in ("ok", "stopped", "steps")}, indent=1))
    par = report["parity"]
    print(
        f"parity exact {par['exact']}, up to bf16 ties {par['equal_up_to_bf16_ties']}"
    )
    for kind, s in report.get("tools_summary", {}).items():
        print(
            f"tools {kind}: {s['passed']}/{s['n']} equal, {s['with_calls']} with a "
            f"vLLM tool call, failed {s['failed']}, known {s['known_differences']}"
        )
    print(f"replay table: {out}/replay/replay.md")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
