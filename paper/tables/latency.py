"""Complete-agent reply latency of the HAT run per MTP head and concurrency.

Reads the HAT run's replay (the sweep driver's ``replay`` step)::

    ROOT/<run>/replay/              (else run.json's stage "replay", else
                                    config.json's step_folders["replay"])
        trace.jsonl                 the trace; its first line is the header
        <head>/replay.json          `hat replay`'s output: per concurrency level
                                    {"concurrency", "summary": {latency_s,
                                    share_under_15s, ttft_s, decode_tok_s,
                                    mtp_acceptance_rate, ...}}

A head without a ``replay.json`` (skipped: no MTP head) has no rows; without
any replay the table shows "–" rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from hat_jax.jsonl import read_json
from paper.render import MISSING, RULE, Table
from paper.results import Run, Sweep
from paper.tables.registry import register, skipped_note

# head folder -> row label, in table order (experiments.driver.hat_pipeline)
HEADS = {
    "mtp_off": "MTP off",
    "co_trained": "co-trained head",
    "base_head": "base head",
    "standalone": "standalone head (fitted on HAT)",
}
OFF = "mtp_off"
LEVELS = (1, 4, 8)  # the rows shown when there is no replay
# The paper's figures (PAPER.md, latency): label, concurrency, then the columns
# P50, P95, P99, share < 15 s (%), TTFT P50, decode tok/s, acceptance, mean
# accepted length, speed-up; None where the report gives nothing.
PAPER = (
    ("paper: MTP off", None, None, None, None, None, None, 216.0, None, None, None),
    ("paper: co-trained head", None)
    + (3.407, 8.114, None, 100.0, None, 271.4, 0.780, 3.12, 1.69),
    ("paper: co-trained head", 4) + (None,) * 8 + (1.27,),
    ("paper: co-trained head", 8) + (None,) * 8 + (1.19,),
    ("paper: base head", None) + (None,) * 6 + (0.735, 2.94, 1.11),
)
HEADER = [
    "MTP",
    "concurrency",
    "P50 s",
    "P95 s",
    "P99 s",
    "< 15 s (%)",
    "TTFT P50 s",
    "decode tok/s",
    "MTP acceptance",
    "mean acc. length",
    "speed-up",
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


def read_replays(folder: Path | None) -> tuple[dict[str, dict[int, dict]], dict]:
    """(head -> concurrency -> the replay summary, head -> drafts per step),
    for the heads in ``HEADS``."""
    out: dict[str, dict[int, dict]] = {}
    drafts: dict[str, int] = {}
    for head in HEADS:
        path = None if folder is None else folder / head / "replay.json"
        if path is not None and path.exists():
            result = read_json(path)
            out[head] = {int(r["concurrency"]): r["summary"] for r in result["runs"]}
            drafts[head] = int((result.get("options") or {}).get("mtp_k") or 0)
    return out, drafts


def _trace_header(folder: Path | None) -> dict:
    path = None if folder is None else folder / "trace.jsonl"
    if path is None or not path.exists():
        return {}
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())


def _head_status(folder: Path | None) -> dict[str, str]:
    """Head -> status from the replay step's config.json ("done", "skipped: ...")."""
    path = None if folder is None else folder / "config.json"
    if path is None or not path.exists():
        return {}
    heads = read_json(path).get("heads") or {}
    return {k: str(v.get("status", "")) for k, v in heads.items()}


def _row(label: str, c: int, s: dict, off: dict | None) -> list[str]:
    lat, acc = s["latency_s"], s.get("mtp_acceptance_rate")
    speed = None
    if off is not None and s is not off:
        base = off.get("decode_tok_s")
        if base and not math.isnan(base) and not math.isnan(s["decode_tok_s"]):
            speed = s["decode_tok_s"] / base
    return [
        label,
        str(c),
        _num(lat["p50"], "{:.3f}"),
        _num(lat["p95"], "{:.3f}"),
        _num(lat["p99"], "{:.3f}"),
        _num(100 * s["share_under_15s"], "{:.1f}"),
        _num(s["ttft_s"]["p50"], "{:.3f}"),
        _num(s["decode_tok_s"], "{:.1f}"),
        _num(acc, "{:.3f}"),
        _num(s.get("mtp_mean_accepted_length"), "{:.2f}"),
        _num(speed, "{:.2f}×"),
    ]


def _paper_rows() -> list[list[str]]:
    fmts = ("{:.3f}", "{:.3f}", "{:.3f}", "{:.1f}", "{:.3f}", "{:.1f}", "{:.3f}")
    rows = []
    for label, c, *vals in PAPER:
        cells = [_num(v, f) for v, f in zip(vals, fmts + ("{:.2f}", "{:.2f}×"))]
        rows.append([label, MISSING if c is None else str(c), *cells])
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
            rows += [[HEADS[head], str(c)] + [MISSING] * 9 for c in LEVELS]
    rows += [RULE, *_paper_rows()]
    h = _trace_header(folder)
    trace = (
        f"{h['n_messages']} messages of a {h['arrivals']} trace over {h['rooms']} "
        f"rooms at {h['rate']:g}/s"
        if h
        else "no replay found"
    )
    notes = [
        "Speed-up: decode tok/s over MTP off's at the same concurrency. The "
        "paper's 1.69× is not the ratio of its two decode rates (271.4 / 216 = "
        "1.26); it does not say how it is measured, nor the concurrency of its "
        "single-level figures.",
        "MTP acceptance: accepted over proposed draft tokens; mean accepted "
        "length: 1 + accepted drafts per verify step, at most 1 + the drafts per "
        "step (the paper's 3.12 implies 3 or more).",
        "The paper also reports a large API model: P50 above 11 s, 29–39 % of "
        "replies over 15 s.",
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
