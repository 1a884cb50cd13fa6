"""Latency statistics of a replay: percentiles, shares, the table and the CDF plot.

Per-reply end-to-end latency runs from a message's arrival to the end of its
turn (queueing for a slot included). Turns that ended in an error or a timeout
have no reply: they are counted apart and, for ``share_under_15s``, count as
not served in time (the share is over all messages). TTFT is per model call
(prefill, or the first streamed chunk); ``first_token_s`` is per turn, from
arrival to the first token of its first model call. Decode tokens/s is per
stream: tokens after each row's first token over the time they took.
``time_split`` shares the served turns' time among queue, model, tools, hooks
and other (the rest of the latency); the shares sum to 1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from serving.schedule import TurnRecord

SLA_S = 15.0
PCTS = (50, 95, 99)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (numpy's linear interpolation); nan when empty."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _dist(values: Sequence[float]) -> dict[str, float]:
    out = {f"p{q}": percentile(values, q) for q in PCTS}
    out["mean"] = sum(values) / len(values) if values else float("nan")
    out["max"] = max(values) if values else float("nan")
    return out


def summarize(records: Sequence[TurnRecord], spec: dict | None = None) -> dict:
    """The replay's metrics (module docstring) as a flat-ish JSON-able dict.

    Args:
      records: one per message.
      spec: MTP acceptance counts from elsewhere (an endpoint's ``/metrics``):
        ``{"drafts": ..., "draft_tokens": ..., "accepted_tokens": ...}``;
        None: summed from the embedded sampler's per-call counts.
    """
    served = [r for r in records if r.status not in ("error", "timeout")]
    lat = [r.latency for r in served]
    calls = [c for r in records for c in r.calls]
    ttft = [t for c in calls for t in c.ttft_s]
    after_first = sum(c.new_tokens - c.batch for c in calls)
    row_decode = sum(c.row_decode_s for c in calls)
    split = {
        "queue": sum(r.queue_s for r in served),
        "model": sum(r.model_s for r in served),
        "tools": sum(r.tools_s for r in served),
        "hooks": sum(r.hooks_s for r in served),
    }
    total = sum(lat)
    split["other"] = max(total - sum(split.values()), 0.0)
    # The parts come from more than one clock (the virtual clock counts host
    # CPU time, the harness's tool and hook timings wall time), so on a loaded
    # machine they can add up to more than the latency: shares of their own sum
    # then. Either way the shares sum to 1 by construction.
    whole = sum(split.values())
    if spec is None:
        proposed = sum(c.drafts_proposed for c in calls)
        accepted = sum(c.drafts_accepted for c in calls)
        verifies = sum(c.row_verifies for c in calls)
    else:
        proposed, accepted = spec["draft_tokens"], spec["accepted_tokens"]
        verifies = spec["drafts"]
    span = max((r.end for r in records), default=0.0)
    return {
        "messages": len(records),
        "status": dict(Counter(r.status for r in records)),
        "errors": sum(r.status == "error" for r in records),
        "timeouts": sum(r.status == "timeout" for r in records),
        "latency_s": _dist(lat),
        "share_under_15s": sum(x < SLA_S for x in lat) / max(len(records), 1),
        "ttft_s": _dist(ttft),
        "first_token_s": _dist(
            [r.first_token - r.arrival for r in served if r.first_token is not None]
        ),
        "queue_s": _dist([r.queue_s for r in served]),
        "model_calls_per_turn": len(calls) / max(len(records), 1),
        "mean_batch": sum(c.batch for c in calls) / max(len(calls), 1),
        "decode_tok_s": after_first / row_decode if row_decode > 0 else float("nan"),
        "new_tokens": sum(c.new_tokens for c in calls),
        "compile_s_excluded": sum(c.compile_s for c in calls),
        "throughput_tok_s": sum(c.new_tokens for c in calls) / span if span else 0.0,
        "time_split": {k: v / whole if whole else 0.0 for k, v in split.items()},
        "mtp_acceptance_rate": accepted / proposed if proposed else None,
        "mtp_mean_accepted_length": 1.0 + accepted / verifies if verifies else None,
        "errors_sample": [r.error for r in records if r.error][:5],
    }


COLUMNS = (
    ("backend", "{}"), ("concurrency", "{}"), ("messages", "{}"),
    ("P50 s", "{:.3f}"), ("P95 s", "{:.3f}"), ("P99 s", "{:.3f}"),
    ("<15 s", "{:.1%}"), ("TTFT P50 s", "{:.3f}"), ("decode tok/s", "{:.1f}"),
    ("model/tools/hooks/queue", "{}"), ("MTP acc.", "{}"), ("acc. len", "{}"),
    ("errors", "{}"),
)  # fmt: skip


def table_row(label: str, concurrency: int, s: dict[str, Any]) -> list[str]:
    split = s["time_split"]
    parts = "/".join(f"{split[k]:.0%}" for k in ("model", "tools", "hooks", "queue"))
    acc, length = s["mtp_acceptance_rate"], s["mtp_mean_accepted_length"]
    values = [
        label, concurrency, s["messages"], s["latency_s"]["p50"],
        s["latency_s"]["p95"], s["latency_s"]["p99"], s["share_under_15s"],
        s["ttft_s"]["p50"], s["decode_tok_s"], parts,
        "-" if acc is None else f"{acc:.3f}",
        "-" if length is None else f"{length:.2f}",
        s["errors"] + s["timeouts"],
    ]  # fmt: skip
    return [fmt.format(v) for (_, fmt), v in zip(COLUMNS, values)]


def markdown_table(rows: Sequence[list[str]]) -> str:
    head = [c for c, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot_cdf(curves: dict[str, Sequence[float]], path: str | Path) -> Path:
    """Latency CDFs, one curve per label, with the 15 s line (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in curves.items():
        xs = sorted(values)
        if xs:
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=label)
    ax.axvline(SLA_S, color="grey", linestyle="--", linewidth=1, label="15 s")
    ax.set_xlabel("end-to-end reply latency (s)")
    ax.set_ylabel("share of replies")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
