"""Make and check replay traces: simulated live rooms with message arrival times.

Examples:
  hat trace make --n-messages 200 --rooms 4 --arrivals poisson --rate 0.5 \\
      --seed 0 --out runs/traces/poisson200.jsonl
  hat trace check runs/traces/poisson200.jsonl
"""

from __future__ import annotations

import collections
import sys

from hat_jax.cli.argtypes import count, finite, seed
from hat_jax.harness.builtin import BUILTIN
from hat_jax.printable import shown
from serving.trace import ARRIVALS, TraceError, make_trace, read_trace, write_trace
from sim.types import SPLITS


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="trace_command", required=True)
    m = sub.add_parser("make", help="generate a trace from the simulator")
    m.add_argument("--n-messages", type=count(1), default=200)
    m.add_argument("--rooms", type=count(1), default=4, help="live rooms at once")
    m.add_argument("--arrivals", choices=sorted(ARRIVALS), default="poisson")
    m.add_argument(
        "--rate",
        type=finite(0, open_low=True),
        default=0.5,
        help="messages per second, all rooms",
    )
    m.add_argument("--seed", type=seed, default=0)
    m.add_argument("--split", choices=SPLITS, default="test")
    m.add_argument(
        "--harness",
        choices=BUILTIN,
        default="taolive_v1",
        help="builtin harness in every room",
    )
    m.add_argument("--out", required=True, help="output JSONL file")
    c = sub.add_parser("check", help="validate a trace file and summarise it")
    c.add_argument("file")


def _summary(trace) -> str:
    ts = [m.t for m in trace.messages]
    per = collections.Counter(m.session for m in trace.messages)
    span = ts[-1] - ts[0] if len(ts) > 1 else 0.0
    rate = (len(ts) - 1) / span if span > 0 else float("nan")
    return (
        f"{len(ts)} messages in {len(trace.sessions)} sessions over {span:.1f} s "
        f"(observed {rate:.3f}/s, {trace.header['arrivals']}); per session: "
        + ", ".join(f"{shown(k)}={v}" for k, v in sorted(per.items()))
    )


def run(args) -> int:
    if args.trace_command == "make":
        trace = make_trace(
            n_messages=args.n_messages,
            rooms=args.rooms,
            arrivals=args.arrivals,
            rate=args.rate,
            seed=args.seed,
            split=args.split,
            harness=args.harness,
        )
        path = write_trace(trace, args.out)
        print(f"wrote {path}: {_summary(trace)}")
        return 0
    try:
        trace = read_trace(args.file)
    except TraceError as e:
        print(f"invalid trace: {e}", file=sys.stderr)
        return 1
    print(f"ok {args.file}: {_summary(trace)}")
    return 0
