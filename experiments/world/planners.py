"""How each constraint edits a draft (``plan``) or is read off a response.

A plan function takes ``(draft, rng)``, edits the draft so its constraint will
hold once rendered, and returns the checker's kwargs. A measure function takes
``(response, rng)`` and returns kwargs that the finished response satisfies,
with a little random slack. Registered in :mod:`experiments.world.constraints`.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import numpy as np

from experiments.world import banks
from experiments.world.draft import Draft
from hat_jax.eval.ifeval import text as iftext
from hat_jax.eval.ifeval.checks_format import CONSTRAINED_OPTIONS
from hat_jax.eval.ifeval.registry import AT_LEAST, LESS_THAN

Kwargs = dict[str, Any]


def _some_paragraph(d: Draft, rng: np.random.Generator) -> list[str]:
    # "two" shows only paragraphs 0 and 1, "choice" only paragraph 0.
    return d.paragraphs[0 if d.mode == "choice" else int(rng.integers(2))]


def _add_sentences(d: Draft, rng, sentences: list[str]) -> None:
    for s in sentences:
        p = _some_paragraph(d, rng)
        p.insert(int(rng.integers(1, len(p) + 1)), s)


_KEYWORD_LINES = (
    "Think about the {k} as well.",
    "The {k} is worth a look.",
    "Keep the {k} in mind.",
    "A {k} can make a difference.",
)


def existence(d, rng):
    words = banks.sample(rng, banks.RARE_WORDS, int(rng.integers(1, 3)))
    _add_sentences(d, rng, [f"Bring a {w} along if you can." for w in words])
    return {"keywords": words}


def frequency(d, rng):
    k, n = banks.pick(rng, banks.RARE_WORDS), int(rng.integers(2, 5))
    at_least = bool(rng.integers(2))
    times = n if at_least else int(rng.integers(0, n))
    lines = [banks.pick(rng, _KEYWORD_LINES).format(k=k) for _ in range(times)]
    _add_sentences(d, rng, lines)
    return {
        "keyword": k,
        "frequency": n,
        "relation": AT_LEAST if at_least else LESS_THAN,
    }


def placeholders(d, rng):
    marks = banks.sample(rng, banks.PLACEHOLDERS, int(rng.integers(1, 4)))
    _add_sentences(d, rng, [f"Write the {m[1:-1]} here: {m}." for m in marks])
    return {"num_placeholders": len(marks)}


def highlights(d, rng):
    n = int(rng.integers(1, 4))
    spots = [(p, i) for p in d.paragraphs[:2] for i in range(len(p))]
    for k in rng.permutation(len(spots))[:n]:
        p, i = spots[k]
        words = p[i].split(" ")
        j = int(rng.integers(1, len(words)))  # never the first word of a line
        words[j] = f"*{words[j]}*"
        p[i] = " ".join(words)
    return {"num_highlights": min(n, len(spots))}


def bullets(d, rng):
    a, b = rng.permutation(["check the tools", "ask for advice", "rest well"])[:2]
    items = [f"Remember to {a}.", f"Try to {b}.", "Note what you learned.", "Enjoy it."]
    n = int(rng.integers(2, 5))
    d.bullets = items[:n]
    return {"num_bullets": n}


def paragraphs(d, rng):
    n = int(rng.integers(2, 5))
    while len(d.paragraphs) < n:
        d.paragraphs.append([d.spare.pop(), d.spare.pop()])
    del d.paragraphs[n:]
    d.stars = True
    return {"num_paragraphs": n}


_FIRST_WORDS = ("Remember", "Today", "Honestly", "Overall", "Finally", "Next")


def nth_first_word(d, rng):
    kw = paragraphs(d, rng)
    d.stars = False
    nth = int(rng.integers(1, kw["num_paragraphs"] + 1))
    word = banks.pick(rng, _FIRST_WORDS)
    first = d.paragraphs[nth - 1][0]
    d.paragraphs[nth - 1][0] = f"{word} {first[0].lower()}{first[1:]}"
    return {**kw, "nth_paragraph": nth, "first_word": word.lower()}


def sections(d, rng):
    d.splitter = banks.pick(rng, banks.SECTION_SPLITTERS)
    return {"section_spliter": d.splitter, "num_sections": len(d.paragraphs)}


def title(d, rng):
    d.title = f"{banks.pick(rng, banks.TITLE_WORDS)} on {d.topic.title()}"
    return {}


def postscript(d, rng):
    marker = banks.pick(rng, ("P.S.", "P.P.S"))
    d.postscript = f"{marker} I hope you enjoy {d.topic}."
    return {"postscript_marker": marker}


def end_phrase(d, rng):
    d.end = banks.pick(rng, banks.END_PHRASES)
    return {"end_phrase": d.end}


def set_fields(**fields) -> Callable[[Draft, Any], Kwargs]:
    def plan(d: Draft, rng) -> Kwargs:
        for k, v in fields.items():
            setattr(d, k, v)
        return {}

    return plan


def choice(d, rng):
    d.mode, d.choice = "choice", banks.pick(rng, CONSTRAINED_OPTIONS)
    return {}


def count_measure(key: str, rel_key: str, count: Callable[[str], int]):
    def measure(response: str, rng) -> Kwargs:
        n, slack = count(response), int(rng.integers(0, 3))
        if n >= 1 and rng.integers(2):
            return {key: max(1, n - slack), rel_key: AT_LEAST}
        return {key: n + 1 + slack, rel_key: LESS_THAN}

    return measure


def letter(response: str, rng) -> Kwargs:
    ch = banks.pick(rng, string.ascii_lowercase)
    kw = count_measure("let_frequency", "let_relation", lambda r: r.lower().count(ch))
    return {"letter": ch, **kw(response, rng)}


def capitals(r: str) -> int:
    return sum(1 for w in iftext.word_tokens(r) if w.isupper())
