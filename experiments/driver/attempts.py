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
counts. The file is data the next attempt reads: a damaged one is set aside
(``attempts.json.bad``) and the count starts again, marked untimed.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

FILE = "attempts.json"
BEAT_S = 30.0  # seconds between rewrites of the running attempt's time


def _write(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def _valid(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("attempts"), list):
        return False
    if not isinstance(obj.get("untimed_before", False), bool):
        return False
    for a in obj["attempts"]:
        s = a.get("seconds") if isinstance(a, dict) else None
        ok = isinstance(s, (int, float)) and not isinstance(s, bool)
        if not ok or not math.isfinite(s) or s < 0:
            return False
    return True


def read(folder: Path) -> dict[str, Any] | None:
    """``folder``'s attempt record, or None when it has none or a damaged one."""
    path = folder / FILE
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return obj if _valid(obj) else None


def _has_work(folder: Path) -> bool:
    return folder.is_dir() and any(p.name != FILE for p in folder.iterdir())


class Clock:
    """Times one attempt of the step in ``folder``; a context manager.

    Enter before the step computes: it reads the earlier attempts and starts the
    heartbeat. On exit (normal or not) the attempt's final time is written.
    ``summary()`` gives what ``done.json`` records.
    """

    def __init__(self, folder: Path, beat_s: float | None = None):
        self.path = folder / FILE
        self.beat_s = BEAT_S if beat_s is None else beat_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        previous = read(folder)
        if previous is None:
            if self.path.exists():
                os.replace(self.path, self.path.with_name(FILE + ".bad"))
            previous = {"attempts": [], "untimed_before": _has_work(folder)}
        self.record = previous
        self.record["attempts"].append(
            {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": 0.0}
        )
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(
            target=self._beat, name=f"clock {folder.name}", daemon=True
        )

    def _save(self) -> None:
        with self._lock:
            self.record["attempts"][-1]["seconds"] = time.perf_counter() - self._t0
            _write(self.path, self.record)

    def _beat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self._save()
            except OSError:  # a full disk must not kill the step; the end retries
                pass

    def __enter__(self) -> Clock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._save()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._save()

    def summary(self) -> dict[str, Any]:
        """``{"attempts": n, "seconds_all": sum, "untimed_before": bool}``."""
        attempts = self.record["attempts"]
        return {
            "attempts": len(attempts),
            "seconds_all": sum(a["seconds"] for a in attempts),
            "untimed_before": bool(self.record["untimed_before"]),
        }
