"""Latency statistics of a replay: percentiles, goodput, the table and the CDF.

Definitions follow ``vllm bench serve`` (``vllm/benchmarks/serve.py``) and
MLPerf's server scenario, with a turn of the agent loop as the request.

Which turns count. A turn is *answered* when its status is ``"ok"``: the agent
loop ended with a reply that passed every reply hook (``hat_jax.harness.loop``
sets ``"ok"`` only there). ``"failed"`` (an input hook stopped the message, or
the retries ran out; its ``reply`` may hold the last *rejected* one),
``"turn_limit"`` (the model-call budget ran out), ``"error"`` and ``"timeout"``
(a model call raised; ``serving.schedule``) have no reply. Like vLLM's failed
requests they are counted (``status``, ``answered``, ``reply_rate``) and left
out of every latency statistic, and they count as not served in ``goodput``.

Per message (``messages``: all of them):

- ``answered``: turns with status ``"ok"``; ``reply_rate`` = answered / messages.
- ``distinct_replies``: how many different replies the answered turns gave
  (one degenerate output repeated for every message gives 1: its MTP
  acceptance says little about the head).
- ``status``: how many turns ended in each status; ``errors``, ``timeouts``.
- ``goodput``: share of *all* messages answered within the SLO (end-to-end
  latency <= ``slo_s``, 15 s by default as in the paper; ``<=`` as vLLM's
  ``--goodput``). ``goodput_rps``: those messages per second of replay span
  (vLLM's request goodput). ``share_under_15s``: goodput at 15 s whatever
  ``slo_s`` is (the key older readers use; equal to ``goodput`` by default).

Per answered turn (nan when none; distributions give p50/p95/p99, mean, max):

- ``latency_s``: end-to-end, from the message's arrival to the end of its turn
  (queueing for a slot included). The CDF plot draws the same values.
- ``first_token_s``: arrival to the first token of the turn's first model call.
- ``queue_s``: arrival to a slot taking the turn.
- ``time_split``: the answered turns' time shared among queue, model, tools,
  hooks and other (the rest of the latency); the shares sum to 1.

Per model call (every call that returned, whatever its turn's status: a call is
what vLLM calls a request; a call that raised is not recorded; a batched call
shared by several turns counts once, ``unique_calls``):

- ``ttft_s``: per row, prefill (embedded) or the first streamed chunk.
- ``tpot_s``: time per output token after the first, one value per call:
  ``row_decode_s / (new_tokens - batch)``, i.e. the rows' decode time (after
  each row's first token) summed over the call's rows, over the tokens after
  each row's first. For a one-row call that is vLLM's TPOT,
  ``(latency - ttft) / (output_len - 1)``; a batched call records only these
  totals, so its value is the row-weighted mean over its rows (embedded: each
  row is charged the batch's whole decode time, as the batch holds it). Calls
  with no token after the first are left out.
- ``decode_tok_s``: the pooled inverse: all tokens after each row's first over
  all rows' decode time.
- ``prefix_cache_hit_rate``: prompt tokens served from the prefix cache over
  all prompt tokens (vLLM's ``prefix_cache_hits / prefix_cache_queries``);
  ``cached_tokens`` and ``prompt_tokens`` are the two sums. Embedded only
  (None when no call counted prompt tokens; 0 with reuse off, or MTP on a hybrid).
- ITL (inter-token latency) is not reported: neither backend records the time
  of each token (the embedded sampler reports chunks of 16 steps; the endpoint
  policy keeps only the first chunk's time).

MTP (vLLM's definitions, ``vllm/v1/spec_decode/metrics.py``): a *draft* is one
row's verify step (its k draft tokens); a draft token is accepted only when
every one before it in the draft was (the accepted prefix).
``mtp_acceptance_rate`` = accepted draft tokens / proposed draft tokens;
``mtp_mean_accepted_length`` = 1 + accepted draft tokens / drafts (the bonus
token included); ``mtp_acceptance_per_position`` = [drafts whose first i + 1
tokens were accepted / drafts, for i = 0..k-1] (non-increasing; the sum is
mean accepted length - 1; ``[]`` without MTP or when the endpoint exposes no
per-position counter). Summed over every call (embedded sampler) or read from
the endpoint's counters (``serving.prom``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from serving import cpuload, repeats
from serving.schedule import TurnRecord

SLA_S = 15.0
PCTS = (50, 95, 99)
ANSWERED = "ok"  # the one status with a reply (module docstring)
REPLY_FLOOR = 0.95  # table rows that answered less are flagged
FLAG = " (!)"
BUSY = " (busy)"  # other processes used > cpuload.BUSY_FLAG cores meanwhile
# (column, repeats key, scale, format) of the cells given a [min, max] interval
SPREAD = (
    ("P50 s", "p50", 1, "{:.3f}"),
    ("P95 s", "p95", 1, "{:.3f}"),
    ("P99 s", "p99", 1, "{:.3f}"),
    ("goodput", "goodput", 100, "{:.1f}"),
    ("decode tok/s", "decode_tok_s", 1, "{:.1f}"),
)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (numpy's linear interpolation); nan when empty."""
    return float(np.percentile(values, q)) if len(values) else float("nan")


