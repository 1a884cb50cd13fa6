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

import math
import re
import sys

from hat_jax.cli.argtypes import count, parsed
from hat_jax.cli.config_flags import add_config_args

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*(GB|GiB|G)?\s*$", re.IGNORECASE)
_AXIS = re.compile(r"^[a-z_]+$")
HARDWARE_NAMES = ("h20", "h200", "h100", "a100")  # hat_jax.parallel.plan.HARDWARE


def add_arguments(p) -> None:
    add_config_args(p)  # --config=FILE[:ARG] and --config.KEY=VALUE
    p.add_argument(
        "--devices", type=count(1, 2**20), default=8, help="devices in the mesh"
    )
    p.add_argument(
        "--hardware",
        action="append",
        default=[],
        type=str.lower,
        choices=HARDWARE_NAMES,
        help="preset device memory: h20 (96 GB), h200 (141 GB), h100, a100; repeat",
    )
    p.add_argument(
        "--device-memory",
        type=parsed(parse_memory),
        help="per device, e.g. 96GB, 80GiB",
    )
    p.add_argument(
        "--mesh",
        type=parsed(parse_mesh),
        help="axis sizes, e.g. fsdp=4,expert=2 (default: the config's)",
    )
    p.add_argument(
        "--tokens-per-device", type=count(1, 2**24), help="tokens per micro-batch"
    )
    remat = p.add_mutually_exclusive_group()
    remat.add_argument("--remat", dest="remat", action="store_true", default=None)
    remat.add_argument("--no-remat", dest="remat", action="store_false")
    p.add_argument(
        "--moe-impl",
        choices=["topk", "dense"],
        help="how routed experts run (default: the config's model.moe_impl)",
    )
    p.add_argument(
        "--kv-batch", type=count(1, 2**20), help="rollout sequences in flight"
    )
    p.add_argument("--kv-len", type=count(1, 2**24), help="rollout sequence length")


def parse_memory(text: str) -> float:
    """Bytes from "96GB" (1e9) or "80GiB" (2**30)."""
    m = _SIZE.match(text)
    value = float(m.group(1)) if m else math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"cannot read device memory {text!r}; e.g. 96GB or 80GiB")
    unit = (m.group(2) or "GB").lower()
    return value * (2**30 if unit == "gib" else 1e9)


def parse_mesh(text: str) -> dict[str, int]:
    """``fsdp=4,expert=2`` -> {"fsdp": 4, "expert": 2}; -1 means "the rest"."""
    out = {}
    for part in text.split(","):
        name, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not _AXIS.match(name) or name in out:
            raise ValueError(
                f"wants distinct axis=size pairs like fsdp=4, got {part!r}"
            )
        if not re.fullmatch(r"-1|[1-9][0-9]{0,6}", value):
            raise ValueError(f"axis {name}: size must be a positive integer or -1")
        out[name] = int(value)
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
    mesh = args.mesh or dict(cfg.get("mesh") or {})
    if not mesh:
        mesh = {"fsdp": -1}
    try:
        sizes = resolve_sizes(args.devices, **mesh)
    except ValueError as e:
        raise ValueError(f"--mesh / --devices {args.devices}: {e}") from None
    assert set(HARDWARE) == set(HARDWARE_NAMES), "keep HARDWARE_NAMES in step"
    hardware = {name.upper(): HARDWARE[name] for name in args.hardware}
    if args.device_memory:
        hardware["device"] = args.device_memory
    if not hardware:
        hardware = {"H20": HARDWARE["h20"], "H200": HARDWARE["h200"]}
    plan_cfg = cfg.get("plan") or {}
    seq = int(cfg.get("seq_len", 8192))
    mcfg = model_config(cfg)  # its dtype is cfg.compute_dtype, as the trainer's
    plan = make_plan(
        mcfg,
        sizes,
        tokens_per_device=args.tokens_per_device
        or int(plan_cfg.get("tokens_per_device", seq)),
        # the trainer's defaults (hat_jax/train/sft.py): no remat unless asked
        remat=bool(cfg.get("remat", False)) if args.remat is None else args.remat,
        compute_dtype=mcfg.dtype,
        moe_impl=args.moe_impl or mcfg.moe_impl,
        seq_len=seq,
        loss_chunk=int(cfg.get("loss_chunk", 512)),
        kv_batch=args.kv_batch or int(plan_cfg.get("kv_batch", 64)),
        kv_len=args.kv_len or int(plan_cfg.get("kv_len", 32768)),
    )
    print(plan.table(hardware))
    return 0
