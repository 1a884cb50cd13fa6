"""Checkers on a response's shape: markdown, sections, JSON, title, start/end.

Markers given in the prompt file (section splitters, postscript markers) are
used as regular expressions, unescaped, as the original IFEval does; they are
compiled when the prompt is read and matched with a time bound
(`registry.Pattern`).
"""

from __future__ import annotations

import json
import re

import regex

from hat_jax.eval.ifeval.registry import Pattern, check_count, register, value_shown

CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _marker(instruction_id: str, name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{instruction_id}: {name} must be a non-empty string, got "
            f"{value_shown(value)}"
        )
    return value.strip()


@register("detectable_content:number_placeholders")
def number_placeholders(*, num_placeholders):
    check_count(
        "detectable_content:number_placeholders", "num_placeholders", num_placeholders
    )
    return lambda r: len(re.findall(r"\[.*?\]", r)) >= num_placeholders


@register("detectable_content:postscript")
def postscript(*, postscript_marker):
    marker = _marker(
        "detectable_content:postscript", "postscript_marker", postscript_marker
    )
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    compiled = Pattern(
        "detectable_content:postscript",
        "postscript_marker",
        marker,
        pattern,
        flags=regex.MULTILINE,
    )
    return lambda r: compiled.search(r.lower()) is not None


@register("detectable_format:number_bullet_lists")
def number_bullet_lists(*, num_bullets):
    """Exactly n lines starting with `* ` (not `**`) or `-`."""
    check_count("detectable_format:number_bullet_lists", "num_bullets", num_bullets)
    star = re.compile(r"^\s*\*[^\*].*$", flags=re.MULTILINE)
    dash = re.compile(r"^\s*-.*$", flags=re.MULTILINE)
    return lambda r: len(star.findall(r)) + len(dash.findall(r)) == num_bullets


@register("detectable_format:constrained_response")
def constrained_response():
    return lambda r: any(o in r.strip() for o in CONSTRAINED_OPTIONS)


@register("detectable_format:number_highlighted_sections")
def number_highlighted_sections(*, num_highlights):
    """At least n non-empty `*spans*` or `**spans**` (an empty `**` counts nothing)."""
    iid = "detectable_format:number_highlighted_sections"
    check_count(iid, "num_highlights", num_highlights)
    single = re.compile(r"\*[^\n\*]*\*")
    double = re.compile(r"\*\*[^\n\*]*\*\*")

    def check(r: str) -> bool:
        n = sum(1 for h in single.findall(r) if h.strip("*").strip())
        n += sum(1 for h in double.findall(r) if h[2:-2].strip())
        return n >= num_highlights

    return check


@register("detectable_format:multiple_sections")
def multiple_sections(*, section_spliter, num_sections):
    """At least n sections, each opened by `<splitter> <number>`."""
    iid = "detectable_format:multiple_sections"
    splitter = _marker(iid, "section_spliter", section_spliter)
    check_count(iid, "num_sections", num_sections)
    pattern = Pattern(
        iid, "section_spliter", splitter, r"\s?" + splitter + r"\s?\d+\s?"
    )
    return lambda r: len(pattern.split(r)) - 1 >= num_sections


@register("detectable_format:json_format")
def json_format():
    def check(r: str) -> bool:
        body = r.strip()
        for fence in ("```json", "```Json", "```JSON", "```"):
            body = body.removeprefix(fence)
        body = body.removesuffix("```").strip()
        try:
            json.loads(body)
        except ValueError:
            return False
        return True

    return check


@register("detectable_format:title")
def title():
    pattern = re.compile(r"<<[^\n]+>>")
    return lambda r: any(t.lstrip("<").rstrip(">").strip() for t in pattern.findall(r))


@register("combination:two_responses")
def two_responses():
    """Two different answers separated by `******` (empty ends are allowed)."""

    def check(r: str) -> bool:
        parts = r.split("******")
        if any(not p.strip() for p in parts[1:-1]):
            return False
        answers = [p for p in parts if p.strip()]
        return len(answers) == 2 and answers[0].strip() != answers[1].strip()

    return check


@register("combination:repeat_prompt")
def repeat_prompt(*, prompt_to_repeat):
    want = _marker(
        "combination:repeat_prompt", "prompt_to_repeat", prompt_to_repeat
    ).lower()
    return lambda r: r.strip().lower().startswith(want)


@register("startend:end_checker")
def end_checker(*, end_phrase):
    want = _marker("startend:end_checker", "end_phrase", end_phrase).lower()
    return lambda r: r.strip().strip('"').lower().endswith(want)


@register("startend:quotation")
def quotation():
    def check(r: str) -> bool:
        s = r.strip()
        return len(s) > 1 and s[0] == '"' and s[-1] == '"'

    return check
