"""The code a step runs, hashed from the source files on disk.

A step kind declares its code as entries relative to `CODE_ROOT` (the
checkout, or the folder an editable install points at; a test points it at a
tmp copy)::

    "hat_jax/losses"        a folder: every hashed file under it
    "experiments/eval_run_cmd.py"   one file (hashed whatever its suffix)
    "hat_jax/*.py"          a glob (pathlib, relative to CODE_ROOT)
    "!sim/judge_*"          drop the matching files (fnmatch on the relative
                            path, ``*`` crossing "/") from the kind's set

Hashed files under a folder or glob: `SUFFIXES` (Python sources and the data
shipped beside them: harness manifests and skills, tool schemas, judge
labels); ``__pycache__`` and hidden files or folders are skipped. Works
without git and in a ``pip install -e`` (it reads the files, not the index).

`code_files(entries)` gives ``{relative path: sha256 hex[:16]}``;
`code_hash(files)` the sha256 (hex[:16]) over the sorted (path, file hash)
pairs, which a step's cache key holds. Each entry's files are hashed once per
process (`clear_cache` forgets them, for a test that edits a file).
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = (".py", ".yaml", ".yml", ".md", ".json", ".jsonl")
_GLOB = set("*?[")


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _walk(folder: Path) -> Iterable[Path]:
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d != "__pycache__"
        )
        for f in sorted(files):
            if not f.startswith(".") and f.endswith(SUFFIXES):
                yield Path(top) / f


@functools.cache
def _entry_files(root: str, entry: str) -> tuple[tuple[str, str], ...]:
    """((relative posix path, file hash), ...) of the files ``entry`` names."""
    base, is_glob = Path(root), bool(_GLOB & set(entry))
    matches = sorted(base.glob(entry)) if is_glob else [base / entry]
    if not any(m.exists() for m in matches):
        raise ValueError(f"step code {entry!r} names no file under {base}")
    out: dict[str, str] = {}
    for m in matches:
        if m.is_dir():
            found = list(_walk(m))
        else:  # a glob's match must be a hashed kind of file; a named file is
            found = [m] if m.is_file() and (not is_glob or m.suffix in SUFFIXES) else []
        out |= {f.relative_to(base).as_posix(): _file_hash(f) for f in found}
    return tuple(sorted(out.items()))


def code_files(
    entries: Iterable[str], root: str | Path | None = None
) -> dict[str, str]:
    """``{relative path: file hash}`` of a kind's code entries (module docstring).

    Raises:
      ValueError: an entry that names no file (a typo would hash nothing).
    """
    root = str(CODE_ROOT if root is None else root)
    entries = list(entries)
    drop = [e[1:] for e in entries if e.startswith("!")]
    files: dict[str, str] = {}
    for e in entries:
        if not e.startswith("!"):
            files.update(_entry_files(root, e))
    return {
        k: v
        for k, v in sorted(files.items())
        if not any(fnmatch.fnmatchcase(k, d) for d in drop)
    }


def code_hash(files: Mapping[str, str]) -> str:
    """sha256 (hex[:16]) over the sorted ``path\\0hash\\n`` lines of ``files``."""
    h = hashlib.sha256()
    for path, digest in sorted(files.items()):
        h.update(f"{path}\0{digest}\n".encode())
    return h.hexdigest()[:16]


def changed(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """The paths whose hash differs, or that one side lacks, sorted."""
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def clear_cache() -> None:
    """Forgets the hashed files (the next plan reads them again)."""
    _entry_files.cache_clear()
