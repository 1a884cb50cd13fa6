"""Replay a trace through the full agent loop and report reply latency.

With `--model` (the embedded backend, the default) the JAX sampler runs on a
virtual clock: model calls are measured for real and batched across the
in-flight turns (`serving.schedule`). With `--endpoint` an OpenAI-compatible
server (vLLM) is called on the wall clock and its `/metrics` give the MTP
acceptance. Writes replay.json, replay.md and latency_cdf.png under --out.

Examples:
  hat replay --trace runs/traces/poisson200.jsonl --model runs/sft_tiny \\
      --concurrency 1,4,8 --mtp 2 --out runs/replay/embedded
  hat replay --trace runs/traces/poisson200.jsonl --model runs/hat/_steps/rl-... \\
      --mtp 1 --mtp-head runs/hat/_steps/base-... --out runs/replay/base_head
  hat replay --trace runs/traces/poisson200.jsonl \\
      --endpoint http://127.0.0.1:8000 --concurrency 1,4 --out runs/replay/vllm
  hat replay --trace runs/hat_tiny_copy/_steps/replay-.../trace.jsonl \\
      --model runs/hat_tiny_copy/_steps/rl-... --prompt-format compact \\
      --compact-results --max-new-tokens 192 --concurrency 1,4,8 --repeats 5 \\
      --out runs/replay/again
      (a sweep's replay step again, by hand: its trace and its world's settings,
      five times per level: the median and [min, max])
"""

from __future__ import annotations

import sys

from hat_jax.cli.argtypes import count, finite, int_list
from hat_jax.harness.spec import PROMPT_FORMATS
from serving.replay import ReplayOptions, replay
from serving.trace import TraceError, read_trace

MAX_CONCURRENCY = 1024  # turns in flight (threads); far past any server's batch


def add_arguments(p) -> None:
    p.add_argument("--trace", required=True, help="a trace file (`hat trace make`)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a `hat train` workdir or HF folder")
    which.add_argument("--endpoint", help="an OpenAI-compatible server URL")
    p.add_argument(
        "--concurrency",
        type=int_list(1, MAX_CONCURRENCY),
        default=[1],
        help=f"comma-separated levels, each 1..{MAX_CONCURRENCY}",
    )
    p.add_argument(
        "--mtp", type=count(0, 16), default=0, help="MTP drafts per step (embedded)"
    )
    p.add_argument(
        "--mtp-head",
        help="embedded: draft with this workdir's MTP head (e.g. the base stage's)",
    )
    p.add_argument("--max-new-tokens", type=count(1), default=128)
    p.add_argument(
        "--closed-loop",
        action="store_true",
        help="each concurrency level is that many clients sending their next "
        "message when the last is answered (default: the trace's arrival times)",
    )
    p.add_argument(
        "--tool-latency-ms",
        type=finite(0, 60000),
        default=0.0,
        help="modelled median latency of each tool call (default 0: none)",
    )
    p.add_argument(
        "--tool-latency-sigma",
        type=finite(0, 60),
        default=0.0,
        help="log-sd of the lognormal tool latency (0: the median every call)",
    )
    p.add_argument(
        "--no-prefix-reuse",
        action="store_true",
        help="embedded: prefill every call's prompt whole (default: reuse the "
        "cache of the prefix it shares with the previous call)",
    )
    p.add_argument("--limit", type=count(1), help="first N messages only")
    p.add_argument(
        "--repeats",
        type=count(1, 100),
        default=1,
        help="replay each level N times: the median and [min, max] over them "
        "(one replay of the embedded backend is one draw; 5 give a ~94 %% interval)",
    )
    p.add_argument(
        "--timeout",
        type=finite(0, open_low=True),
        default=60.0,
        help="endpoint: per model call (s)",
    )
    p.add_argument(
        "--time-scale",
        type=finite(0, open_low=True),
        default=1.0,
        help="endpoint: speed up arrivals (> 0)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="endpoint: read the API key from this variable (default HAT_API_KEY)",
    )
    p.add_argument(
        "--prompt-format",
        choices=PROMPT_FORMATS,
        help="render every session's harness in this format (default: its own)",
    )
    p.add_argument(
        "--compact-results",
        action="store_true",
        help="tools return only the fields a task needs (the compact worlds)",
    )
    p.add_argument("--label", default="", help="the backend's name in the table")
    p.add_argument("--out", required=True, help="output folder")


def run(args) -> int:
    from serving.cases import trace_jobs
    from sim.tools import SimBackend

    try:
        trace = read_trace(args.trace)
        jobs = trace_jobs(trace, args.trace, prompt_format=args.prompt_format)
    except TraceError as e:
        print(f"invalid trace: {e}", file=sys.stderr)
        return 1
    if args.limit:
        jobs = jobs[: args.limit]
    levels = args.concurrency
    opts = ReplayOptions(
        max_new_tokens=args.max_new_tokens,
        mtp_k=args.mtp,
        timeout_s=args.timeout,
        time_scale=args.time_scale,
        label=args.label,
        api_key_env=args.api_key_env,
        prefix_reuse=not args.no_prefix_reuse,
        closed_loop=args.closed_loop,
        tool_latency_ms=args.tool_latency_ms,
        tool_latency_sigma=args.tool_latency_sigma,
        repeats=args.repeats,
    )
    if args.api_key_env and not args.endpoint:
        print("--api-key-env needs --endpoint", file=sys.stderr)
        return 1
    kind, target = (
        ("endpoint", args.endpoint) if args.endpoint else ("embedded", args.model)
    )
    if args.mtp_head:
        if args.endpoint or not args.mtp:
            print(
                "--mtp-head needs the embedded backend (--model) and --mtp K > 0",
                file=sys.stderr,
            )
            return 1
        try:
            target = _grafted(args.model, args.mtp_head)
        except ValueError as e:
            print(f"--mtp-head {args.mtp_head}: {e}", file=sys.stderr)
            return 1
    tools = SimBackend(None, seed=0, compact=args.compact_results)
    replay(
        jobs, kind, target, args.out, concurrency=levels, opts=opts, tool_backend=tools
    )
    print(f"wrote {args.out}/replay.json, replay.md, latency_cdf.png")
    return 0


def _grafted(model_path: str, head_path: str):
    """(model with ``head_path``'s MTP head, tokenizer)."""
    from hat_jax.eval.backends import load_jax_model
    from hat_jax.models.mtp import graft_head

    model, tokenizer = load_jax_model(model_path)
    return graft_head(model, load_jax_model(head_path)[0]), tokenizer
