"""A replay level run several times: the median summary and its interval.

On the embedded backend one replay is one draw of a noisy process: model calls
are timed for real, the virtual clock decides which calls meet in a batch, and
a batch runs until its longest row ends (call-level batching,
``serving.schedule``); a few milliseconds can change which calls meet, and a
batch's greedy outputs need not equal the rows' outputs alone, so the same
trace can end up with far more tokens and queueing (docs/results/
measurements.md, "Replay repeats"). A latency is therefore reported over
``R`` repeats of the same level:

- every number of the level's summary is the **median over the repeats**
  (lists element-wise, counters key-wise; text from the first repeat);
- ``repeats``: ``n``, the per-repeat ``values`` of the key metrics (``KEYS``
  plus ``foreign_cpu_cores``, the cores other processes used: ``serving.
  cpuload``), their ``interval`` = [min, max] over the repeats, and its
  ``confidence``: for R independent repeats, [min, max] holds the median of
  the repeat distribution with probability ``1 - 2 * 0.5**R`` (75 % at 3,
  93.8 % at 5, 96.9 % at 6); None for one repeat.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

# (summary path, short name) of the metrics whose repeats are kept and shown
KEYS = (
    (("latency_s", "p50"), "p50"),
    (("latency_s", "p95"), "p95"),
    (("latency_s", "p99"), "p99"),
    (("goodput",), "goodput"),
    (("reply_rate",), "reply_rate"),
    (("decode_tok_s",), "decode_tok_s"),
    (("new_tokens",), "new_tokens"),
    (("mean_batch",), "mean_batch"),
)


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _median(values: list) -> Any:
    finite = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    if not finite:
        return float("nan")
    if all(isinstance(v, int) for v in finite):
        return statistics.median_low(finite)  # a count one repeat really had
    return float(statistics.median(finite))


def median_tree(trees: Sequence[Any]) -> Any:
    """The element-wise median of summaries of one shape (module docstring)."""
    first = trees[0]
    if all(_is_num(t) for t in trees):
        return _median(list(trees))
    if all(isinstance(t, dict) for t in trees):
        keys = list(dict.fromkeys(k for t in trees for k in t))
        counter = all(all(_is_num(v) for v in t.values()) for t in trees)
        return {
            k: median_tree([t.get(k, 0 if counter else None) for t in trees])
            for k in keys
        }
    if all(isinstance(t, list) for t in trees) and len({len(t) for t in trees}) == 1:
        if all(all(_is_num(v) for v in t) for t in trees):
            return [_median(list(col)) for col in zip(*trees)]
    return next((t for t in trees if t is not None), first)


def _get(summary: dict, path: tuple[str, ...]) -> Any:
    for part in path:
        summary = summary.get(part) if isinstance(summary, dict) else None
    return summary


def combine(summaries: Sequence[dict], foreign: Sequence[float | None]) -> dict:
    """One level's summary over its repeats (module docstring)."""
    if not summaries or len(summaries) != len(foreign):
        raise ValueError("need one foreign-CPU reading per repeat, and >= 1 repeat")
    out = median_tree(summaries)
    n = len(summaries)
    values: dict[str, list] = {
        name: [_get(s, path) for s in summaries] for path, name in KEYS
    }
    values["foreign_cpu_cores"] = list(foreign)
    interval = {}
    for name, vs in values.items():
        nums = [v for v in vs if _is_num(v) and not math.isnan(v)]
        interval[name] = [min(nums), max(nums)] if nums else None
    out["repeats"] = {
        "n": n,
        "confidence": 1 - 2 * 0.5**n if n > 1 else None,
        "values": values,
        "interval": interval,
    }
    return out


def interval(summary: dict, name: str) -> list[float] | None:
    """[min, max] of a key metric over the repeats; None for one repeat."""
    block = summary.get("repeats") if isinstance(summary, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("n"), int):
        return None
    if block["n"] < 2:
        return None
    iv = (block.get("interval") or {}).get(name)
    if not (isinstance(iv, list) and len(iv) == 2 and all(_is_num(x) for x in iv)):
        return None
    return [float(iv[0]), float(iv[1])]
