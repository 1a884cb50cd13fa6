"""Export a checkpoint as a HF folder vLLM serves as is (LoRA merged, MTP, template).

Examples:
  hat export runs/sft_tiny --out out/sft-vllm --dtype bfloat16
  hat export out/model-hf --out out/model-vllm --format hermes
"""

from __future__ import annotations

from serving.chat_template import TOOL_PARSERS
from serving.export import export


def add_arguments(p) -> None:
    p.add_argument("ckpt", help="a `hat train` workdir, a HF folder or a .gguf file")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--format",
        choices=sorted(TOOL_PARSERS),
        default="qwen_xml",
        help="the tool-call format the model was trained on",
    )
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="tensor dtype (vLLM on CPU needs bfloat16; default: the model's)",
    )


def run(args) -> int:
    info = export(args.ckpt, args.out, fmt=args.format, dtype=args.dtype)
    print(
        f"wrote {info['model_type']} to {args.out}: tool parser {info['tool_parser']}, "
        f"{info['mtp_layers']} MTP layer(s), dtype {info['dtype']}"
    )
    for problem in info["cpu_problems"]:
        print(f"warning: vLLM CPU: {problem}")
    return 0
