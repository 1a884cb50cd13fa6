"""A synthetic latency replay in the sweep driver's ``replay`` step layout:
two MTP heads at concurrency 1, 4 and 8, the co-trained head skipped."""

import dataclasses
import json
from pathlib import Path

import numpy as np

from serving.metrics import summarize
from serving.policies import CallStats
from serving.schedule import TurnRecord


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


REPLAY_LEVELS = (1, 4, 8)
# head -> (drafts per step, decode seconds per token)
REPLAY_HEADS = {"mtp_off": (0, 0.010), "standalone": (1, 0.008)}


def _turns(rng, k: int, per_token: float, c: int) -> list[TurnRecord]:
    """Turn records of a synthetic replay (``serving.schedule.TurnRecord``)."""
    turns = []
    for i in range(12):
        arrival = 2.0 * i
        start = arrival + rng.random() * 0.2 * c
        calls = []
        for _ in range(1 + i % 3):
            new = 40 + int(rng.integers(0, 40))
            proposed = k * (new // 2)
            calls.append(
                CallStats(
                    batch=1,
                    wall_s=0.5 + per_token * new,
                    ttft_s=[0.2 + 0.05 * c * rng.random()],
                    row_decode_s=per_token * (new - 1) * (1 + 0.1 * c),
                    new_tokens=new,
                    drafts_proposed=proposed,
                    drafts_accepted=int(proposed * (0.5 + 0.3 * rng.random())),
                    row_verifies=new // 2 if k else 0,
                )
            )
        model_s = sum(x.wall_s for x in calls)
        rec = TurnRecord(
            i,
            f"s{i % 2}",
            arrival,
            start,
            start + model_s + 0.1,
            "ok" if i % 4 else "failed",
            model_s=model_s,
            reply=f"reply {i % 5}",
            first_token=start + calls[0].ttft_s[0],
            calls=calls,
        )
        turns.append(rec)
    if c == 8:  # one slow reply, beyond the 15 s SLA
        turns[-1].end = turns[-1].arrival + 16.0
    return turns


def _turn(r: TurnRecord) -> dict:
    return {**dataclasses.asdict(r), "latency": r.latency, "queue_s": r.queue_s}


def write_replay(folder: Path) -> None:
    """A replay step's folder: trace header, config.json, per head replay.json."""
    header = {"kind": "trace", "version": 1, "arrivals": "poisson", "rate": 0.5,
              "seed": 0, "n_messages": 12, "rooms": 2, "split": "test",
              "messages_per_room": 6}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace.jsonl").write_text(json.dumps(header) + "\n")
    heads = {"co_trained": {"status": "skipped: the model has no MTP head"}}
    for j, (head, (k, per_token)) in enumerate(REPLAY_HEADS.items()):
        heads[head] = {"status": "done", "mtp": k}
        runs = []
        for c in REPLAY_LEVELS:
            recs = _turns(np.random.default_rng([j, c]), k, per_token, c)
            runs.append({"concurrency": c, "summary": summarize(recs),
                         "spec_counters": None,
                         "turns": [_turn(r) for r in recs]})  # fmt: skip
        options = {"max_new_tokens": 96, "mtp_k": k, "label": head}
        result = {"backend": "embedded", "options": options, "clock": "virtual"}
        _write_json(folder / head / "replay.json", {**result, "runs": runs})
    _write_json(folder / "config.json", {"heads": heads, "trace_header": header})
