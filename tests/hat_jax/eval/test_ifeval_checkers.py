"""Our IFEval checkers and scoring on hand-made cases (parity is checked apart)."""

import json

import pytest

from hat_jax.eval import ifeval
from hat_jax.eval.ifeval import Prompt

HL2 = {"num_highlights": 2}


def check(iid, response, **kwargs):
    return ifeval.build(iid, kwargs)(response)


def one(iid, **kwargs):
    return Prompt(key=1, prompt="p", instruction_id_list=(iid,), kwargs=(kwargs,))


def test_25_instruction_types():
    assert len(ifeval.names()) == 25
    assert "combination:repeat_prompt" in ifeval.names()


def test_load_prompts_gives_the_541():
    prompts = ifeval.load_prompts()
    assert len(prompts) == 541
    first = prompts[0].as_dict()
    assert set(first) == {"key", "prompt", "instruction_id_list", "kwargs"}
    assert first["key"] == 1000 and "Raymond_III" in first["prompt"]


@pytest.mark.parametrize(
    "iid, response, kwargs, want",
    [
        # keywords are case-insensitive regexes; frequency counts inside words
        ("keywords:existence", "A CAT sat", {"keywords": ["cat"]}, True),
        (
            "keywords:frequency",
            "the other",
            dict(keyword="the", frequency=2, relation="at least"),
            True,
        ),
        ("keywords:forbidden_words", "rocks roll", {"forbidden_words": ["rock"]}, True),
        ("keywords:forbidden_words", "A Rock.", {"forbidden_words": ["rock"]}, False),
        (
            "keywords:letter_frequency",
            "Queue",
            dict(letter="q", let_frequency=2, let_relation="less than"),
            True,
        ),
        (
            "length_constraints:number_words",
            "don't stop",
            dict(num_words=3, relation="at least"),
            True,
        ),
        (
            "length_constraints:number_sentences",
            "Dr. Lee left. He ran.",
            dict(num_sentences=2, relation="at least"),
            True,
        ),
        (
            "length_constraints:number_paragraphs",
            "a\n***\nb",
            {"num_paragraphs": 2},
            True,
        ),
        (
            "length_constraints:number_paragraphs",
            "a *** *** b",
            {"num_paragraphs": 2},
            False,
        ),
        (
            "detectable_format:number_bullet_lists",
            "* a\n- b\n**c**",
            {"num_bullets": 2},
            True,
        ),
        # "**x**" is one highlight; "***x***" two ("*x*" and "**x**")
        ("detectable_format:number_highlighted_sections", "**x**", HL2, False),
        ("detectable_format:number_highlighted_sections", "***x***", HL2, True),
        ("detectable_format:json_format", '```json\n{"a": 1}\n```', {}, True),
        ("detectable_format:json_format", "{'a': 1}", {}, False),
        ("detectable_format:title", "<<  >>", {}, False),
        (
            "detectable_format:multiple_sections",
            "SECTION 1 a SECTION 2 b",
            dict(section_spliter="SECTION", num_sections=2),
            True,
        ),
        (
            "detectable_content:postscript",
            "hi\np. s. bye",
            {"postscript_marker": "P.S."},
            True,
        ),
        ("combination:two_responses", "a\n******\na", {}, False),
        (
            "combination:repeat_prompt",
            "SAY HI. hi",
            {"prompt_to_repeat": "Say hi."},
            True,
        ),
        ("startend:end_checker", '"Bye now."', {"end_phrase": "bye now."}, True),
        ("startend:quotation", '"', {}, False),
        (
            "change_case:capital_word_frequency",
            "DON'T",
            dict(capital_frequency=2, capital_relation="at least"),
            True,
        ),
        ("change_case:english_lowercase", "hello there, how are you today?", {}, True),
        ("punctuation:no_comma", "a\uff0cb", {}, True),
    ],
)
def test_checker_semantics(iid, response, kwargs, want):
    assert check(iid, response, **kwargs) is want


