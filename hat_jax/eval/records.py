"""Per-case eval records: one JSON object per line, appended as cases finish.

A record file is the unit of resumption. :class:`RecordWriter` opens it for
appending, reads the ids already there (``done``) and writes each new record as
one line, flushed and fsynced, so a run killed at any moment leaves every
finished case on disk. A line cut short by the kill (no trailing newline) is
dropped when the file is opened again; any other unreadable line is an error,
not something to paper over. A string holding a lone surrogate (not UTF-8: a
reply decoded from bytes that were not text) is written with each surrogate
as the six characters ``\\udXXX``, so the line stays valid UTF-8 JSON that reads
back, and ``done`` holds the record as it reads back.

A record (written by ``hat_jax.eval.runner``) holds: ``id``, ``suite``,
``harness`` (the harness id), ``input``, ``tags``, ``trajectory``, ``scores``
(name -> value) and ``rationales`` (name -> the judge's reason).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hat_jax.jsonl import DataError, parse_line, write_text_atomic

Record = dict[str, Any]
RUN_FILE = "run.json"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogates(line: str) -> str:
    """A JSON line with each lone surrogate as the text ``\\udXXX`` (module
    docstring). Outside strings a JSON line is ASCII, so every surrogate is in
    a string, where an escaped backslash (``\\\\``) then ``udXXX`` is valid."""
    return _LONE_SURROGATE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", line)


def _complete_lines(path: Path) -> tuple[list[bytes], int]:
    """The file's complete lines and the byte length they cover."""
    data = path.read_bytes() if path.exists() else b""
    end = data.rfind(b"\n") + 1  # 0 when there is no complete line
    return data[:end].splitlines(), end


def iter_records(path: str | Path) -> Iterator[Record]:
    """The records of a file in order (a torn last line is skipped).

    Raises:
      DataError: ``path:line: ...`` for a line that is not a JSON object with a
        string ``id``.
    """
    path = Path(path)
    lines, _ = _complete_lines(path)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        # A judge without a valid vote scores NaN, which json.dumps wrote.
        record = parse_line(line, where, allow_nan=True)
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise DataError(f"{where}: not a record (a JSON object with a string id)")
        yield record


def read_records(path: str | Path) -> list[Record]:
    """All records of a file, in order."""
    return list(iter_records(path))


class RecordWriter:
    """Appends records to a JSONL file; knows which case ids it already holds.

    Args:
      path: the file (created with its folder; a torn last line is cut off).

    Attributes:
      done: case id -> record, for every record in the file.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _, end = _complete_lines(self.path)
        if self.path.exists() and self.path.stat().st_size != end:
            with open(self.path, "r+b") as f:  # drop the line a kill cut short
                f.truncate(end)
        self.done: dict[str, Record] = {r["id"]: r for r in iter_records(self.path)}
        self._f = open(self.path, "a", encoding="utf-8", newline="\n")

    def write(self, record: Mapping[str, Any]) -> None:
        """Appends one record (one line, flushed to disk before returning)."""
        if record["id"] in self.done:
            raise ValueError(f"{self.path}: record {record['id']!r} already written")
        raw = json.dumps(record, ensure_ascii=False)
        line = _escape_surrogates(raw)
        self._f.write(line + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.done[record["id"]] = dict(record) if line == raw else json.loads(line)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_run(out_dir: str | Path, config: Mapping[str, Any]) -> None:
    """Writes ``run.json`` into a new output folder, or checks that the folder's
    run was made with the same ``config`` (what decides the records), so a
    resumed eval never mixes records of different settings.

    Raises:
      ValueError: naming the settings that differ.
    """
    path = Path(out_dir) / RUN_FILE
    config = json.loads(json.dumps(dict(config)))  # as it reads back
    if path.exists():
        before = parse_line(path.read_bytes(), str(path), allow_nan=True)
        if not isinstance(before, dict):
            raise DataError(f"{path}: expected a JSON object of settings")
        diff = sorted(
            k for k in set(before) | set(config) if before.get(k) != config.get(k)
        )
        if diff:
            changes = ", ".join(
                f"{k}: {before.get(k)!r} -> {config.get(k)!r}" for k in diff
            )
            raise ValueError(
                f"{out_dir} holds an eval with other settings ({changes}); "
                "use a new --out folder"
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
