"""Reading YAML and JSON files with the line of every key, for error messages.

Each parser returns ``(ok, data, Doc)``: the parsed data and a :class:`Doc` that
maps key paths (``("hooks", 2, "params", "max_chars")``) to 1-based lines and
appends ``path:line: message`` strings to a shared error list. Syntax errors are
reported with the parser's line; no exception escapes for any file content.
"""

from __future__ import annotations

import bisect
import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from hat_jax.printable import shown

Key = tuple[Any, ...]  # a path of keys and indices into a parsed document
MAX_FILE_BYTES = 1_000_000  # a harness file; the prompt holds them all
REGULAR = "harness files must be regular files inside the folder"
_WS = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a fifo"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_NUMBER_TAGS = (_INT_TAG, _FLOAT_TAG)
# Never follow a link at the last step; never wait on a fifo swapped in late.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Doc:
    """One parsed file: where each key path starts, and the shared error list."""

    def __init__(self, file: Path, lines: dict[Key, int], errors: list[str]):
        self.file, self.lines, self.errors = file, lines, errors

    def line(self, path: Key) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)

    def err(self, path: Key, msg: str) -> None:
        self.errors.append(f"{shown(self.file)}:{self.line(path)}: {msg}")


def kind_of(path: Path) -> str | None:
    """What ``path`` itself is (``"a regular file"``, ``"a folder"``, ``"a symbolic
    link"``, ``"a fifo"``, ...), links not followed; None if nothing is there."""
    try:
        return _kind(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return f"unreadable ({e.strerror or e})"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "an odd file")


def refusal(path: Path, kind: str, want: str = "a regular file") -> str:
    """The error for an entry of the wrong kind: a link, a fifo, a device, ..."""
    if kind == "a symbolic link":
        return f"{shown(path)}:1: is a symbolic link ({REGULAR})"
    return f"{shown(path)}:1: is {kind}, expected {want} ({REGULAR})"


def _read_bytes(file: Path, errors: list[str]) -> bytes | None:
    """At most MAX_FILE_BYTES of a regular file, never through a link."""
    try:
        fd = os.open(file, _OPEN_FLAGS)
    except OSError as e:
        if e.errno == errno.ELOOP:
            errors.append(refusal(file, "a symbolic link"))
        else:
            errors.append(f"{shown(file)}:1: cannot read the file ({e.strerror or e})")
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # checked on the open file: no race
            errors.append(refusal(file, _kind(st.st_mode)))
            return None
        data = f.read(MAX_FILE_BYTES + 1) if st.st_size <= MAX_FILE_BYTES else b""
    if st.st_size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
        size = max(st.st_size, len(data))
        errors.append(
            f"{shown(file)}:1: file too large ({size:,} bytes; a harness file "
            f"holds at most {MAX_FILE_BYTES:,})"
        )
        return None
    return data


def read_text(file: Path, errors: list[str]) -> str | None:
    """UTF-8 text with ``\\n`` line ends and no BOM, or None (error reported).

    Refuses links, fifos, devices and files over ``MAX_FILE_BYTES``.
    """
    data = _read_bytes(file, errors)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        errors.append(f"{shown(file)}:{line}: expected UTF-8 text")
        return None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


class _Loader(yaml.SafeLoader):
    """Refuses anchors and aliases: an alias repeats a subtree without repeating
    its text, so a few KB can expand to a prompt of gigabytes (``dump_harness``
    never writes them).

    Numbers are plain decimal: YAML 1.1 reads ``1:30`` as 90 (base 60), ``010``
    as 8, ``0x10`` as 16 and ``1_000`` as 1000, none of which a harness author
    means; here each stays a string, which the field checks then refuse.
    """

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in _NUMBER_TAGS]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
            raise yaml.composer.ComposerError(
                None,
                None,
                f"{sign}{shown(anchor)}: anchors and aliases are not allowed in "
                "harness files (write the value out)",
                event.start_mark,
            )
        return super().compose_node(parent, index)


