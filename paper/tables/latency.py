"""Complete-agent reply latency of the HAT run per MTP head and concurrency.

Reads the HAT run's replay (the sweep driver's ``replay`` step)::

    ROOT/<run>/replay/              (else run.json's stage "replay", else
                                    config.json's step_folders["replay"])
        trace.jsonl                 the trace; its first line is the header
        <head>/replay.json          `hat replay`'s output: per concurrency level
                                    {"concurrency", "summary": {reply_rate,
                                    latency_s, share_under_15s, ttft_s,
                                    decode_tok_s, mtp_acceptance_rate, ...}}

Latency percentiles cover the answered turns only (``serving.metrics``: status
"ok"); the reply rate is answered / messages and a row below ``REPLY_FLOOR`` is
flagged "(!)"; goodput (``share_under_15s``) is the share of all messages
answered within 15 s.

A head without a ``replay.json`` (skipped: no MTP head) has no rows; without
any replay the table shows "–" rows.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from hat_jax.jsonl import DataError, field, parse_line, read_json
from hat_jax.printable import shown
from paper.checks import NONE, count, expect_object, label, number, objects, to_float
from paper.render import MISSING, RULE, Table
from paper.reported import MTP_ACCEPTANCE as ACCEPT
from paper.results import Run, Sweep
from paper.tables.registry import register, skipped_note
from serving import repeats

# head folder -> row label, in table order (experiments.driver.hat_pipeline)
HEADS = {
    "mtp_off": "MTP off",
    "co_trained": "co-trained head",
    "base_head": "base head",
    "standalone": "standalone head (fitted on HAT)",
}
OFF = "mtp_off"
MAX_HEADER = 1 << 20  # bytes of the trace's header line
# replay summary key -> its sub-keys (none: a number), each a number or null
SUMMARY = {
    "reply_rate": (),  # absent in replays written before it was recorded
    "latency_s": ("p50", "p95", "p99"),
    "share_under_15s": (),
    "ttft_s": ("p50",),
    "decode_tok_s": (),
    "mtp_acceptance_rate": (),
    "mtp_mean_accepted_length": (),
}
SHARES = ("reply_rate", "share_under_15s", "mtp_acceptance_rate")  # in [0, 1]
LEVELS = (1, 4, 8)  # the rows shown when there is no replay
SPREAD_KEYS = ("p50", "p95", "p99", "goodput")  # shown with [lo, hi] (repeats)
REPLY_FLOOR = 0.95  # serving.metrics.REPLY_FLOOR: rows answering less are flagged
FLAG = " (!)"
# The paper's figures (PAPER.md, latency): label, concurrency, then the columns
# P50, P95, P99, share < 15 s (%), TTFT P50, decode tok/s, acceptance, mean
# accepted length, speed-up; None where the report gives nothing. The paper
# gives no reply rate (its column reads "–"), and its share < 15 s is of its
# replies: it is shown as goodput.
PAPER = (
    ("paper: MTP off", None, None, None, None, None, None, 216.0, None, None, None),
    ("paper: co-trained head", None)
    + (3.407, 8.114, None, 100.0, None, 271.4, ACCEPT["co-trained"], 3.12, 1.69),
    ("paper: co-trained head", 4) + (None,) * 8 + (1.27,),
    ("paper: co-trained head", 8) + (None,) * 8 + (1.19,),
    ("paper: base head", None) + (None,) * 6 + (ACCEPT["base head"], 2.94, 1.11),
)
HEADER = [
    "MTP",
    "concurrency",
    "replies (%)",
    "P50 s",
    "P95 s",
    "P99 s",
    "goodput (%)",
    "TTFT P50 s",
    "decode tok/s",
    "MTP acceptance",
    "mean acc. length",
    "speed-up",
    "distinct replies",
]


def _num(x, fmt: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return fmt.format(x)


def replay_folder(run: Run) -> Path | None:
    """The run's replay folder: ROOT/<run>/replay, else its "replay" stage in
    run.json, else the "replay" step's folder in config.json."""
    step = (run.config.get("step_folders") or {}).get("replay")
    candidates = [run.path / "replay", run.stages().get("replay")]
    candidates.append(None if step is None else run.root / step)
    return next((p for p in candidates if p is not None and p.is_dir()), None)


def check_replay(result: Any, path: Path) -> dict:
    """A ``replay.json`` as the table reads it (``SUMMARY`` numbers or null).

    Raises:
      DataError: ``path: field 'runs[i].summary.KEY' must be ...``.
    """
    where = shown(path)
    expect_object(result, where, "a JSON object {'runs': [...], 'options'}")
    runs = field(result, "runs", where, list)
    for i, r in enumerate(runs):
        name = f"runs[{i}]"
        expect_object(r, where, f"{name} to be an object")
        c = field(r, "concurrency", where, int, label=f"{name}.concurrency")
        if c < 1:
            raise DataError(f"{where}: field '{name}.concurrency' must be >= 1")
        summary = field(r, "summary", where, dict, label=f"{name}.summary")
        for key, subs in SUMMARY.items():
            at = f"{name}.summary.{key}"
            if not subs:
                x = number(summary, key, where, at)
                if key in SHARES and x is not None and not 0 <= x <= 1:  # NaN too
                    raise DataError(f"{where}: field '{at}' must be in [0, 1], got {x}")
                continue
            block = field(summary, key, where, dict, label=at)
            for sub in subs:
                number(block, sub, where, f"{at}.{sub}")
        _check_repeats(summary, where, f"{name}.summary.repeats")
    options = field(result, "options", where, (dict, NONE), default=None) or {}
    count(options, "mtp_k", where, "options.mtp_k")
    return result


