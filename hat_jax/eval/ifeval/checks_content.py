"""Checkers on what a response says: keywords, language, length, case, commas.

Keywords are used as regular expressions, unescaped and case-insensitive, as the
original IFEval does (so `keywords:frequency` also counts a keyword inside a
longer word, while `keywords:forbidden_words` matches whole words only); they
are compiled when the prompt is read and matched with a time bound
(`registry.Pattern`).
"""

from __future__ import annotations

import random
import re
import string

import regex

from hat_jax.eval.ifeval import text
from hat_jax.eval.ifeval.registry import (
    Pattern,
    check_count,
    check_relation,
    compare,
    register,
    value_shown,
)

# The original replaces a `letter` that is not a-z (two prompts ask for "#" and
# "!") with a random ASCII letter; we draw that letter from a fixed seed.
INVALID_LETTER_SEED = 0
# Words one keyword list may hold (IFEval's longest has 12).
MAX_WORDS = 100


def _words(instruction_id: str, name: str, words) -> list[str]:
    if (
        not isinstance(words, list | tuple)
        or not words
        or not all(isinstance(w, str) for w in words)
    ):
        raise ValueError(
            f"{instruction_id}: {name} must be a non-empty list of strings, got "
            f"{value_shown(words)}"
        )
    if len(words) > MAX_WORDS:
        raise ValueError(
            f"{instruction_id}: {name} has {len(words)} words, at most {MAX_WORDS}"
        )
    blank = [i for i, w in enumerate(words) if not w.strip()]
    if blank:
        raise ValueError(
            f"{instruction_id}: {name}[{blank[0]}] is blank "
            f"({value_shown(words[blank[0]])}); expected a word"
        )
    return list(words)


@register("keywords:existence")
def keyword_existence(*, keywords):
    iid = "keywords:existence"
    patterns = [
        Pattern(iid, "keyword", k, flags=regex.IGNORECASE)
        for k in _words(iid, "keywords", keywords)
    ]
    return lambda r: all(p.search(r) for p in patterns)


@register("keywords:frequency")
def keyword_frequency(*, keyword, frequency, relation):
    check_count("keywords:frequency", "frequency", frequency)
    check_relation("keywords:frequency", relation)
    if not isinstance(keyword, str) or not keyword.strip():
        raise ValueError(
            f"keywords:frequency: keyword must be a word, got {value_shown(keyword)}"
        )
    pattern = Pattern(
        "keywords:frequency", "keyword", keyword.strip(), flags=regex.IGNORECASE
    )
    return lambda r: compare(len(pattern.findall(r)), frequency, relation)


@register("keywords:forbidden_words")
def forbidden_words(*, forbidden_words):
    iid = "keywords:forbidden_words"
    patterns = [
        Pattern(iid, "forbidden word", w, rf"\b{w}\b", flags=regex.IGNORECASE)
        for w in _words(iid, "forbidden_words", forbidden_words)
    ]
    return lambda r: not any(p.search(r) for p in patterns)


@register("keywords:letter_frequency")
def letter_frequency(*, letter, let_frequency, let_relation):
    check_count("keywords:letter_frequency", "let_frequency", let_frequency)
    check_relation("keywords:letter_frequency", let_relation, "let_relation")
    if not isinstance(letter, str):
        raise ValueError(
            "keywords:letter_frequency: letter must be a string, got "
            f"{value_shown(letter)}"
        )
    if not (
        isinstance(letter, str) and len(letter) == 1 and "a" <= letter.lower() <= "z"
    ):
        letter = random.Random(INVALID_LETTER_SEED).choice(string.ascii_letters)
    letter = letter.lower()
    return lambda r: compare(r.lower().count(letter), let_frequency, let_relation)


@register("language:response_language")
def response_language(*, language):
    # No detectable features counts as followed, as in the original.
    codes = text.language_codes()
    if not isinstance(language, str) or language not in codes:
        raise ValueError(
            "language:response_language: language must be one of langdetect's "
            f"codes ({', '.join(sorted(codes))}), got {value_shown(language)}"
        )
    return lambda r: text.detect_language(r) in (language, None)


@register("length_constraints:number_sentences")
def number_sentences(*, num_sentences, relation):
    check_count("length_constraints:number_sentences", "num_sentences", num_sentences)
    check_relation("length_constraints:number_sentences", relation)
    return lambda r: compare(text.count_sentences(r), num_sentences, relation)


@register("length_constraints:number_words")
def number_words(*, num_words, relation):
    check_count("length_constraints:number_words", "num_words", num_words)
    check_relation("length_constraints:number_words", relation)
    return lambda r: compare(text.count_words(r), num_words, relation)


@register("length_constraints:number_paragraphs")
def number_paragraphs(*, num_paragraphs):
    """Paragraphs divided by `***`; an empty one between two dividers fails."""
    check_count(
        "length_constraints:number_paragraphs", "num_paragraphs", num_paragraphs
    )

    def check(r: str) -> bool:
        parts = re.split(r"\s?\*\*\*\s?", r)
        inner = parts[1:-1]
        if any(not p.strip() for p in inner):
            return False
        n = len(parts) - sum(1 for p in (parts[0], parts[-1]) if not p.strip())
        if len(parts) == 1:  # one part is both first and last: count it once
            n = 1 if parts[0].strip() else 0
        return n == num_paragraphs

    return check


_FIRST_WORD_STOP = frozenset(".,?!'\"")


@register("length_constraints:nth_paragraph_first_word")
def nth_paragraph_first_word(*, num_paragraphs, nth_paragraph, first_word):
    """Paragraphs split on blank lines; paragraph n (1-based) starts with a word.

    As in the original, the count skips empty paragraphs but paragraph n is
    taken from the unfiltered split.
    """
    iid = "length_constraints:nth_paragraph_first_word"
    check_count(iid, "num_paragraphs", num_paragraphs)
    check_count(iid, "nth_paragraph", nth_paragraph)
    if not 1 <= nth_paragraph <= num_paragraphs:
        raise ValueError(f"{iid}: nth_paragraph must be in 1..{num_paragraphs}")
    if not isinstance(first_word, str) or not first_word.strip():
        raise ValueError(
            f"{iid}: first_word must be a word, got {value_shown(first_word)}"
        )
    want = first_word.lower()

    def check(r: str) -> bool:
        parts = r.split("\n\n")
        n = sum(1 for p in parts if p.strip())
        if nth_paragraph > n:
            return False
        paragraph = parts[nth_paragraph - 1].strip()
        if not paragraph:
            return False
        word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
        head = ""
        for ch in word:
            if ch in _FIRST_WORD_STOP:
                break
            head += ch.lower()
        return n == num_paragraphs and head == want

    return check


@register("change_case:capital_word_frequency")
def capital_word_frequency(*, capital_frequency, capital_relation):
    iid = "change_case:capital_word_frequency"
    check_count(iid, "capital_frequency", capital_frequency)
    check_relation(iid, capital_relation, "capital_relation")

    def check(r: str) -> bool:
        n = sum(1 for w in text.word_tokens(r) if w.isupper())
        return compare(n, capital_frequency, capital_relation)

    return check


def _english(r: str) -> bool:
    return text.detect_language(r) in ("en", None)


@register("change_case:english_capital")
def english_capital():
    return lambda r: r.isupper() and _english(r)


@register("change_case:english_lowercase")
def english_lowercase():
    return lambda r: r.islower() and _english(r)


@register("punctuation:no_comma")
def no_comma():
    return lambda r: "," not in r
