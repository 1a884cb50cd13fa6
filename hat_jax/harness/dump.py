"""Writing a harness folder: all or nothing, and never through a link.

``dump_harness`` encodes every file first, writes them into a fresh temporary
folder and only then renames that into place, so an error (a name that cannot be
a file name, text that is not UTF-8, a full disk) leaves the target as it was. An
existing harness is replaced part by part (``skills/``, ``tools/``, extra files,
the manifest last), each by one rename, once the new content is complete; what is
replaced is only what ``load_harness`` reads, and a link, a fifo or a foreign
file among it stops the dump before anything is written or deleted.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hat_jax.harness.json_schema import NAME_RE
from hat_jax.harness.sourcemap import kind_of
from hat_jax.harness.spec import FOLDERS, MANIFEST, Harness, Skill
from hat_jax.printable import shown

_FOLDER, _FILE = "a folder", "a regular file"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks; no anchors for shared lists."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    style = "|" if "\n" in s else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)


_Dumper.add_representer(str, _represent_str)


def _plain(value: Any) -> Any:
    """Mappings -> dicts, tuples -> lists (what YAML and JSON write)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, allow_unicode=True, sort_keys=False)


def harness_texts(h: Harness) -> dict[str, str]:
    """Every file of the folder: relative path -> text."""
    manifest = {
        "name": h.name,
        "version": h.version,
        "persona": h.persona,
        "rules": list(h.rules),
        "constraints": list(h.constraints),
        "prompt": {
            "order": list(h.layout.order),
            "format": h.layout.format,
            "titles": _plain(h.layout.titles),
        },
        "turn_limit": h.turn_limit,
        "retry_limit": h.retry_limit,
        "tool_call_format": h.tool_call_format,
        "hooks": [{"name": s.name, "params": _plain(s.params)} for s in h.hooks],
    }
    out = {MANIFEST: _yaml(manifest)}
    for sub, items in (("skills", h.skills), ("tools", h.tools)):
        width = max(2, len(str(len(items))))
        for i, obj in enumerate(items, 1):
            if isinstance(obj, Skill):
                front = {"name": obj.name, "kind": obj.kind}
                front["description"] = obj.description
                text = f"---\n{_yaml(front)}---\n\n{obj.body}\n"
            else:
                spec = {"name": obj.name, "description": obj.description}
                spec["parameters"] = _plain(obj.parameters)
                text = json.dumps(spec, indent=2, ensure_ascii=False) + "\n"
            out[f"{sub}/{i:0{width}d}_{obj.name}{FOLDERS[sub]}"] = text
    return out


def _encoded(texts: Mapping[str, str]) -> dict[str, bytes]:
    out = {}
    for rel, text in texts.items():
        try:
            out[rel] = text.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate, e.g. from "\ud800"
            bad = shown(text[e.start : e.end])
            raise ValueError(
                f"{rel}: cannot be written as UTF-8 (character {bad}); nothing was "
                "written"
            ) from None
    return out


def _refuse(path: Path, why: str) -> ValueError:
    return ValueError(f"{shown(path)}: {why}; nothing was written or deleted")


def _existing(folder: Path, names: list[str]) -> tuple[list[str], bool]:
    """The entries of ``names`` in ``folder`` (to be replaced) and whether it holds
    a harness. Raises ValueError on anything dump_harness must not replace."""
    kind = kind_of(folder)
    if kind is None:
        return [], False
    if kind != _FOLDER:
        raise _refuse(folder, f"is {kind}, expected a folder (links are not followed)")
    present, holds = [], False
    for name in names:
        path = folder / name
        kind = kind_of(path)
        if kind is None:
            continue
        want = _FOLDER if name in FOLDERS else _FILE
        if kind != want:
            raise _refuse(path, f"is {kind}, expected {want} (links are not followed)")
        if name in FOLDERS:
            files = _harness_files(path, FOLDERS[name])
            holds = holds or bool(files)
        holds = holds or name == MANIFEST
        present.append(name)
    return present, holds


