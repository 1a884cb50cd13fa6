"""Template paraphrase: swap instruction phrasing, keep every fact.

Phrases come in classes of interchangeable wordings (``never`` / ``do not
ever``; ``if`` / ``when``; ``customer service`` / ``the support team``...).
Imperative classes only apply at the start of a sentence or list item, where
the swap stays grammatical. Protected spans (tool names, ``load_skill(...)``,
quotes, numbers, identifiers; see :mod:`augment.text`) are never touched, so
facts, tool names and numbers survive by construction.
"""

from __future__ import annotations

import re

import numpy as np

from augment.text import PROTECTED

# Swappable anywhere (lower-case; matched case-insensitively, case kept).
ANYWHERE: tuple[tuple[str, ...], ...] = (
    ("if", "when"),
    ("for example", "for instance"),
    ("exactly", "precisely", "word for word"),
    ("kindly", "politely", "gently"),
    ("warmly", "cordially", "with warmth"),
    ("briefly", "concisely", "in a few words"),
    ("short", "brief"),
    ("suggest", "propose", "recommend"),
    ("customer service", "the support team", "the service desk"),
    ("sold out", "out of stock"),
    ("viewer", "audience member"),
    ("viewers", "audience members"),
    ("item", "product"),
    ("items", "products"),
    ("returned", "reported"),
    ("plainly", "clearly", "directly"),
    ("right now", "at the moment", "currently"),
    ("make sure", "ensure", "see to it"),
    ("only", "solely"),
    ("answer", "reply"),
    ("look up", "fetch", "retrieve"),
    ("omit", "leave out"),
    ("optionally", "if wanted"),
    ("务必", "必须", "一定要"),
    ("不要", "切勿", "不可"),
    ("如果", "若", "假如"),
    ("观众", "用户"),
)
# Imperatives: swapped only at the start of a sentence or a list item.
AT_START: tuple[tuple[str, ...], ...] = (
    ("never", "do not ever", "you must never"),
    ("always", "make sure to always", "be sure to always"),
    ("do not", "don't", "you must not"),
    ("call", "invoke"),
    ("give", "provide", "state"),
    ("check", "verify", "look up"),
    ("get", "fetch", "retrieve", "look up"),
)
_CLASSES: dict[str, tuple[tuple[str, ...], bool]] = {}
for group, start in [(g, False) for g in ANYWHERE] + [(g, True) for g in AT_START]:
    for phrase in group:
        _CLASSES.setdefault(phrase, (group, start))
_ALTS = sorted(_CLASSES, key=len, reverse=True)
_PHRASE = re.compile(
    r"(?<![A-Za-z'])(" + "|".join(re.escape(a) for a in _ALTS) + r")(?![A-Za-z'])",
    re.IGNORECASE,
)
_ITEM_START = re.compile(r"(?:^|\n)[ \t]*(?:[-*+•]|\d+[.)]|\(\d+\)|Step \d+:)?[ \t]*$")


def _at_start(text: str, pos: int) -> bool:
    head = text[:pos]
    if _ITEM_START.search(head):
        return True
    stripped = head.rstrip()
    return stripped.endswith((".", ";", "!", "?", ":", "。", "；", "！", "？", "："))


def _article_ok(head: str, new: str) -> bool:
    """Keeps "a"/"an" agreeing with the word that follows it."""
    m = re.search(r"(?<![A-Za-z])(an?)\s+$", head, re.IGNORECASE)
    if not m:
        return True
    vowel = new[:1].lower() in "aeiou"
    return vowel == (m.group(1).lower() == "an")


def _keep_case(src: str, new: str) -> str:
    if src[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def paraphrase(text: str, rng: np.random.Generator, p: float = 0.6) -> str:
    """Each matched phrase swapped for another of its class with probability p."""
    spans = [(m.start(), m.end()) for m in PROTECTED.finditer(text)]
    out, pos = [], 0
    for m in _PHRASE.finditer(text):
        a, b = m.span()
        if any(s < b and a < e for s, e in spans):
            continue
        group, start = _CLASSES[m.group(0).lower()]
        if start and not _at_start(text, a):
            continue
        if rng.random() >= p:
            continue
        others = [g for g in group if g != m.group(0).lower()]
        new = others[int(rng.integers(len(others)))]
        if not _article_ok(text[:a], new):
            continue
        out += [text[pos:a], _keep_case(m.group(0), new)]
        pos = b
    out.append(text[pos:])
    return "".join(out)
