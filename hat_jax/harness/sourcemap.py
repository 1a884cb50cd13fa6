"""Reading YAML and JSON files with the line of every key, for error messages.

Each parser returns ``(ok, data, Doc)``: the parsed data and a :class:`Doc` that
maps key paths (``("hooks", 2, "params", "max_chars")``) to 1-based lines and
appends ``path:line: message`` strings to a shared error list. Syntax errors are
reported with the parser's line; no exception escapes for any file content.
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path
from typing import Any

import yaml

Key = tuple[Any, ...]  # a path of keys and indices into a parsed document
_WS = re.compile(r"[ \t\n\r]*")


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
        self.errors.append(f"{self.file}:{self.line(path)}: {msg}")


def read_text(file: Path, errors: list[str]) -> str | None:
    """UTF-8 text with ``\\n`` line ends and no BOM, or None (error reported)."""
    try:
        data = file.read_bytes()
    except OSError as e:
        errors.append(f"{file}:1: cannot read the file ({e.strerror or e})")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        errors.append(f"{file}:{line}: expected UTF-8 text")
        return None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def parse_yaml(
    text: str, file: Path, errors: list[str], offset: int = 0
) -> tuple[bool, Any, Doc]:
    """Safe-loads one YAML document; ``offset`` lines precede ``text`` in ``file``."""
    doc, loader = Doc(file, {(): 1 + offset}, errors), None
    try:
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = (mark.line if mark else 0) + 1 + offset
        errors.append(f"{file}:{line}: invalid YAML: {e.problem or e.context}")
        return False, None, doc
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 + offset
        errors.append(f"{file}:{line}: invalid YAML: {e.reason}")
        return False, None, doc
    except Exception as e:  # PyYAML's constructors raise plain errors on odd input
        errors.append(f"{file}:{1 + offset}: invalid YAML: {str(e)[:120]}")
        return False, None, doc
    finally:
        if loader is not None:
            loader.dispose()
    _yaml_lines(node, offset, doc)
    return True, data, doc


def _yaml_lines(node: Any, offset: int, doc: Doc) -> None:
    """Fills ``doc.lines`` from the composed nodes; reports duplicate keys."""
    stack, seen = [(node, ())], set()
    while stack:
        n, path = stack.pop()
        if n is None or id(n) in seen or len(path) > 16:  # aliases, deep nesting
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            keys = set()
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode):
                    continue
                line = k.start_mark.line + 1 + offset
                if k.value in keys and k.value != "<<":
                    doc.errors.append(f"{doc.file}:{line}: duplicate key {k.value!r}")
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


def parse_json(text: str, file: Path, errors: list[str]) -> tuple[bool, Any, Doc]:
    """Parses strict JSON (no NaN/Infinity); reports duplicate keys."""
    doc = Doc(file, {(): 1}, errors)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        errors.append(f"{file}:{e.lineno}: invalid JSON: {e.msg}")
        return False, None, doc
    except _Constant as e:
        line = text.count("\n", 0, max(text.find(e.word), 0)) + 1
        errors.append(f"{file}:{line}: invalid JSON: {e.word} is not a JSON value")
        return False, None, doc
    except (ValueError, RecursionError) as e:  # huge integers, deep nesting
        errors.append(f"{file}:1: invalid JSON: {str(e)[:120]}")
        return False, None, doc
    try:
        _json_lines(text, doc)
    except (IndexError, ValueError, RecursionError):  # only line numbers are lost
        pass
    return True, data, doc


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
                    doc.errors.append(f"{doc.file}:{at(i)}: duplicate key {key!r}")
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
