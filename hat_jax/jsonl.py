"""Reading JSONL files whose errors name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def iter_jsonl(path: str | Path) -> Iterator[tuple[str, Any]]:
    """Yields ``("path:line", value)`` for each non-blank line of ``path``.

    Raises:
      ValueError: ``path:line: invalid JSON (...)`` at the first line that does
        not parse.
    """
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: invalid JSON ({e.msg})") from None
            yield where, value
