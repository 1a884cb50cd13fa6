"""Diagnose and confirm: a split's failures grouped into error classes.

Diagnose. Every record that is not a success (``sim/judge_success.py``) is
read through its success rationale, which lists why, judge by judge
("effectiveness 0.5: states current price 209; misses the Double 12
cross-shop discount"). Each clause, with numbers written ``N`` and the judge
named apart, is a candidate class; a clause whose cases all carry a bigger
class's clause too is that class's detail (the judge's description of the
reply rather than what was wrong with it) and is folded into it. A class
keeps its count, the intents, the hooks that rejected something and the tools
called in its cases, and a few example trajectories (message, reply, why).

Confirm. A class is kept only if it reproduces: its cases run again with
another seed, and sibling cases (same intent, attribute and language, from
rooms the diagnosis did not see) run once; the class is confirmed when at
least ``threshold`` of those runs fail with the same clause. A flaky failure
(one sampled badly, a timeout) does not come back, so it is not "fixed".
"""

from __future__ import annotations

import collections
import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sim.rewards import SUCCESS

MIN_COUNT = 2  # cases a class needs in the diagnosis
EXAMPLES = 3
_JUDGE = re.compile(r"^(accuracy|effectiveness) [0-9.]+: |^(skills|tools): ")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def clauses(rationale: str) -> list[tuple[str, str]]:
    """``(judge, clause)`` pairs of a success rationale, numbers as ``N``."""
    out, judge = [], "success"
    for part in rationale.split("; "):
        m = _JUDGE.match(part)
        if m:
            judge = m.group(1) or m.group(2)
            part = part[m.end() :]
        text = _NUMBER.sub("N", part.strip())[:160]
        if text and (judge, text) not in out:
            out.append((judge, text))
    return out


def failed(record: Mapping[str, Any]) -> bool:
    return float(record["scores"][SUCCESS]) < 1.0


def record_keys(record: Mapping[str, Any]) -> list[str]:
    """The class keys of a failed record (empty for a success)."""
    if not failed(record):
        return []
    keys = [c for _, c in clauses(str(record["rationales"].get(SUCCESS, "")))]
    return list(dict.fromkeys(keys)) or ["failed without a rationale"]


@dataclasses.dataclass
class ErrorClass:
    """One class of failures (module docstring)."""

    key: str
    cases: list[str]
    judges: list[str]
    intents: dict[str, int]
    hooks_failed: dict[str, int]
    tools: dict[str, int]
    details: list[str]
    examples: list[dict[str, Any]]
    share: float = 0.0
    confirm: dict[str, Any] | None = None

    @property
    def count(self) -> int:
        return len(self.cases)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "count": self.count}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ErrorClass:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})


def _example(r: Mapping[str, Any]) -> dict[str, Any]:
    t = r.get("trajectory", {})
    return {
        "id": r["id"],
        "message": r.get("input", {}).get("message", ""),
        "reply": t.get("reply"),
        "status": t.get("status"),
        "why": r["rationales"].get(SUCCESS, ""),
    }


def _counts(items: Iterable[str]) -> dict[str, int]:
    return dict(collections.Counter(items).most_common())


def diagnose(records: Sequence[Mapping[str, Any]]) -> list[ErrorClass]:
    """The error classes of ``records``, biggest first (module docstring)."""
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    judges: dict[str, set[str]] = collections.defaultdict(set)
    order: dict[str, int] = {}
    for r in records:
        if not failed(r):
            continue
        for pos, (judge, key) in enumerate(
            clauses(str(r["rationales"].get(SUCCESS, "")))
        ):
            rs = by_key.setdefault(key, [])
            if not rs or rs[-1] is not r:  # two judges may give the same clause
                rs.append(r)
            judges[key].add(judge)
            order[key] = max(order.get(key, 0), pos)
    ids = {k: {r["id"] for r in rs} for k, rs in by_key.items()}
    # biggest first; among equals the clause written later (the fault, after
    # the judge's description of the reply)
    ranked = sorted(by_key, key=lambda k: (-len(ids[k]), -order[k], k))
    parents: dict[str, str] = {}
    for i, k in enumerate(ranked):
        parent = next(
            (p for p in ranked[:i] if p not in parents and ids[k] <= ids[p]), None
        )
        if parent is not None:
            parents[k] = parent
    n = len(records)
    out = []
    for k in ranked:
        if k in parents or len(ids[k]) < MIN_COUNT:
            continue
        rs = by_key[k]
        events = [e for r in rs for e in r.get("trajectory", {}).get("hook_events", [])]
        calls = [c for r in rs for c in r.get("trajectory", {}).get("tool_calls", [])]
        out.append(
            ErrorClass(
                key=k,
                cases=[r["id"] for r in rs],
                judges=sorted(judges[k]),
                intents=_counts(r.get("tags", {}).get("intent", "?") for r in rs),
                hooks_failed=_counts(e["hook"] for e in events if not e.get("passed")),
                tools=_counts(str(c.get("name")) for c in calls),
                details=[d for d, p in parents.items() if p == k],
                examples=[_example(r) for r in rs[:EXAMPLES]],
                share=len(rs) / n if n else 0.0,
            )
        )
    return out


def confirm_rate(cls: ErrorClass, records: Sequence[Mapping[str, Any]]) -> dict:
    """The share of ``records`` (a class's confirmation runs) failing with it."""
    hits = [cls.key in record_keys(r) for r in records]
    return {
        "runs": len(hits),
        "reproduced": int(sum(hits)),
        "rate": float(sum(hits) / len(hits)) if hits else 0.0,
    }
