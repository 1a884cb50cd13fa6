"""Replay traces: live-room sessions and viewer messages with arrival times (JSONL).

A trace file has one JSON object per line, in this order:

1. a header ``{"kind": "trace", "version": 1, "arrivals": "poisson", "rate": R,
   "seed": S, "n_messages": N, "rooms": K, "split": "test",
   "messages_per_room": M}``;
2. one ``{"kind": "session", "session": "s0", "room_id": ..., "room_index": i,
   "harness": "taolive_v1"}`` per room (the harness in force in that room);
3. the messages, by arrival time: ``{"kind": "message", "session": "s0",
   "case": <sim case id>, "t": seconds since the trace starts, "text": ...,
   "intent": ..., "lang": ...}``.

The room state is not stored: ``sim.datasets.make_cases(split, seed,
rooms * messages_per_room, messages_per_room=M)`` rebuilds every room snapshot
from the header (the "state seed"), and a message names its case. The text is
stored so a reader can check that the simulator still produces the same
messages (:func:`serving.cases.trace_jobs`).

:func:`read_trace` holds a file to what :func:`make_trace` writes, so a trace
from elsewhere cannot make a replay build rooms without end or load a harness
from an arbitrary folder: a header with a positive finite rate, a seed in
``0..2**32-1``, ``n_messages`` and ``rooms`` >= 1, ``messages_per_room`` =
ceil(n_messages / rooms), a split of ``sim.types.SPLITS``; sessions numbered
0, 1, ... (at least ``rooms`` of them), each with a builtin harness; messages
with finite times >= 0, in order, each case once.

Arrivals (``ARRIVALS``, by name). Each room is its own process at rate R / K
messages per second; the rooms' streams are merged and the first N messages
kept. ``poisson``: exponential gaps. ``bursty``: bursts start as a Poisson
process at rate R / (K * BURST_MEAN); a burst holds 1 + Geometric messages
(mean BURST_MEAN) spaced by exponential gaps of mean BURST_GAP_S, so the mean
rate is still about R but messages bunch up (a host's question to the room
answered by many viewers at once).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hat_jax.jsonl import DataError, iter_jsonl, write_text_atomic

VERSION = 1
SEED_MAX = 2**32 - 1
BURST_MEAN = 4.0  # messages per burst
BURST_GAP_S = 0.25  # mean gap inside a burst


class TraceError(ValueError):
    """A trace file that does not follow the format: says where and what."""

    def __init__(self, file: str | Path, line: int, expected: str, got: Any = None):
        got_s = "" if got is None else f"; got {json.dumps(got)[:120]}"
        super().__init__(f"{file}:{line}: expected {expected}{got_s}")
        self.file, self.line, self.expected = str(file), line, expected


@dataclasses.dataclass(frozen=True)
class Session:
    """One live room in the trace."""

    session: str
    room_id: str
    room_index: int
    harness: str


@dataclasses.dataclass(frozen=True)
class Message:
    """One viewer message and when it arrives (seconds from the trace start)."""

    session: str
    case: str
    t: float
    text: str
    intent: str
    lang: str


@dataclasses.dataclass(frozen=True)
class Trace:
    """A whole trace: header fields, sessions and messages by arrival."""

    header: dict[str, Any]
    sessions: tuple[Session, ...]
    messages: tuple[Message, ...]

    def session(self, name: str) -> Session:
        return next(s for s in self.sessions if s.session == name)


# --------------------------------------------------------------------- arrivals
def poisson_times(rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
    """``n`` arrival times of a Poisson process at ``rate`` per second."""
    return np.cumsum(rng.exponential(1.0 / rate, n))


def bursty_times(rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
    """``n`` arrival times in bursts (module docstring), mean rate about ``rate``."""
    times: list[float] = []
    start = 0.0
    while len(times) < n:  # burst starts keep the mean rate; bursts may overlap
        start += rng.exponential(BURST_MEAN / rate)
        size = int(rng.geometric(1.0 / BURST_MEAN))
        gaps = rng.exponential(BURST_GAP_S, size - 1)
        times.extend((start + np.cumsum(np.r_[0.0, gaps])).tolist())
    return np.sort(np.asarray(times))[:n]


ARRIVALS: dict[str, Callable[[np.random.Generator, float, int], np.ndarray]] = {
    "poisson": poisson_times,
    "bursty": bursty_times,
}


def make_trace(
    *,
    n_messages: int,
    rooms: int,
    arrivals: str,
    rate: float,
    seed: int,
    split: str = "test",
    harness: str = "taolive_v1",
) -> Trace:
    """A trace of simulated rooms (module docstring); deterministic in its args."""
    from hat_jax.harness.builtin import BUILTIN
    from sim.datasets import make_cases
    from sim.types import SPLITS

    if arrivals not in ARRIVALS:
        raise ValueError(f"unknown arrivals {arrivals!r}; have {sorted(ARRIVALS)}")
    if n_messages < 1 or rooms < 1 or not (math.isfinite(rate) and rate > 0):
        raise ValueError(
            f"need n_messages >= 1, rooms >= 1 and a finite rate > 0, got "
            f"{n_messages}, {rooms}, {rate}"
        )
    if not 0 <= seed <= SEED_MAX:
        raise ValueError(f"seed must be in 0..{SEED_MAX}, got {seed}")
    if split not in SPLITS or harness not in BUILTIN:
        raise ValueError(
            f"need a split in {SPLITS} and a builtin harness in {BUILTIN}, got "
            f"{split!r}, {harness!r}"
        )
    per_room = -(-n_messages // rooms)
    cases = make_cases(
        split, seed, per_room * rooms, messages_per_room=per_room,
        harness_version=harness,
    )  # fmt: skip
    by_room: dict[str, list] = {}
    for c in cases:
        by_room.setdefault(c.snapshot.room_id, []).append(c)
    sessions, messages = [], []
    for i, (room_id, room_cases) in enumerate(by_room.items()):
        name = f"s{i}"
        sessions.append(Session(name, room_id, i, harness))
        rng = np.random.default_rng([seed, i, 17])
        times = ARRIVALS[arrivals](rng, rate / rooms, len(room_cases))
        for t, c in zip(times, room_cases):
            m = c.message
            messages.append(Message(name, c.case_id, round(float(t), 4), m.text,
                                    m.intent, m.lang))  # fmt: skip
    messages.sort(key=lambda m: (m.t, m.session, m.case))
    header = {
        "kind": "trace", "version": VERSION, "arrivals": arrivals, "rate": rate,
        "seed": seed, "n_messages": n_messages, "rooms": rooms, "split": split,
        "messages_per_room": per_room,
    }  # fmt: skip
    return Trace(header, tuple(sessions), tuple(messages[:n_messages]))


# ------------------------------------------------------------------------ files
def write_trace(trace: Trace, path: str | Path) -> Path:
    """Writes ``trace`` as JSONL (byte-identical for identical traces)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [trace.header]
    lines += [{"kind": "session", **dataclasses.asdict(s)} for s in trace.sessions]
    lines += [{"kind": "message", **dataclasses.asdict(m)} for m in trace.messages]
    write_text_atomic(
        path, "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
    )
    return path