def _harness_files(sub: Path, suffix: str) -> list[Path]:
    """The files of ``skills/`` or ``tools/``; raises on anything else in there."""
    out = []
    for entry in sorted(os.scandir(sub), key=lambda e: e.name):
        path = Path(entry.path)
        if entry.is_symlink():
            raise _refuse(path, "is a symbolic link (links are not followed)")
        if not entry.is_file(follow_symlinks=False):
            raise _refuse(path, f"is {kind_of(path)}, not a harness file")
        if not entry.name.startswith(".") and not entry.name.endswith(suffix):
            raise _refuse(path, f"is not a *{suffix} file: move it away first")
        out.append(path)
    return out


def _temp_dir(parent: Path, prefix: str) -> Path:
    """A new, empty folder in ``parent`` (made with the umask's permissions)."""
    for _ in range(8):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {shown(parent)}")


def _write_tree(root: Path, files: Mapping[str, bytes]) -> None:
    for sub in FOLDERS:
        (root / sub).mkdir()
    for rel, data in files.items():
        with open(root / rel, "xb") as f:  # a fresh folder: nothing to follow
            f.write(data)


def dump_harness(
    harness: Harness,
    folder: str | Path,
    *,
    overwrite: bool = False,
    extra: Mapping[str, str] | None = None,
) -> Path:
    """Writes ``harness`` as a folder that ``load_harness`` reads back equal.

    Args:
      harness: what to write.
      folder: the harness folder; created (with its parents) if missing.
      overwrite: replace the harness the folder already holds.
      extra: more top-level files written with it, name -> text (``mapping.json``).

    Raises:
      FileExistsError: the folder already holds a harness and not ``overwrite``.
      OSError: ``FOLDER: cannot write the harness there (why); nothing was
        written``, naming ``folder`` (never a temporary name).
      ValueError: a name cannot be a file name, a text cannot be written as
        UTF-8, or the folder, ``skills/``, ``tools/`` or a file in them is a link
        or not what ``load_harness`` reads (nothing written or deleted).
    """
    folder, extra = Path(folder), dict(extra or {})
    for obj in (*harness.skills, *harness.tools):
        if not NAME_RE.fullmatch(obj.name):
            raise ValueError(f"name {obj.name!r} does not match {NAME_RE.pattern}")
    for name in extra:
        if not NAME_RE.fullmatch(name) or name == MANIFEST or name in FOLDERS:
            raise ValueError(f"extra file name {name!r}: expected a plain file name")
    files = _encoded({**harness_texts(harness), **extra})
    present, holds = _existing(folder, [*FOLDERS, *extra, MANIFEST])
    if holds and not overwrite:
        raise FileExistsError(
            f"{shown(folder)} already holds a harness (overwrite=True?)"
        )
    try:
        if kind_of(folder) is None:
            _create(folder, files)
        else:
            _replace(folder, files, [*FOLDERS, *extra, MANIFEST], present)
    except _Midway:
        raise
    except OSError as e:  # the temporary names mean nothing to the caller
        raise type(e)(
            f"{shown(folder)}: cannot write the harness there "
            f"({e.strerror or e}); nothing was written"
        ) from e
    return folder


class _Midway(OSError):
    """Replacing stopped after some parts were swapped in (the message says
    where the old ones are)."""


def _create(folder: Path, files: dict) -> None:
    """Writes a new folder beside where it goes, then renames it into place."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_dir(folder.parent, f".{folder.name}.tmp-")
    try:
        _write_tree(tmp, files)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace(folder: Path, files: dict, names: list[str], present: list[str]) -> None:
    """Writes the new content beside the old, then swaps it in name by name."""
    tmp = _temp_dir(folder, ".dump-")  # inside: the same file system, no parent
    old = tmp / ".old"
    try:
        _write_tree(tmp, files)
        old.mkdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        for name in names:  # one rename each, the manifest last
            if name in present:
                (folder / name).rename(old / name)
            (tmp / name).rename(folder / name)
    except OSError as e:
        raise _Midway(
            f"replacing the harness in {shown(folder)} failed midway ({e}); "
            f"the old files are in {shown(old)}"
        ) from e
    shutil.rmtree(tmp)