def test_nth_paragraph_is_taken_from_the_unfiltered_split():
    kw = dict(num_paragraphs=2, nth_paragraph=2, first_word="second")
    assert check("length_constraints:nth_paragraph_first_word", "a\n\nSecond b", **kw)
    # An empty paragraph shifts the index but not the count, as in the original.
    assert not check(
        "length_constraints:nth_paragraph_first_word", "a\n\n\n\nSecond b", **kw
    )


def test_a_non_letter_becomes_a_seeded_letter():
    kw = dict(letter="#", let_frequency=2, let_relation="at least")
    assert check("keywords:letter_frequency", "yY", **kw)  # the seed draws "Y"
    assert not check("keywords:letter_frequency", "##", **kw)


def test_language_without_features_counts_as_followed():
    assert check("language:response_language", "12345", language="de")
    assert not check(
        "language:response_language", "The cat sat on the mat.", language="de"
    )


def test_loose_variants_and_verdicts():
    assert ifeval.loose_variants("Sure:\n*a*\nend") == [
        "Sure:\n*a*\nend", "*a*\nend", "Sure:\n*a*", "*a*",
        "Sure:\na\nend", "a\nend", "Sure:\na", "a",
    ]  # fmt: skip
    strict, loose = ifeval.evaluate(one("startend:quotation"), 'Sure:\n"quoted"')
    assert strict == [False] and loose == [True]
    assert ifeval.evaluate(one("punctuation:no_comma"), "  \n ") == ([False], [False])


def test_kwargs_that_are_none_are_ignored_and_bad_ones_are_refused():
    hf_style = {"num_words": 2, "relation": "less than", "keywords": None}
    assert check("length_constraints:number_words", "one", **hf_style)
    with pytest.raises(ValueError, match="unknown IFEval instruction"):
        ifeval.build("keywords:nope", {})
    with pytest.raises(ValueError, match="expected kwargs"):
        ifeval.build("length_constraints:number_words", {"num_words": 3})
    with pytest.raises(ValueError, match="relation must be"):
        ifeval.build(
            "length_constraints:number_words", {"num_words": 3, "relation": "<"}
        )
    with pytest.raises(ValueError, match="non-negative integer"):
        ifeval.build("detectable_format:number_bullet_lists", {"num_bullets": "3"})


def test_score_responses_summary():
    prompts = ifeval.load_prompts()
    a, b = prompts[1], prompts[2]  # no_comma; number_placeholders (12)
    rows = [
        {"prompt": a.prompt, "response": "No commas here."},
        {"prompt": b.prompt, "response": "[a] [b]"},
        {"prompt": "own", "response": "x, y",
         "instruction_id_list": ["punctuation:no_comma", "startend:quotation"],
         "kwargs": [{}, {}]},
    ]  # fmt: skip
    records, summary = ifeval.score_responses(rows, prompts)
    assert [r["strict"] for r in records] == [[True], [False], [False, False]]
    assert records[0]["key"] == a.key and records[2]["key"] == -1
    assert summary["n_prompts"] == 3 and summary["n_instructions"] == 4
    assert summary["prompt_level_strict"] == pytest.approx(1 / 3)
    assert summary["instruction_level_loose"] == pytest.approx(1 / 4)
    assert summary["by_instruction"]["punctuation:no_comma"] == {
        "n": 2, "strict": 0.5, "loose": 0.5
    }  # fmt: skip
    assert summary["by_category"]["punctuation"]["n"] == 2
    assert summary["missing_prompts"] == 539
    md = ifeval.summary_markdown(summary)
    assert "| prompt_level_strict | 0.3333 |" in md
    assert "| punctuation:no_comma | 2 | 0.5000 | 0.5000 |" in md
    json.dumps(summary)


def test_unknown_prompt_and_bad_prompt_files(tmp_path):
    with pytest.raises(ValueError, match="row 0: prompt is not one of the IFEval"):
        ifeval.score_responses([{"prompt": "hello?", "response": "hi"}])
    f = tmp_path / "p.jsonl"
    good = {"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"],
            "kwargs": [{}]}  # fmt: skip
    bad = dict(good, instruction_id_list=["punctuation:no_comma"], kwargs=[])
    f.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"p.jsonl:3: 1 instruction ids but 0 kwargs"):
        ifeval.load_prompts(f)
