"""Planners for the IFEval instruction types of ``hat_jax.eval.ifeval``.

Each planner is registered under the checker's instruction id with the
*slots* of the response it takes over (two constraints that share a slot are
never combined), a ``plan(draft, rng) -> kwargs`` that edits the draft so the
constraint will hold, and a ``phrase(kwargs) -> str`` for the prompt. A
*measured* constraint (counts of words, sentences, letters, capitals) plans
nothing: its kwargs are read off the finished response by ``measure``.
The prompt wording is ours, not IFEval's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from experiments.world import banks
from experiments.world import planners as pl
from experiments.world.draft import Draft
from hat_jax.eval.ifeval import text as iftext
from hat_jax.eval.ifeval.checks_format import CONSTRAINED_OPTIONS
from hat_jax.eval.ifeval.registry import AT_LEAST

Kwargs = dict[str, Any]
# Slots a whole-response mode takes: nothing else may shape the layout.
_WHOLE = frozenset(
    {"layout", "bullets", "title", "start", "end", "ps", "sections", "highlight"}
)
_MEASURED = frozenset({"sentences", "words", "letter", "capitals"})


@dataclasses.dataclass(frozen=True)
class Planner:
    slots: frozenset[str]
    phrase: Callable[[Kwargs], str]
    plan: Callable[[Draft, np.random.Generator], Kwargs] | None = None
    measure: Callable[[str, np.random.Generator], Kwargs] | None = None


PLANNERS: dict[str, Planner] = {}


def register(iid: str, slots, phrase, *, plan=None, measure=None) -> None:
    PLANNERS[iid] = Planner(frozenset(slots), phrase, plan, measure)


def _rel(kw: Kwargs, key: str, rel: str, noun: str) -> str:
    how = "at least" if kw[rel] == AT_LEAST else "fewer than"
    return f"{how} {kw[key]} {noun}"


register(
    "keywords:existence",
    {"kw_exist"},
    lambda kw: (
        "Make sure to mention " + " and ".join(f"'{w}'" for w in kw["keywords"]) + "."
    ),
    plan=pl.existence,
)
register(
    "keywords:frequency",
    {"kw_freq"},
    lambda kw: (
        f"Use the word '{kw['keyword']}' {_rel(kw, 'frequency', 'relation', 'times')}."
    ),
    plan=pl.frequency,
)
register(
    "keywords:forbidden_words",
    {"forbidden"},
    lambda kw: (
        "Avoid the words " + ", ".join(f"'{w}'" for w in kw["forbidden_words"]) + "."
    ),
    plan=lambda d, rng: {"forbidden_words": banks.sample(rng, banks.FORBIDDEN, 2)},
)
register(
    "keywords:letter_frequency",
    {"letter"},
    lambda kw: (
        "The letter "
        f"'{kw['letter']}' must appear "
        f"{_rel(kw, 'let_frequency', 'let_relation', 'times')}."
    ),
    measure=pl.letter,
)
register(
    "language:response_language",
    {"language"},
    lambda kw: "Answer in English only.",
    plan=lambda d, rng: {"language": "en"},
)
register(
    "length_constraints:number_sentences",
    {"sentences"},
    lambda kw: f"Write {_rel(kw, 'num_sentences', 'relation', 'sentences')}.",
    measure=pl.count_measure("num_sentences", "relation", iftext.count_sentences),
)
register(
    "length_constraints:number_words",
    {"words"},
    lambda kw: f"Use {_rel(kw, 'num_words', 'relation', 'words')}.",
    measure=pl.count_measure("num_words", "relation", iftext.count_words),
)
register(
    "length_constraints:number_paragraphs",
    {"layout"},
    lambda kw: (
        "Write "
        f"exactly {kw['num_paragraphs']} paragraphs and separate them with the "
        "markdown divider ***."
    ),
    plan=pl.paragraphs,
)
register(
    "length_constraints:nth_paragraph_first_word",
    {"layout", "title", "start"},
    lambda kw: (
        f"Write exactly {kw['num_paragraphs']} paragraphs separated by "
        f"blank lines; paragraph {kw['nth_paragraph']} must begin with the word "
        f"'{kw['first_word']}'."
    ),
    plan=pl.nth_first_word,
)
register(
    "change_case:capital_word_frequency",
    {"case", "capitals"},
    lambda kw: (
        "Use "
        + _rel(
            kw, "capital_frequency", "capital_relation", "words written in ALL CAPITALS"
        )
        + "."
    ),
    measure=pl.count_measure("capital_frequency", "capital_relation", pl.capitals),
)
register(
    "change_case:english_capital",
    {"case"},
    lambda kw: "Write the whole answer in English capital letters.",
    plan=pl.set_fields(case="upper"),
)
register(
    "change_case:english_lowercase",
    {"case"},
    lambda kw: "Write the whole answer in English lowercase letters, with no capitals.",
    plan=pl.set_fields(case="lower"),
)
register(
    "punctuation:no_comma",
    {"comma"},
    lambda kw: "Do not use any commas.",
    plan=pl.set_fields(no_comma=True),
)
register(
    "detectable_content:number_placeholders",
    {"placeholders"},
    lambda kw: (
        f"Include at least {kw['num_placeholders']} placeholder"
        f"{'s' if kw['num_placeholders'] > 1 else ''} in square brackets, like "
        "[name]."
    ),
    plan=pl.placeholders,
)
register(
    "detectable_content:postscript",
    {"ps"},
    lambda kw: f"Add a postscript starting with {kw['postscript_marker']} at the end.",
    plan=pl.postscript,
)
register(
    "detectable_format:number_bullet_lists",
    {"bullets"},
    lambda kw: (
        f"Include exactly {kw['num_bullets']} bullet points written as '* item'."
    ),
    plan=pl.bullets,
)
register(
    "detectable_format:constrained_response",
    _WHOLE | {"case", "json"},
    lambda kw: (
        "Start your answer with one of: "
        + ", ".join(f"'{o}'" for o in CONSTRAINED_OPTIONS)
        + "."
    ),
    plan=pl.choice,
)
register(
    "detectable_format:number_highlighted_sections",
    {"highlight"},
    lambda kw: (
        f"Highlight at least {kw['num_highlights']} words with markdown, like *this*."
    ),
    plan=pl.highlights,
)
register(
    "detectable_format:multiple_sections",
    {"layout", "sections", "case"},
    lambda kw: (
        f"Split the answer into {kw['num_sections']} sections, each "
        f"starting with '{kw['section_spliter']} N'."
    ),
    plan=pl.sections,
)
register(
    "detectable_format:json_format",
    _WHOLE | {"comma", "placeholders", "json"} | _MEASURED,
    lambda kw: "Give the whole answer as JSON in a markdown code block.",
    plan=pl.set_fields(mode="json"),
)
register(
    "detectable_format:title",
    {"title"},
    lambda kw: (
        "Give the answer a title wrapped in double angle brackets, like <<my title>>."
    ),
    plan=pl.title,
)
register(
    "combination:two_responses",
    _WHOLE | {"json"},
    lambda kw: "Give two different answers separated by six asterisks: ******.",
    plan=pl.set_fields(mode="two"),
)
# Repeating the prompt repeats its commas, keywords and forbidden words too.
_REPEAT = {"start", "json", "comma", "forbidden", "kw_freq"}
register(
    "combination:repeat_prompt",
    _REPEAT | _MEASURED,
    lambda kw: "First repeat the request above word for word, then answer it.",
    plan=lambda d, rng: {},
)
register(
    "startend:end_checker",
    {"end"},
    lambda kw: f"End your answer with the exact phrase '{kw['end_phrase']}'.",
    plan=pl.end_phrase,
)
register(
    "startend:quotation",
    {"start", "end"},
    lambda kw: "Wrap your entire answer in double quotation marks.",
    plan=pl.set_fields(quote=True),
)
