"""Skill bodies as paragraphs and lists of rules, for reorder and restyle ops.

``parse_body`` splits a body into blocks: plain text lines, or a run of list
items (bulleted or numbered, same indent, no blank line between). An item keeps
its continuation lines (and any nested list) with it, and an optional leading
label ("Stock: ...", "**Stock:** ...", "[Stock] ...", "Stock — ...").
``render_body`` writes blocks back with any marker, label style and wrapping;
parsing and rendering with the original style gives the body back.
"""

from __future__ import annotations

import dataclasses
import re

from augment.text import PROTECTED

BULLETS, NUMBERED = "bullets", "numbered"
_ITEM = re.compile(r"^([ \t]*)([-*+•]|\d+[.)]|\(\d+\)|Step \d+:)[ \t]+(\S.*)$")
_LABEL_WORDS = r"[A-Z][A-Za-z ,'/\-]{0,49}?"
_LABELS = (
    ("bold", re.compile(r"^\*\*([^*\n]{1,50}?):\*\*\s+(\S.*)$")),
    ("bracket", re.compile(r"^\[([^\]\n]{1,50})\]\s+(\S.*)$")),
    ("dash", re.compile(rf"^({_LABEL_WORDS}) — (\S.*)$")),
    ("keep", re.compile(rf"^({_LABEL_WORDS}):\s+(\S.*)$")),
)


def _template(marker: str) -> tuple[str, str]:
    if marker in "-*+•":
        return BULLETS, marker
    return NUMBERED, re.sub(r"\d+", "{n}", marker)


@dataclasses.dataclass
class Item:
    """One rule: its first line (after the marker) and continuation lines."""

    first: str
    rest: list[str]  # continuation lines, relative indentation kept
    label: str | None = None  # the label text, when the rule starts with one
    label_form: str = "keep"  # how the label was written
    label_style: str | None = None  # how to write it (None: as it was)

    def __post_init__(self) -> None:
        for form, pattern in _LABELS:
            m = pattern.match(self.first)
            if m and len(m.group(1).split()) <= 5:
                self.label, self.label_form, self.first = m.group(1), form, m.group(2)
                break

    def head(self) -> str:
        if self.label is None:
            return self.first
        style = self.label_style or self.label_form
        label = self.label.upper() if style == "upper" else self.label
        return {
            "bold": f"**{label}:** ",
            "bracket": f"[{label}] ",
            "dash": f"{label} — ",
        }.get(style, f"{label}: ") + self.first


@dataclasses.dataclass
class Block:
    kind: str  # "text" | BULLETS | NUMBERED
    lines: list[str] | None = None  # text blocks
    items: list[Item] | None = None  # list blocks
    indent: str = ""
    mark: str = ""  # "-" for bullets, "{n}." for numbered


def parse_body(body: str) -> list[Block]:
    lines = body.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _ITEM.match(lines[i])
        if not m:
            if blocks and blocks[-1].kind == "text":
                blocks[-1].lines.append(lines[i])
            else:
                blocks.append(Block("text", lines=[lines[i]]))
            i += 1
            continue
        indent, marker = m.group(1), m.group(2)
        kind, mark = _template(marker)
        block = Block(kind, items=[], indent=indent, mark=mark)
        while i < len(lines) and (m := _ITEM.match(lines[i])):
            if m.group(1) != indent or _template(m.group(2))[0] != kind:
                break
            col = len(indent) + len(m.group(2)) + 1
            first, rest = m.group(3), []
            i += 1
            while i < len(lines) and lines[i].strip():
                lead = len(lines[i]) - len(lines[i].lstrip())
                if lead <= len(indent):
                    break
                rest.append(lines[i][min(lead, col) :])
                i += 1
            block.items.append(Item(first, rest))
        blocks.append(block)
    return blocks


def _wrap(text: str, width: int, first_col: int, col: int) -> list[str]:
    """Greedy wrap at spaces outside protected spans."""
    spans = [(m.start(), m.end()) for m in PROTECTED.finditer(text)]
    words, pos = [], 0
    for j, c in enumerate(text):
        if c == " " and not any(a < j < b for a, b in spans):
            words.append(text[pos:j])
            pos = j + 1
    words.append(text[pos:])
    lines, cur, limit = [], "", width - first_col
    for w in words:
        if cur and len(cur) + 1 + len(w) > limit:
            lines.append(cur)
            cur, limit = w, width - col
        else:
            cur = f"{cur} {w}" if cur else w
    return [*lines, cur]


def render_body(blocks: list[Block], *, wrap: str = "keep", width: int = 80) -> str:
    """Writes blocks back; ``wrap`` is "keep", "unwrap" or "wrap" (at ``width``)."""
    out: list[str] = []
    for b in blocks:
        if b.kind == "text":
            out += b.lines
            continue
        for n, item in enumerate(b.items, 1):
            marker = b.mark if b.kind == BULLETS else b.mark.format(n=n)
            head = f"{b.indent}{marker} "
            pad = " " * len(head)
            nested = any(_ITEM.match(r) for r in item.rest)
            if wrap == "keep" or nested:
                out.append(head + item.head())
                out += [pad + r if r.strip() else r for r in item.rest]
                continue
            text = " ".join([item.head(), *(r.strip() for r in item.rest)])
            if wrap == "unwrap":
                out.append(head + text)
                continue
            lines = _wrap(text, width, len(head), len(pad))
            out += [head + lines[0]] + [pad + line for line in lines[1:]]
    return "\n".join(out)