_Loader.add_implicit_resolver(
    _INT_TAG, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789")
)
_Loader.add_implicit_resolver(
    _FLOAT_TAG,
    re.compile(
        r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


def parse_yaml(
    text: str, file: Path, errors: list[str], offset: int = 0
) -> tuple[bool, Any, Doc]:
    """Safe-loads one YAML document; ``offset`` lines precede ``text`` in ``file``.

    Anchors, aliases and text that is not valid Unicode (a ``"\\ud800"`` escape)
    are refused with the line they are on.
    """
    doc, loader = Doc(file, {(): 1 + offset}, errors), None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = (mark.line if mark else 0) + 1 + offset
        errors.append(f"{shown(file)}:{line}: invalid YAML: {e.problem or e.context}")
        return False, None, doc
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 + offset
        errors.append(f"{shown(file)}:{line}: invalid YAML: {e.reason}")
        return False, None, doc
    except Exception as e:  # PyYAML's constructors raise plain errors on odd input
        errors.append(f"{shown(file)}:{1 + offset}: invalid YAML: {str(e)[:120]}")
        return False, None, doc
    finally:
        if loader is not None:
            loader.dispose()
    _yaml_lines(node, offset, doc)
    return _values_ok(data, doc), data, doc


def _values_ok(data: Any, doc: Doc) -> bool:
    """Reports every string (key or value) holding a lone surrogate, which no
    UTF-8 file, prompt or tokenizer can hold, and every JSON number out of
    float range; True if there is none."""
    n, stack = len(doc.errors), [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _OutOfRange):
            doc.err(
                path,
                f"number {shown(value.text[:24])} is out of range (expected a "
                "finite number)",
            )
        elif isinstance(value, str) and (m := _SURROGATE.search(value)):
            doc.err(
                path,
                f"text cannot be encoded as UTF-8: lone surrogate {m.group()!r} "
                "(an unpaired \\u escape; in YAML a character above U+FFFF is one "
                "\\U0001F600-style escape)",
            )
        elif isinstance(value, dict):
            items = list(value.items())
            for k, _ in items:
                if isinstance(k, str) and (m := _SURROGATE.search(k)):
                    doc.err(
                        (*path, k), f"key cannot be encoded as UTF-8: {m.group()!r}"
                    )
            stack.extend(((v, (*path, k)) for k, v in reversed(items)))
        elif isinstance(value, set | frozenset):  # YAML !!set: no line per item
            stack.extend((v, path) for v in value)
        elif isinstance(value, list):
            stack.extend(((v, (*path, i)) for i, v in reversed(list(enumerate(value)))))
    return len(doc.errors) == n


def _yaml_lines(node: Any, offset: int, doc: Doc) -> None:
    """Fills ``doc.lines`` from the composed nodes; reports duplicate keys."""
    stack, seen = [(node, ())], set()
    while stack:
        n, path = stack.pop()
        if n is None or id(n) in seen or len(path) > 16:  # shared nodes, nesting
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            keys = set()
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode):
                    continue
                line = k.start_mark.line + 1 + offset
                if k.value in keys and k.value != "<<":
                    doc.errors.append(
                        f"{shown(doc.file)}:{line}: duplicate key {k.value!r}"
                    )
                keys.add(k.value)
                doc.lines[(*path, k.value)] = line
                stack.append((v, (*path, k.value)))
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                doc.lines[(*path, i)] = v.start_mark.line + 1 + offset
                stack.append((v, (*path, i)))


class _Constant(ValueError):
    def __init__(self, word: str):
        super().__init__(word)
        self.word = word


def _no_constant(word: str) -> Any:
    raise _Constant(word)


class _OutOfRange:
    """A JSON number that is no finite float (``1e400``), kept as written until
    it is reported with the line of its key."""

    def __init__(self, text: str):
        self.text = text


def _finite(text: str) -> float | _OutOfRange:
    value = float(text)
    return value if math.isfinite(value) else _OutOfRange(text)


def parse_json(text: str, file: Path, errors: list[str]) -> tuple[bool, Any, Doc]:
    """Parses strict JSON (no NaN/Infinity, numbers finite, no lone surrogates);
    reports duplicate keys."""
    doc = Doc(file, {(): 1}, errors)
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as e:
        errors.append(f"{shown(file)}:{e.lineno}: invalid JSON: {e.msg}")
        return False, None, doc
    except _Constant as e:
        line = text.count("\n", 0, max(text.find(e.word), 0)) + 1
        errors.append(
            f"{shown(file)}:{line}: invalid JSON: {e.word} is not a JSON value"
        )
        return False, None, doc
    except (ValueError, RecursionError) as e:  # huge integers, deep nesting
        errors.append(f"{shown(file)}:1: invalid JSON: {str(e)[:120]}")
        return False, None, doc
    try:
        _json_lines(text, doc)
    except (IndexError, ValueError, RecursionError):  # only line numbers are lost
        pass
    return _values_ok(data, doc), data, doc


def _json_lines(text: str, doc: Doc) -> None:
    """Fills ``doc.lines`` from JSON text that ``json.loads`` accepted."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    decoder = json.JSONDecoder()

    def at(i: int) -> int:
        return bisect.bisect_right(starts, i)

    def value(i: int, path: Key, depth: int) -> int:
        i = _WS.match(text, i).end()
        if text[i] not in "{[" or depth >= 16:
            return decoder.raw_decode(text, i)[1]
        close, n, keys = ("}" if text[i] == "{" else "]"), 0, set()
        i = _WS.match(text, i + 1).end()
        while text[i] != close:
            if close == "}":
                key, end = json.decoder.scanstring(text, i + 1)
                if key in keys:
                    doc.errors.append(
                        f"{shown(doc.file)}:{at(i)}: duplicate key {key!r}"
                    )
                keys.add(key)
                sub = (*path, key)
                doc.lines[sub] = at(i)
                i = _WS.match(text, end).end() + 1  # past the colon
            else:
                sub, n = (*path, n), n + 1
                doc.lines[sub] = at(i)
            i = _WS.match(text, value(i, sub, depth + 1)).end()
            if text[i] == ",":
                i = _WS.match(text, i + 1).end()
        return i + 1

    value(0, (), 0)
