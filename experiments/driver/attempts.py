"""A step's wall time over all its attempts.

A step that is killed (a session's end, SIGTERM, a crash) and run again resumes
from what it wrote (train stages from their checkpoints, evaluations from their
records), so the attempt that finishes knows only its own time. ``Clock`` keeps
the whole count in the step folder's ``attempts.json``::

    {"attempts": [{"started": ISO time, "seconds": float}, ...],
     "untimed_before": bool}

one entry per attempt, its ``seconds`` rewritten every ``BEAT_S`` seconds by a
daemon thread while the attempt runs, so a killed attempt loses at most
``BEAT_S`` of its time. ``untimed_before`` says the folder already held work
when the first timed attempt began (it was started by code without this clock),
so the sum undercounts. Time a process spends stopped (SIGSTOP) is wall time and
counts; a stopped attempt loses at most ``BEAT_S``. The file is data the next
attempt reads: a damaged one (not a regular file, over ``MAX_BYTES``, not the
shape above) is set aside (``attempts.json.bad``) and the count starts again,
marked untimed. Writes go through a fresh temporary file renamed over the
record, so nothing outside the folder is written.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from hat_jax.jsonl import DataError, open_regular, write_text_atomic

FILE = "attempts.json"
TMP_PREFIX = f".{FILE}.tmp-"  # hat_jax.jsonl.atomic_open's temporary files
BEAT_S = 30.0  # seconds between rewrites of the running attempt's time
MAX_BYTES = 1 << 20  # a longer record is not one of ours
MAX_SECONDS = 1e9  # an attempt's time above this (31 years) is not one of ours


def _seconds_ok(s: Any) -> bool:
    if isinstance(s, bool) or not isinstance(s, int | float):
        return False
    try:
        return math.isfinite(float(s)) and 0 <= s <= MAX_SECONDS
    except OverflowError:
        return False


def _valid(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("attempts"), list):
        return False
    if not isinstance(obj.get("untimed_before"), bool):
        return False
    return all(
        isinstance(a, dict) and _seconds_ok(a.get("seconds")) for a in obj["attempts"]
    )


def read(folder: Path) -> dict[str, Any] | None:
    """``folder``'s attempt record, or None when it has none or a damaged one
    (a link, not a regular file, too long, not JSON or not its shape)."""
    path = folder / FILE
    if path.is_symlink() or not path.exists():
        return None
    try:
        with open_regular(path, MAX_BYTES) as f:
            obj = json.loads(f.read())
    except (OSError, ValueError, RecursionError, DataError):
        return None
    return obj if _valid(obj) else None


def _has_work(folder: Path) -> bool:
    """Whether ``folder`` holds anything but the clock's own files."""
    if not folder.is_dir():
        return False
    return any(
        p.name != FILE and not p.name.startswith(TMP_PREFIX) for p in folder.iterdir()
    )


def spent(folder: Path) -> tuple[float, int, bool] | None:
    """(seconds, attempts, earlier ones untimed) of ``folder``'s attempts so
    far, for a dry run; None without a record."""
    record = read(folder)
    if record is None or not record["attempts"]:
        return None
    seconds = sum(a["seconds"] for a in record["attempts"])
    return seconds, len(record["attempts"]), record["untimed_before"]


class Clock:
    """Times one attempt of the step in ``folder``; a context manager.

    Entering (before the step computes) reads the earlier attempts, writes the
    record with this attempt in it and starts the heartbeat; leaving (normally
    or not) stops it and writes the attempt's final time. ``summary()`` gives
    what ``done.json`` records.
    """

    def __init__(self, folder: Path, beat_s: float | None = None):
        self.folder = folder
        self.path = folder / FILE
        self.beat_s = BEAT_S if beat_s is None else beat_s
        self.record: dict[str, Any] = {"attempts": [], "untimed_before": False}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._t0 = 0.0
        self._thread = threading.Thread(
            target=self._beat, name=f"clock {folder.name}", daemon=True
        )

    def _start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob(TMP_PREFIX + "*"):  # left by a killed write
            stale.unlink(missing_ok=True)
        previous = read(self.folder)
        if previous is None:
            if self.path.is_symlink() or self.path.exists():
                self.path.replace(self.path.with_name(FILE + ".bad"))
            previous = {"attempts": [], "untimed_before": _has_work(self.folder)}
        self.record = previous
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.record["attempts"].append({"started": stamp, "seconds": 0.0})
        self._t0 = time.perf_counter()

    def _save(self) -> None:
        with self._lock:
            self.record["attempts"][-1]["seconds"] = time.perf_counter() - self._t0
            write_text_atomic(self.path, json.dumps(self.record, indent=1))

    def _beat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self._save()
            except OSError:  # a full disk must not kill the step; the end retries
                pass

    def __enter__(self) -> Clock:
        self._start()
        self._save()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self._save()
        except OSError:  # the step's work is done; its done.json still gets the sum
            pass

    def summary(self) -> dict[str, Any]:
        """``{"attempts": n, "seconds_all": sum, "untimed_before": bool}``."""
        attempts = self.record["attempts"]
        return {
            "attempts": len(attempts),
            "seconds_all": sum(a["seconds"] for a in attempts),
            "untimed_before": bool(self.record["untimed_before"]),
        }
