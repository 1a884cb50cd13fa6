"""A replay level run several times: the median summary and its interval.

On the embedded backend one replay is one draw of a noisy process: model calls
are timed for real, the virtual clock decides which calls meet in a batch, and
a batch runs until its longest row ends (call-level batching,
``serving.schedule``), so a slow stretch can cascade into bigger batches and
queues (docs/results/measurements.md, "Replay repeats"). A latency is therefore
reported over ``R`` repeats of the same level (each starting with no kept
prefix cache: ``serving.replay``):

- the level's summary is the **median repeat**'s (the one whose P50 is the
  median, lower of the two middle ones for even R), so its counts, statuses,
  time split and samples belong together; its ``SHOWN`` numbers (P50, P95,
  P99, goodput, decode tok/s) are replaced by their **medians over the
  repeats**;
- ``repeats``: ``n``, ``median_repeat`` (its index), the per-repeat
  ``values`` of the key metrics (``KEYS`` plus ``foreign_cpu_cores``, the cores
  other processes used: ``serving.cpuload``), their ``interval`` = [min, max]
  over the repeats, and its ``confidence``: for R independent repeats [min,
  max] holds the median of the repeat distribution with probability
  ``1 - 2 * 0.5**R`` (75 % at 3, 93.8 % at 5, 96.9 % at 6); None for one.

A repeat that answered nothing has no latency (nan in its own summary); here
it counts as infinitely slow (``inf``), so it pulls the median and the
interval up instead of leaving the repeats that did answer to speak alone.
When no repeat answered, the latencies stay nan (there is none).
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Sequence
from typing import Any

# (summary path, short name) of the metrics whose repeats are kept
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
SHOWN = ("p50", "p95", "p99", "goodput", "decode_tok_s")  # medians in the summary
LATENCY = ("p50", "p95", "p99")  # nan (nothing answered) counts as inf


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _get(summary: dict, path: tuple[str, ...]) -> Any:
    for part in path:
        summary = summary.get(part) if isinstance(summary, dict) else None
    return summary


def _values(summaries: Sequence[dict], path, name) -> list:
    out = [_get(s, path) for s in summaries]
    if name in LATENCY:
        out = [math.inf if _is_num(v) and math.isnan(v) else v for v in out]
    return out


def _finite_or_inf(values: list) -> list[float]:
    return [float(v) for v in values if _is_num(v) and not math.isnan(v)]


def combine(summaries: Sequence[dict], foreign: Sequence[float | None]) -> dict:
    """One level's summary over its repeats (module docstring)."""
    if not summaries or len(summaries) != len(foreign):
        raise ValueError("need one foreign-CPU reading per repeat, and >= 1 repeat")
    n = len(summaries)
    values = {name: _values(summaries, path, name) for path, name in KEYS}
    p50 = [v if _is_num(v) else math.inf for v in values["p50"]]
    order = sorted(range(n), key=lambda i: (p50[i], i))
    middle = order[(n - 1) // 2]
    out = copy.deepcopy(summaries[middle])
    for path, name in KEYS:
        if name not in SHOWN:
            continue
        nums = _finite_or_inf(values[name])
        if nums and not all(math.isinf(x) for x in nums):  # else: none answered
            node = out
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = float(statistics.median(nums))
    values["foreign_cpu_cores"] = list(foreign)
    interval = {}
    for name, vs in values.items():
        nums = _finite_or_inf(vs)
        interval[name] = [min(nums), max(nums)] if nums else None
    out["repeats"] = {
        "n": n,
        "median_repeat": middle,
        "confidence": 1 - 2 * 0.5**n if n > 1 else None,
        "values": values,
        "interval": interval,
    }
    return out


def interval(summary: dict, name: str) -> list[float] | None:
    """[min, max] of a key metric over the repeats; None for one repeat or a
    block that is not what `combine` writes."""
    block = summary.get("repeats") if isinstance(summary, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("n"), int):
        return None
    if isinstance(block["n"], bool) or block["n"] < 2:
        return None
    ivs = block.get("interval")
    iv = ivs.get(name) if isinstance(ivs, dict) else None
    if not (isinstance(iv, list) and len(iv) == 2 and all(_is_num(x) for x in iv)):
        return None
    return [float(iv[0]), float(iv[1])]


def suffix(summary: dict, name: str, scale: float = 1, fmt: str = "{:.3f}") -> str:
    """A table cell's " [lo, hi]" for a key metric ("" for one repeat)."""
    iv = interval(summary, name)
    if iv is None:
        return ""
    return " [" + ", ".join(fmt.format(scale * x) for x in iv) + "]"
