"""Memory plan: bytes per device for training and rollout of a config's model.

Examples:
  hat plan --config=experiments/configs/paper_35b.py --devices 8 --hardware h20
  hat plan --config=experiments/configs/paper_35b.py --devices 8 --device-memory 141GB
  hat plan --config=experiments/configs/paper_35b.py --mesh fsdp=4,expert=2

Parameter shapes come from the real model (abstractly, nothing is allocated) and
the partition rules of `hat_jax.parallel`; activations are estimated (see
`hat_jax.parallel.plan`). Without --hardware or --device-memory both the H20
(96 GB) and the H200 (141 GB) are checked.
"""

from __future__ import annotations

import re
import sys

from hat_jax.cli.config_flags import add_config_args

_SIZE = re.compile(r"^\s*([0-9.]+)\s*(GB|GiB|G)?\s*$", re.IGNORECASE)


def add_arguments(p) -> None:
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE
    p.add_argument("--devices", type=int, default=8, help="devices in the mesh")
    p.add_argument(
        "--hardware",
        action="append",
        default=[],
        help="preset device memory: h20 (96 GB), h200 (141 GB), h100, a100; repeat",
    )
    p.add_argument("--device-memory", help="memory per device, e.g. 96GB or 80GiB")
    p.add_argument(
        "--mesh", help="axis sizes, e.g. fsdp=4,expert=2 (default: the config's)"
    )
    p.add_argument("--tokens-per-device", type=int, help="tokens per micro-batch")
    remat = p.add_mutually_exclusive_group()
    remat.add_argument("--remat", dest="remat", action="store_true", default=None)
    remat.add_argument("--no-remat", dest="remat", action="store_false")
    p.add_argument("--moe-impl", choices=["topk", "dense"], default="topk")
    p.add_argument("--kv-batch", type=int, help="rollout sequences in flight")
    p.add_argument("--kv-len", type=int, help="rollout sequence length")


def parse_memory(text: str) -> float:
    """Bytes from "96GB" (1e9) or "80GiB" (2**30)."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"cannot read device memory {text!r}; e.g. 96GB")
    unit = (m.group(2) or "GB").lower()
    return float(m.group(1)) * (2**30 if unit == "gib" else 1e9)


def parse_mesh(text: str) -> dict[str, int]:
    out = {}
    for part in filter(None, text.split(",")):
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"--mesh wants axis=size pairs, got {part!r}")
        out[name.strip()] = int(value)
    return out


def run(args) -> int:
    from hat_jax.cli.config_flags import ConfigError, load_config
    from hat_jax.parallel.mesh import resolve_sizes
    from hat_jax.parallel.plan import HARDWARE, make_plan
    from hat_jax.train.build import model_config

    try:
        cfg = load_config(args.config, getattr(args, "config_overrides", []))
    except ConfigError as e:
        print(f"hat plan: error: {e}", file=sys.stderr)
        return 2
    mesh = parse_mesh(args.mesh) if args.mesh else dict(cfg.get("mesh") or {})
    if not mesh:
        mesh = {"fsdp": -1}
    sizes = resolve_sizes(args.devices, **mesh)
    hardware = {}
    for name in args.hardware:
        if name.lower() not in HARDWARE:
            raise ValueError(f"unknown hardware {name!r}; have {sorted(HARDWARE)}")
        hardware[name.upper()] = HARDWARE[name.lower()]
    if args.device_memory:
        hardware["device"] = parse_memory(args.device_memory)
    if not hardware:
        hardware = {"H20": HARDWARE["h20"], "H200": HARDWARE["h200"]}
    plan_cfg = cfg.get("plan") or {}
    seq = int(cfg.get("seq_len", 8192))
    plan = make_plan(
        model_config(cfg),
        sizes,
        tokens_per_device=args.tokens_per_device
        or int(plan_cfg.get("tokens_per_device", seq)),
        remat=bool(cfg.get("remat", True)) if args.remat is None else args.remat,
        compute_dtype=cfg.get("compute_dtype", "bfloat16"),
        moe_impl=args.moe_impl,
        loss_chunk=int(cfg.get("loss_chunk", 512)),
        kv_batch=args.kv_batch or int(plan_cfg.get("kv_batch", 64)),
        kv_len=args.kv_len or int(plan_cfg.get("kv_len", 32768)),
    )
    print(plan.table(hardware))
    return 0
