"""JSONL rows read and written with errors that name the file and line.

Reading: :func:`iter_jsonl` decodes each line on its own and turns every problem
(bytes that are not UTF-8, invalid JSON, NaN or Infinity, a number out of range,
an object naming a key twice, nesting deeper than ``MAX_DEPTH``, a string
holding a lone surrogate) into a
:class:`DataError` whose message starts with ``path:line:``. Readers then check
a row's shape with :func:`field`, which words type errors the same way.

Writing: :func:`atomic_open` writes to a hidden temporary file beside the target
and renames it over the target only when everything was written, so a failure
(a row that does not encode, a full disk, a kill) leaves the old file or none,
never a half-written one. :func:`write_jsonl_atomic` checks each row as it goes.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "MAX_DEPTH",
    "DataError",
    "atomic_open",
    "check_encodable",
    "field",
    "iter_jsonl",
    "json_type",
    "open_regular",
    "parse_line",
    "read_jsonl_objects",
    "write_jsonl_atomic",
    "write_text_atomic",
]

# Deeper rows are refused when read: json decodes up to the interpreter's
# recursion limit, but code that walks the value later (rendering, json.dumps)
# would then fail far from the file. No data of ours nests past a dozen levels.
MAX_DEPTH = 100

_REQUIRED = object()
# A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into decoded JSON
# (the UTF-8 decoder refuses encoded surrogates). A paired escape matches too;
# the walk below tells the two apart.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class DataError(ValueError):
    """Bad data: the message starts with ``path:line:`` (``path:`` for a problem
    with the whole file)."""


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _short(value: Any, n: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


class _DuplicateKey(ValueError):
    """An object names a key twice (``json`` would keep the last silently)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: the object, refusing a key given twice."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        counts = collections.Counter(k for k, _ in pairs)
        key = next(k for k, n in counts.items() if n > 1)
        raise _DuplicateKey(f"duplicate key {_short(key)} in an object")
    return obj


def _too_deep(value: Any) -> bool:
    """Whether containers nest past MAX_DEPTH (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = v.values() if isinstance(v, dict) else v
        stack += [(c, depth + 1) for c in children if isinstance(c, dict | list)]
    return False


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in any string (key or value) of ``value``."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            m = _LONE_SURROGATE.search(v)
            if m:
                return m.group()
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            stack += v
    return None


def parse_line(raw: bytes | str, where: str, *, allow_nan: bool = False) -> Any:
    """One JSON value from one line.

    Args:
      raw: the line.
      where: ``path:line`` for messages.
      allow_nan: accept NaN, Infinity and out-of-range numbers (as ``json``
        does), for files of ours that record a missing score as NaN.

    Raises:
      DataError: ``where: what was wrong``.
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(
                f"{where}: not UTF-8 (byte offset {e.start} in the line: "
                f"{raw[e.start : e.start + 4]!r})"
            ) from None
    try:
        strict = (
            {} if allow_nan else {"parse_constant": _constant, "parse_float": _finite}
        )
        value = json.loads(raw, object_pairs_hook=_unique, **strict)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: invalid JSON ({e.msg}, column {e.colno})") from None
    except _DuplicateKey as e:
        raise DataError(f"{where}: invalid JSON ({e})") from None
    except RecursionError:
        raise DataError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # NaN/Infinity, 1e999, an integer of > 4300 digits
        what = str(e)
        if "integer string conversion" in what:
            what = f"an integer of more than {sys.get_int_max_str_digits()} digits"
        raise DataError(f"{where}: invalid JSON ({what})") from None
    if raw.count("[") + raw.count("{") > MAX_DEPTH and _too_deep(value):
        raise DataError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(raw) or _LONE_SURROGATE.search(raw):
        bad = _lone_surrogate(value)
        if bad is not None:
            raise DataError(
                f"{where}: a string holds a lone surrogate U+{ord(bad):04X} "
                "(not valid UTF-8 text)"
            )
    return value


def open_regular(path: str | Path, max_bytes: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file.

    Raises:
      DataError: a fifo, device or folder (refused unread: a fifo opens at once
        with O_NONBLOCK instead of blocking), or a file over ``max_bytes``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise DataError(f"{path}: not a regular file (a fifo, device or folder)")
    if max_bytes is not None and st.st_size > max_bytes:
        os.close(fd)
        raise DataError(f"{path}: {st.st_size:,} bytes, over the {max_bytes:,} read")
    return os.fdopen(fd, "rb")


def iter_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[str, Any]]:
    """Yields ``("path:line", value)`` for each non-blank line of ``path``.

    Args:
      path: the file.
      objects: refuse a line that holds anything but a JSON object.

    Raises:
      DataError: ``path:line: what was wrong`` at the first bad line.
    """
    with open_regular(path) as f:
        for lineno, line in enumerate(f, 1):
            if lineno == 1:
                line = line.removeprefix(b"\xef\xbb\xbf")  # a BOM some editors add
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            value = parse_line(line, where)
            if objects and not isinstance(value, dict):
                raise DataError(
                    f"{where}: expected a JSON object, got {json_type(value)}"
                )
            yield where, value