def _check_repeats(summary: dict, where: str, at: str) -> None:
    """A summary's ``repeats`` block (`serving.repeats`), when it has one: ``n``
    a count >= 1, each shown interval null or [lo, hi] numbers with 0 <= lo <=
    hi (hi may be inf: a repeat that answered nothing)."""
    block = field(summary, "repeats", where, (dict, NONE), default=None, label=at)
    if block is None:
        return
    n = count(block, "n", where, f"{at}.n")
    if n is None or n < 1:
        raise DataError(f"{where}: field '{at}.n' must be a count >= 1")
    iv = field(block, "interval", where, (dict, NONE), default=None, label=at)
    for key in SPREAD_KEYS:
        x = (iv or {}).get(key)
        if x is None:
            continue
        name = f"{at}.interval.{key}"
        if not (isinstance(x, list) and len(x) == 2):
            raise DataError(f"{where}: field '{name}' must be [lo, hi] or null")
        lo, hi = (to_float(v, where, name) for v in x)
        bad = lo is None or hi is None or math.isnan(lo) or math.isnan(hi)
        if bad or not 0 <= lo <= hi:
            raise DataError(
                f"{where}: field '{name}' must be two numbers with 0 <= lo <= hi"
            )


def read_replays(folder: Path | None) -> tuple[dict[str, dict[int, dict]], dict]:
    """(head -> concurrency -> the replay summary, head -> drafts per step),
    for the heads in ``HEADS``."""
    out: dict[str, dict[int, dict]] = {}
    drafts: dict[str, int] = {}
    for head in HEADS:
        path = None if folder is None else folder / head / "replay.json"
        if path is not None and path.exists():
            result = check_replay(read_json(path), path)
            out[head] = {int(r["concurrency"]): r["summary"] for r in result["runs"]}
            drafts[head] = int((result.get("options") or {}).get("mtp_k") or 0)
    return out, drafts


def _trace_header(folder: Path | None) -> dict:
    """The trace's first line: ``n_messages``, ``arrivals``, ``rooms``, ``rate``."""
    path = None if folder is None else folder / "trace.jsonl"
    if path is None or not path.exists():
        return {}
    where = f"{shown(path)}:1"
    with path.open("rb") as f:
        line = f.readline(MAX_HEADER + 1)
    if len(line) > MAX_HEADER:
        raise DataError(f"{where}: header line longer than {MAX_HEADER} bytes")
    h = expect_object(parse_line(line, where), where, "a JSON object (the header)")
    for key in ("n_messages", "rooms"):
        field(h, key, where, int)
    field(h, "arrivals", where, str)
    if to_float(field(h, "rate", where, float), where, "rate") is None:
        raise DataError(f"{where}: field 'rate' must be a number")
    return {**h, "arrivals": shown(h["arrivals"])}


def _head_status(folder: Path | None) -> dict[str, str]:
    """Head -> status from the replay step's config.json ("done", "skipped: ...")."""
    path = None if folder is None else folder / "config.json"
    if path is None or not path.exists():
        return {}
    where = shown(path)
    config = expect_object(read_json(path), where, "a JSON object")
    heads = objects(config, "heads", where, "heads")
    for k, v in heads.items():
        field(v, "status", where, str, default="", label=label("heads", k, "status"))
    return {k: shown(v.get("status", "")) for k, v in heads.items()}


def _row(name: str, c: int, s: dict, off: dict | None) -> list[str]:
    lat, acc = s["latency_s"], s.get("mtp_acceptance_rate")
    speed, tok = None, s.get("decode_tok_s")
    if off is not None and s is not off:
        base = off.get("decode_tok_s")
        if base and tok is not None and not math.isnan(base) and not math.isnan(tok):
            speed = tok / base
    share, rate = s.get("share_under_15s"), s.get("reply_rate")
    reply = _num(None if rate is None else 100 * rate, "{:.1f}")
    if rate is not None and not math.isnan(rate) and rate < REPLY_FLOOR:
        reply += FLAG
    spread = functools.partial(repeats.suffix, s)  # " [lo, hi]" over repeats
    return [
        name,
        str(c),
        reply,
        _num(lat.get("p50"), "{:.3f}") + spread("p50", 1, "{:.3f}"),
        _num(lat.get("p95"), "{:.3f}") + spread("p95", 1, "{:.3f}"),
        _num(lat.get("p99"), "{:.3f}") + spread("p99", 1, "{:.3f}"),
        _num(None if share is None else 100 * share, "{:.1f}")
        + spread("goodput", 100, "{:.1f}"),
        _num(s["ttft_s"].get("p50"), "{:.3f}"),
        _num(tok, "{:.1f}"),
        _num(acc, "{:.3f}"),
        _num(s.get("mtp_mean_accepted_length"), "{:.2f}"),
        _num(speed, "{:.2f}×"),
        _num(s.get("distinct_replies"), "{:d}"),
    ]


