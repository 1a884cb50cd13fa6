"""A response under construction, and how it is written out as text.

Constraint planners (:mod:`experiments.world.constraints`) edit a :class:`Draft`;
:func:`render` then lays it out in a fixed order (sections, paragraphs,
bullets, title, repeated request, postscript, end phrase, quotes, commas,
case), so each constraint knows what the others will do to its text.
"""

from __future__ import annotations

import dataclasses
import json

MODES = ("text", "json", "two", "choice")


@dataclasses.dataclass
class Draft:
    """Everything a constrained response is made of.

    Attributes:
      topic: the topic phrase the request is about.
      paragraphs: sentences per paragraph (at least two paragraphs).
      mode: "text" (paragraphs), "json" (the sentences as a JSON object in a
        fenced block), "two" (paragraph 0 and paragraph 1 as two answers
        split by ``******``) or "choice" (a fixed yes/no/maybe line first).
      bullets: lines written as ``* item`` at the end of the last paragraph.
      splitter: when set, paragraph i opens with ``"{splitter} {i}"``.
      stars: paragraphs separated by ``***`` instead of blank lines.
      title: written as ``<<title>>`` on the first line.
      repeat: the request to write first, word for word.
      postscript: the whole postscript line (``P.S. ...``).
      end: the phrase the response ends with.
      quote: wrap everything in double quotes.
      no_comma: drop every comma.
      case: "upper", "lower" or None.
      choice: the line a "choice" response starts with.
      spare: unused sentences on the topic, for planners that need more.
    """

    topic: str
    paragraphs: list[list[str]]
    mode: str = "text"
    bullets: list[str] = dataclasses.field(default_factory=list)
    splitter: str | None = None
    stars: bool = False
    title: str | None = None
    repeat: str | None = None
    postscript: str | None = None
    end: str | None = None
    quote: bool = False
    no_comma: bool = False
    case: str | None = None
    choice: str | None = None
    spare: list[str] = dataclasses.field(default_factory=list)


def _body(d: Draft) -> str:
    if d.mode == "json":
        obj = {"topic": d.topic, "points": [s for p in d.paragraphs for s in p]}
        text = json.dumps(obj, ensure_ascii=False, indent=2)
        return f"```json\n{text}\n```"
    if d.mode == "two":
        return " ".join(d.paragraphs[0]) + "\n******\n" + " ".join(d.paragraphs[1])
    if d.mode == "choice":
        return f"{d.choice} " + " ".join(d.paragraphs[0])
    paras = [" ".join(p) for p in d.paragraphs]
    if d.splitter:
        paras = [f"{d.splitter} {i}\n{p}" for i, p in enumerate(paras, 1)]
    if d.bullets:
        paras[-1] += "".join(f"\n* {b}" for b in d.bullets)
    return ("\n***\n" if d.stars else "\n\n").join(paras)


def render(d: Draft) -> str:
    """The response text for a draft."""
    if d.mode not in MODES:
        raise ValueError(f"unknown draft mode {d.mode!r}; have {MODES}")
    text = _body(d)
    if d.title:
        text = f"<<{d.title}>>\n{text}"
    if d.repeat:
        text = f"{d.repeat}\n{text}"
    if d.postscript:
        text = f"{text}\n{d.postscript}"
    if d.end:
        text = f"{text} {d.end}"
    if d.quote:
        text = f'"{text}"'
    if d.no_comma:
        text = text.replace(",", "")
    if d.case == "upper":
        text = text.upper()
    elif d.case == "lower":
        text = text.lower()
    return text