def read_json(path: str | Path) -> Any:
    """The JSON value of a whole file of ours (``run.json``, ``summary.json``,
    ...; NaN allowed, as ``json`` writes it for a missing score).

    Raises:
      DataError: ``path:line: ...`` when it is not UTF-8 or not JSON;
        ``path: ...`` for an object naming a key twice.
    """
    with open_regular(path) as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 (byte offset {e.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    except _DuplicateKey as e:
        raise DataError(f"{path}: invalid JSON ({e})") from None
    except (RecursionError, ValueError) as e:
        raise DataError(f"{path}: invalid JSON ({type(e).__name__})") from None


def read_jsonl_objects(
    path: str | Path, *, what: str = "rows"
) -> list[tuple[str, dict[str, Any]]]:
    """All ``(where, object)`` rows of a file, which must hold at least one.

    Raises:
      DataError: a bad line, or ``path: no ROWS (expected one JSON object per
        line)``.
    """
    rows = list(iter_jsonl(path, objects=True))
    if not rows:
        raise DataError(f"{path}: no {what} (expected one JSON object per line)")
    return rows


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true or false",
        dict: "an object",
        list: "a list",
        type(None): "null",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # JSON true is not an integer
        return bool in kinds
    if isinstance(value, int) and float in kinds:
        return True
    return isinstance(value, kinds)


def field(
    obj: Mapping[str, Any],
    key: str,
    where: str,
    kinds: type | tuple[type, ...],
    *,
    default: Any = _REQUIRED,
    choices: Iterable[Any] | None = None,
    label: str | None = None,
) -> Any:
    """``obj[key]`` checked against ``kinds`` (and ``choices``).

    Args:
      obj: a decoded JSON object.
      key: the field.
      where: ``path:line`` for the message.
      kinds: allowed Python types (``float`` admits integers, ``int`` refuses
        booleans; ``type(None)`` admits null).
      default: returned when the key is absent; without it the key is required.
      choices: the allowed values.
      label: the field's name in messages (default ``key``), e.g.
        ``messages[2].role``.

    Raises:
      DataError: ``where: field 'LABEL' is missing`` / ``must be ...``.
    """
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    label = label or key
    if key not in obj:
        if default is _REQUIRED:
            want = _kind_name(kinds) if choices is None else _choices(choices)
            raise DataError(f"{where}: field '{label}' is missing (expected {want})")
        return default
    value = obj[key]
    if not _is(value, kinds):
        got = json_type(value)
        if value is not None and not isinstance(value, bool):
            got += f" {_short(value)}"
        raise DataError(
            f"{where}: field '{label}' must be {_kind_name(kinds)}, got {got}"
        )
    if choices is not None and value not in tuple(choices):
        raise DataError(
            f"{where}: field '{label}' must be {_choices(choices)}, got {_short(value)}"
        )
    return value


def _choices(choices: Iterable[Any]) -> str:
    return "one of " + ", ".join(repr(c) for c in choices)


def check_encodable(text: str, where: str) -> bytes:
    """``text`` as UTF-8 bytes.

    Raises:
      DataError: ``where: ... lone surrogate`` when it cannot be encoded.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        bad = text[e.start : e.end]
        context = text[max(0, e.start - 20) : e.start]
        raise DataError(
            f"{where}: a string holds a lone surrogate U+{ord(bad[0]):04X} "
            f"(not valid UTF-8 text), after {context!r}"
        ) from None


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[Any]:
    """A binary file that appears at ``path`` only if the block completes.

    The data goes to ``.NAME.tmp-XXXXXXXX`` in the same folder (so the rename
    stays on one file system), is flushed to disk, then replaces ``path``. On
    any exception the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    # os.open with 0o666 keeps the umask's permissions (mkstemp would give 0600).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` through :func:`atomic_open`."""
    data = check_encodable(text, str(path))
    with atomic_open(path) as f:
        f.write(data)


def write_jsonl_atomic(path: str | Path, rows: Iterable[Any]) -> int:
    """Writes one JSON line per row (``str`` rows are taken as ready-made JSON
    lines) through :func:`atomic_open`; returns the number of lines.

    Raises:
      DataError: ``path:line: ...`` for a row that holds a lone surrogate or
        NaN/Infinity; nothing is then written.
    """
    n = 0
    with atomic_open(path) as f:
        for n, row in enumerate(rows, 1):
            where = f"{path}:{n}"
            if isinstance(row, str):
                line = row
            else:
                try:
                    line = json.dumps(row, ensure_ascii=False, allow_nan=False)
                except ValueError as e:
                    raise DataError(f"{where}: {e}") from None
            if "\n" in line:
                raise DataError(f"{where}: a JSON line must not contain a newline")
            f.write(check_encodable(line, where) + b"\n")
    return n