def _dist(values: Sequence[float]) -> dict[str, float]:
    out = {f"p{q}": percentile(values, q) for q in PCTS}
    out["mean"] = sum(values) / len(values) if values else float("nan")
    out["max"] = max(values) if values else float("nan")
    return out


def answered(records: Sequence[TurnRecord]) -> list[TurnRecord]:
    """The turns that ended with a reply (status ``"ok"``)."""
    return [r for r in records if r.status == ANSWERED]


def answered_latencies(records: Sequence[TurnRecord]) -> list[float]:
    """End-to-end latencies of the answered turns: what the CDF draws."""
    return [r.latency for r in answered(records)]


def unique_calls(records: Sequence[TurnRecord]) -> list:
    """Every model call once, in order of first appearance. A batched call is
    recorded by each turn whose rows it carried (the same `CallStats` object:
    ``serving.schedule``); counting it per turn would multiply its tokens,
    rows' TTFTs and drafts by its batch."""
    return list({id(c): c for r in records for c in r.calls}.values())


def summarize(
    records: Sequence[TurnRecord], spec: dict | None = None, *, slo_s: float = SLA_S
) -> dict:
    """The replay's metrics (module docstring) as a flat-ish JSON-able dict.

    Args:
      records: one per message.
      spec: MTP acceptance counts from elsewhere (an endpoint's ``/metrics``):
        ``{"drafts": ..., "draft_tokens": ..., "accepted_tokens": ...}`` and
        optionally ``"accepted_per_pos": [...]``; None: summed from the
        embedded sampler's per-call counts.
      slo_s: the end-to-end latency SLO of ``goodput`` (seconds).
    """
    ok = answered(records)
    lat = [r.latency for r in ok]
    n = max(len(records), 1)
    calls = unique_calls(records)
    ttft = [t for c in calls for t in c.ttft_s]
    tpot = [c.row_decode_s / (c.new_tokens - c.batch) for c in calls
            if c.new_tokens > c.batch]  # fmt: skip
    after_first = sum(c.new_tokens - c.batch for c in calls)
    row_decode = sum(c.row_decode_s for c in calls)
    split = {
        "queue": sum(r.queue_s for r in ok),
        "model": sum(r.model_s for r in ok),
        "tools": sum(r.tools_s for r in ok),
        "hooks": sum(r.hooks_s for r in ok),
    }
    split["other"] = max(sum(lat) - sum(split.values()), 0.0)
    # The parts come from more than one clock (the virtual clock counts host
    # CPU time, the harness's tool and hook timings wall time), so on a loaded
    # machine they can add up to more than the latency: shares of their own sum
    # then. Either way the shares sum to 1 by construction.
    whole = sum(split.values())
    if spec is None:
        proposed = sum(c.drafts_proposed for c in calls)
        accepted = sum(c.drafts_accepted for c in calls)
        drafts = sum(c.row_verifies for c in calls)
        per_pos = _sum_per_pos([c.accepted_per_pos for c in calls])
    else:
        proposed, accepted = spec["draft_tokens"], spec["accepted_tokens"]
        drafts, per_pos = spec["drafts"], list(spec.get("accepted_per_pos", ()))
    span = max((r.end for r in records), default=0.0)
    prompt = sum(c.prompt_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    good = sum(x <= slo_s for x in lat)
    return {
        "messages": len(records),
        "answered": len(ok),
        "reply_rate": len(ok) / n,
        "distinct_replies": len({r.reply for r in ok}),
        "status": dict(Counter(r.status for r in records)),
        "errors": sum(r.status == "error" for r in records),
        "timeouts": sum(r.status == "timeout" for r in records),
        "slo_s": slo_s,
        "goodput": good / n,
        "goodput_rps": good / span if span > 0 else 0.0,
        "share_under_15s": sum(x <= SLA_S for x in lat) / n,
        "latency_s": _dist(lat),
        "ttft_s": _dist(ttft),
        "tpot_s": _dist(tpot),
        "first_token_s": _dist(
            [r.first_token - r.arrival for r in ok if r.first_token is not None]
        ),
        "queue_s": _dist([r.queue_s for r in ok]),
        # the turns' own calls (a batched call is one call of each of its turns)
        "model_calls_per_turn": sum(len(r.calls) for r in records) / n,
        "mean_batch": sum(c.batch for c in calls) / max(len(calls), 1),
        "decode_tok_s": after_first / row_decode if row_decode > 0 else float("nan"),
        "new_tokens": sum(c.new_tokens for c in calls),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "prefix_cache_hit_rate": cached / prompt if prompt else None,
        "compile_s_excluded": sum(c.compile_s for c in calls),
        "throughput_tok_s": sum(c.new_tokens for c in calls) / span if span else 0.0,
        "time_split": {k: v / whole if whole else 0.0 for k, v in split.items()},
        "mtp_acceptance_rate": accepted / proposed if proposed else None,
        "mtp_mean_accepted_length": 1.0 + accepted / drafts if drafts else None,
        "mtp_acceptance_per_position": [a / drafts for a in per_pos] if drafts else [],
        "errors_sample": [r.error for r in records if r.error][:5],
    }


def _sum_per_pos(counts: Sequence[Sequence[int]]) -> list[int]:
    """Position-wise sums; a shorter list (fewer drafts per step) adds 0."""
    out = [0] * max(map(len, counts), default=0)
    for c in counts:
        for i, a in enumerate(c):
            out[i] += a
    return out


COLUMNS = (
    ("backend", "{}"), ("concurrency", "{}"), ("messages", "{}"),
    ("replies", "{}"), ("distinct", "{}"), ("P50 s", "{:.3f}"), ("P95 s", "{:.3f}"),
    ("P99 s", "{:.3f}"), ("goodput", "{:.1%}"), ("TTFT P50 s", "{:.3f}"),
    ("TPOT P50 ms", "{:.2f}"), ("decode tok/s", "{:.1f}"),
    ("model/tools/hooks/queue", "{}"), ("MTP acc.", "{}"), ("acc. len", "{}"),
    ("acc. per pos.", "{}"), ("errors", "{}"),
)  # fmt: skip


def reply_cell(rate: float) -> str:
    """The reply rate as a percentage, flagged " (!)" below ``REPLY_FLOOR``."""
    return f"{rate:.1%}" + (FLAG if rate < REPLY_FLOOR else "")


def table_row(label: str, concurrency: int, s: dict[str, Any]) -> list[str]:
    split = s["time_split"]
    parts = "/".join(f"{split[k]:.0%}" for k in ("model", "tools", "hooks", "queue"))
    acc, length = s["mtp_acceptance_rate"], s["mtp_mean_accepted_length"]
    per_pos = s.get("mtp_acceptance_per_position") or []
    values = [
        label, concurrency, s["messages"], reply_cell(s["reply_rate"]),
        s.get("distinct_replies", "-"),
        s["latency_s"]["p50"], s["latency_s"]["p95"], s["latency_s"]["p99"],
        s["goodput"], s["ttft_s"]["p50"], 1000 * s["tpot_s"]["p50"], s["decode_tok_s"],
        parts, "-" if acc is None else f"{acc:.3f}",
        "-" if length is None else f"{length:.2f}",
        "/".join(f"{a:.2f}" for a in per_pos) or "-", s["errors"] + s["timeouts"],
    ]  # fmt: skip
    cells = [fmt.format(v) for (_, fmt), v in zip(COLUMNS, values)]
    for column, name, scale, fmt in SPREAD:  # [min, max] over the repeats
        cells[[c for c, _ in COLUMNS].index(column)] += repeats.suffix(
            s, name, scale, fmt
        )
    block = s.get("repeats") or {}
    busy = [x for x in (block.get("values") or {}).get("foreign_cpu_cores", ())
            if isinstance(x, float)]  # fmt: skip
    if busy and max(busy) > cpuload.BUSY_FLAG:
        cells[0] += BUSY
    return cells


def table_notes(rows: Sequence[list[str]], slo_s: float = SLA_S) -> list[str]:
    """The footnotes under the table: what the columns cover, and the flagged rows."""
    notes = [
        "Percentiles (P50/P95/P99) cover answered turns only (status ok: a "
        f"reply that passed the reply hooks); goodput is the share of all "
        f"messages answered within {slo_s:g} s; TTFT and TPOT are per model call; "
        "distinct: how many different replies the answered turns gave."
    ]
    reply = [c for c, _ in COLUMNS].index("replies")
    flagged = [f"{r[0]} c={r[1]}" for r in rows if r[reply].endswith(FLAG)]
    if flagged:
        notes.append(
            f"(!) answered fewer than {REPLY_FLOOR:.0%} of its messages; its "
            f"percentiles leave the unanswered ones out: {', '.join(flagged)}."
        )
    if any(" [" in cell for r in rows for cell in r):
        notes.append(
            "x [lo, hi]: the median over the level's repeats and their least and "
            "greatest value (with R repeats [lo, hi] holds the median of the "
            "repeat distribution with probability 1 - 2^(1-R): 75 % at 3, 93.8 % "
            "at 5)."
        )
    busy = [f"{r[0].removesuffix(BUSY)} c={r[1]}" for r in rows if r[0].endswith(BUSY)]
    if busy:
        notes.append(
            f"(busy) other processes kept more than {cpuload.BUSY_FLAG:g} cores busy "
            "during a repeat: its times are not the model's alone: "
            + ", ".join(busy)
            + "."
        )
    mtp = [c for c, _ in COLUMNS].index("MTP acc.")
    if any(r[mtp] != "-" for r in rows):
        notes.append(
            "MTP (vLLM's definitions): acc. is accepted over proposed draft "
            "tokens; acc. len 1 + accepted tokens per draft (a row's verify "
            "step); acc. per pos. the share of drafts whose first 1, 2, ... "
            "tokens were all accepted."
        )
    return notes


def markdown_table(rows: Sequence[list[str]], slo_s: float = SLA_S) -> str:
    head = [c for c, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines += [""] + [f"- {n}" for n in table_notes(rows, slo_s)]
    return "\n".join(lines) + "\n"


def plot_cdf(
    curves: dict[str, Sequence[float]], path: str | Path, slo_s: float = SLA_S
) -> Path:
    """Latency CDFs of the answered turns (``answered_latencies``), one curve
    per label, with the SLO line (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in curves.items():
        xs = sorted(values)
        if xs:
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=label)
    ax.axvline(slo_s, color="grey", linestyle="--", linewidth=1, label=f"{slo_s:g} s")
    ax.set_xlabel("end-to-end reply latency (s), answered turns only")
    ax.set_ylabel("share of answered turns")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