def _paper_rows() -> list[list[str]]:
    fmts = ("{:.3f}", "{:.3f}", "{:.3f}", "{:.1f}", "{:.3f}", "{:.1f}", "{:.3f}")
    rows = []
    for name, c, *vals in PAPER:
        cells = [_num(v, f) for v, f in zip(vals, fmts + ("{:.2f}", "{:.2f}×"))]
        c = MISSING if c is None else str(c)
        rows.append([name, c, MISSING, *cells, MISSING])  # no distinct replies
    return rows


@register("latency")
def latency_table(sweep: Sweep) -> Table:
    run = sweep.pipeline("hsa", True, True)
    folder = replay_folder(run) if run is not None else None
    replays, drafts = read_replays(folder)
    rows: list[list[str] | None] = []
    off = replays.get(OFF, {})
    for head, by_c in replays.items():
        for c, s in sorted(by_c.items()):
            rows.append(_row(HEADS[head], c, s, off.get(c)))
    if not replays:
        for head in (OFF, "co_trained"):
            rows += [[HEADS[head], str(c)] + [MISSING] * 11 for c in LEVELS]
    rows += [RULE, *_paper_rows()]
    h = _trace_header(folder)
    trace = (
        f"{h['n_messages']} messages of a {h['arrivals']} trace over {h['rooms']} "
        f"rooms at {h['rate']:g}/s"
        if h
        else "no replay found"
    )
    notes = [
        "Replies: messages whose turn ended with a reply that passed the reply "
        "hooks (status ok), of all messages. P50/P95/P99 cover these answered "
        "turns only; goodput is the share of all messages answered within 15 s "
        "(a failed turn counts as not served); TTFT is per model call.",
    ]
    flagged = [f"{r[0]} c={r[1]}" for r in rows if r and r[2].endswith(FLAG)]
    if flagged:
        notes.append(
            f"(!) answered fewer than {REPLY_FLOOR:.0%} of its messages; its "
            f"percentiles leave the unanswered ones out: {', '.join(flagged)}."
        )
    n = {
        (s.get("repeats") or {}).get("n", 1)
        for b in replays.values()
        for s in b.values()
    }
    if n - {1}:
        notes.append(
            "x [lo, hi]: the median over the level's repeated replays "
            f"({'/'.join(map(str, sorted(n)))} repeats) and their least and greatest "
            "value; with R repeats [lo, hi] holds the median of the repeat "
            "distribution with probability 1 - 2^(1-R) (93.8 % at 5)."
        )
    elif replays:
        notes.append(
            "One replay per level: on the virtual clock the batches calls meet in "
            "depend on measured times, and one replay can differ from the next "
            "many-fold (docs/results/measurements.md); rerun with repeats."
        )
    if any("reply_rate" not in s for by_c in replays.values() for s in by_c.values()):
        notes.append(
            "Rows with no reply rate come from a replay written before it was "
            "recorded: their percentiles and share cover every turn that did not "
            "raise, answered or not."
        )
    notes += [
        "Speed-up: decode tok/s over MTP off's at the same concurrency. The "
        "paper's 1.69× is not the ratio of its two decode rates (271.4 / 216 = "
        "1.26); it does not say how it is measured, nor the concurrency of its "
        "single-level figures.",
        "Distinct replies: how many different replies the answered turns gave "
        "(a model that answers every message alike drafts the same tokens each "
        "turn, and its acceptance says little about the head).",
        "MTP acceptance: accepted over proposed draft tokens; mean accepted "
        "length: 1 + accepted drafts per verify step, at most 1 + the drafts per "
        "step (the paper's 3.12 implies 3 or more).",
        "The paper gives no reply rate; its goodput is its share of replies "
        "under 15 s. It also reports a large API model: P50 above 11 s, 29–39 % "
        "of replies over 15 s.",
    ]
    k = [f"{HEADS[h]} {n}" for h, n in drafts.items() if n]
    if k:
        notes.append(f"Drafts per step: {', '.join(k)}.")
    if run is not None and not replays:
        notes.append(f"The run {run.name} has no replay.")
    for head, status in _head_status(folder).items():
        if head in HEADS and head not in replays:
            notes.append(f"{HEADS[head]}: {status}.")
    if replays and "base_head" not in replays:
        notes.append("Base head (the base checkpoint's head): not measured.")
    return Table(
        name="latency",
        title="Reply latency and MTP speculative decoding",
        caption=(
            f"Ours at {sweep.scale_note()}. The HAT run's complete-agent replay "
            f"({trace}), embedded JAX backend on CPU, virtual clock; reply "
            "latency from arrival to the end of the turn, TTFT per model call. "
            "Paper: vLLM on one H20, MTP on (PAPER.md)."
        ),
        header=HEADER,
        rows=rows,
        notes=[*notes, *skipped_note(sweep)],
    )