HEADER_KEYS = {
    "version": int, "arrivals": str, "rate": (int, float), "seed": int,
    "n_messages": int, "rooms": int, "split": str, "messages_per_room": int,
}  # fmt: skip
SESSION_KEYS = {"session": str, "room_id": str, "room_index": int, "harness": str}
MESSAGE_KEYS = {
    "session": str, "case": str, "t": (int, float), "text": str, "intent": str,
    "lang": str,
}  # fmt: skip


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except OverflowError:  # an integer of hundreds of digits
        return False


def _check_keys(file, n: int, obj: dict, kind: str, keys: dict) -> None:
    for key, types in keys.items():
        if key not in obj:
            raise TraceError(file, n, f'a {kind} line with key "{key}"', obj)
        if isinstance(obj[key], bool) or not isinstance(obj[key], types):
            names = getattr(types, "__name__", None) or "/".join(
                t.__name__ for t in types
            )
            raise TraceError(file, n, f'"{key}" of type {names}', obj[key])
        if types is not str and not _finite(obj[key]):
            raise TraceError(file, n, f'"{key}" a finite number', obj[key])


def _check_header(file, n: int, h: dict) -> None:
    """The header's values (module docstring), once their types are right."""
    from sim.types import SPLITS

    if h["version"] != VERSION:
        raise TraceError(file, n, f"version {VERSION}", h["version"])
    if h["arrivals"] not in ARRIVALS:
        raise TraceError(file, n, f"arrivals in {sorted(ARRIVALS)}", h["arrivals"])
    if h["rate"] <= 0:
        raise TraceError(file, n, '"rate" > 0 (messages per second)', h["rate"])
    if not 0 <= h["seed"] <= SEED_MAX:
        raise TraceError(file, n, f'"seed" in 0..{SEED_MAX}', h["seed"])
    for key in ("n_messages", "rooms"):
        if h[key] < 1:
            raise TraceError(file, n, f'"{key}" >= 1', h[key])
    per_room = -(-h["n_messages"] // h["rooms"])
    if h["messages_per_room"] != per_room:
        raise TraceError(
            file, n, f'"messages_per_room" {per_room} (n_messages / rooms, rounded '
            "up)", h["messages_per_room"],
        )  # fmt: skip
    if h["split"] not in SPLITS:
        raise TraceError(file, n, f'"split" in {list(SPLITS)}', h["split"])


def _check_session(file, n: int, obj: dict, sessions: dict) -> Session:
    from hat_jax.harness.builtin import BUILTIN

    _check_keys(file, n, obj, "session", SESSION_KEYS)
    if obj["session"] in sessions:
        raise TraceError(file, n, "a new session name", obj["session"])
    if obj["room_index"] != len(sessions):
        raise TraceError(
            file, n, f'"room_index" {len(sessions)} (sessions in order)',
            obj["room_index"],
        )  # fmt: skip
    if obj["harness"] not in BUILTIN:
        raise TraceError(file, n, f'"harness" in {list(BUILTIN)}', obj["harness"])
    return Session(**{k: obj[k] for k in SESSION_KEYS})


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        for where, obj in iter_jsonl(path, objects=True):
            yield int(where.rsplit(":", 1)[1]), obj
    except DataError as e:  # "path:line: why": not UTF-8, not JSON, too deep, ...
        line, _, why = str(e).removeprefix(f"{path}:").partition(": ")
        n = int(line) if line.isdigit() else 0
        raise TraceError(path, n, f"a JSON object ({why or line.strip()})") from None


def read_trace(path: str | Path) -> Trace:
    """Reads and validates a trace file; raises :class:`TraceError` on a bad line."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(path, 0, "a trace file (none found)")
    header, sessions, messages, cases = None, {}, [], set()
    last_t, n = 0.0, 0
    for n, obj in _lines(path):
        kind = obj.get("kind")
        if header is None:
            if kind != "trace":
                raise TraceError(path, n, 'the header ({"kind": "trace", ...})', obj)
            _check_keys(path, n, obj, "header", HEADER_KEYS)
            _check_header(path, n, obj)
            header = obj
        elif kind == "session":
            if messages:
                raise TraceError(path, n, "sessions before the first message")
            sessions[obj.get("session")] = _check_session(path, n, obj, sessions)
        elif kind == "message":
            _check_keys(path, n, obj, "message", MESSAGE_KEYS)
            if obj["session"] not in sessions:
                raise TraceError(path, n, f"a session in {sorted(sessions)}",
                                 obj["session"])  # fmt: skip
            if obj["t"] < last_t:
                raise TraceError(path, n, f"arrival t >= {last_t} (sorted times)",
                                 obj["t"])  # fmt: skip
            if obj["case"] in cases:
                raise TraceError(path, n, "a case not already replayed", obj["case"])
            last_t = float(obj["t"])
            cases.add(obj["case"])
            messages.append(Message(**{k: obj[k] for k in MESSAGE_KEYS}))
        else:
            raise TraceError(path, n, 'kind "session" or "message"', kind)
    if header is None:
        raise TraceError(path, n, "a header line (the file is empty)")
    if not sessions or not messages:
        raise TraceError(path, n, "at least one session and one message")
    if len(sessions) < header["rooms"]:
        raise TraceError(path, n, f"{header['rooms']} sessions or more (rooms)",
                         len(sessions))  # fmt: skip
    if len(messages) != header["n_messages"]:
        raise TraceError(path, n, f"{header['n_messages']} messages (n_messages)",
                         len(messages))  # fmt: skip
    return Trace(header, tuple(sessions.values()), tuple(messages))
