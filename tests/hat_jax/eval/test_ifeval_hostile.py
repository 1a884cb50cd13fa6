"""IFEval rows from strangers: slow, huge and nonsensical instructions are refused
with a `path:line:` error, through the reader and through `hat eval ifeval-score`."""

import json

import pytest
import regex

from hat_jax.cli.main import main
from hat_jax.eval import ifeval
from hat_jax.eval.ifeval import registry, text
from hat_jax.jsonl import DataError

NOT_THERE = {"keywords": ["zebra"]}  # never in the responses below


def _row(ids, kwargs, response="hello"):
    return {"prompt": "p", "response": response, "instruction_id_list": ids,
            "kwargs": kwargs}  # fmt: skip


def _write(tmp_path, row):
    path = tmp_path / "responses.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def _cli_error(tmp_path, capsys, row) -> str:
    path = _write(tmp_path, row)
    argv = ["eval", "ifeval-score", "--responses", str(path), "--out", str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"hat eval: error: {path}:1: "), err
    assert not (tmp_path / "summary.json").exists()
    return err


class Clock:
    """A clock that moves `step` seconds each time it is read, counting reads."""

    def __init__(self, step: float):
        self.step, self.reads = step, 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads * self.step


def test_a_row_of_slow_patterns_stops_at_its_budget(tmp_path, capsys, monkeypatch):
    # Each match "takes" 0.9 s: 30 instructions x 2 variants would be 54 s.
    clock = Clock(0.9)
    monkeypatch.setattr(registry, "_clock", clock)
    row = _row(["keywords:existence"] * 30, [NOT_THERE] * 30)
    err = _cli_error(tmp_path, capsys, row)
    assert f"ran past their {registry.ROW_MATCH_BUDGET_S} s budget per response" in err
    assert "after 3 matches (at keywords:existence: keyword 'zebra')" in err
    # Each match reads the clock once: 3 matches, then the 4th is not started.
    assert clock.reads == 4


def test_a_row_within_its_budget_is_scored_whole(monkeypatch):
    clock = Clock(0.0)
    monkeypatch.setattr(registry, "_clock", clock)
    row = _row(["keywords:existence"] * 30, [NOT_THERE] * 29 + [{"keywords": ["hel"]}])
    records, _ = ifeval.score_responses([row])
    assert records[0]["strict"] == [False] * 29 + [True]
    # "hello" has one loose variant besides itself (no `*`, one line): 29 x 2 + 1.
    assert clock.reads == 29 * 2 + 1


def test_a_match_cut_short_by_the_budget_says_so(monkeypatch):
    monkeypatch.setattr(registry, "ROW_MATCH_BUDGET_S", 0.05)
    slow = _row(["keywords:existence"], [{"keywords": ["(a|aa)+$"]}], "a" * 40 + "!")
    with pytest.raises(DataError, match=r"row 0: the row's patterns ran past their"):
        ifeval.score_responses([slow])


def test_a_row_has_at_most_32_instructions(tmp_path, capsys):
    row = _row(["punctuation:no_comma"] * 33, [{}] * 33)
    err = _cli_error(tmp_path, capsys, row)
    assert (
        "field 'instruction_id_list' must hold 1 to 32 instruction ids, got 33" in err
    )
    ok = _write(tmp_path, _row(["punctuation:no_comma"] * 32, [{}] * 32))
    assert len(ifeval.read_responses(ok)) == 1


@pytest.mark.parametrize(
    "pattern",
    [
        "a{1000000000}",
        "(a{1000}){1000}",
        "((a{100}){100}){100}",
        "a{1000000000,}",
        "[ab]{0,99999999999999999999}",
        "(a)(?1){100000}",
    ],
)
def test_a_repeat_that_would_fill_memory_is_refused_before_compiling(
    tmp_path, capsys, monkeypatch, pattern
):
    compiled = []
    real = regex.compile

    def guarded(p, *args, **kwargs):
        assert "{" not in p, f"tried to compile {p!r}"  # would take GBs
        compiled.append(p)
        return real(p, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", guarded)
    row = _row(["keywords:existence"], [{"keywords": [pattern]}])
    err = _cli_error(tmp_path, capsys, row)
    assert f"keyword {pattern!r} is too big: its length times its counted" in err
    assert "of the row's 20000" in err


def test_verbose_mode_which_hides_repeats_in_spaces_is_refused(tmp_path, capsys):
    row = _row(["keywords:existence"], [{"keywords": ["(?x)a{1 000 000 000}"]}])
    assert "turns on verbose mode (?x); not allowed" in _cli_error(
        tmp_path, capsys, row
    )


def test_the_patterns_of_a_row_share_one_size_budget(tmp_path, capsys):
    words = ["a{500}x"] * 6  # 3500 items each: 5 fit in 20000, the 6th does not
    row = _row(["keywords:existence"], [{"keywords": words}])
    err = _cli_error(tmp_path, capsys, row)
    assert "is 3500 or more, over the 2500 regex items left of the row's 20000" in err
    small = _row(["keywords:existence"], [{"keywords": words[:5]}], "a" * 500 + "x")
    records, _ = ifeval.score_responses([small])
    assert records[0]["strict"] == [True]


def test_ordinary_counted_repeats_still_work():
    row = _row(["keywords:existence"], [{"keywords": [r"\d{3}-\d{4}"]}], "555-1234")
    records, _ = ifeval.score_responses([row])
    assert records[0]["strict"] == [True]


NUM_WORDS = "length_constraints:number_words"
EXIST, FORBID = "keywords:existence", "keywords:forbidden_words"
NONSENSE = {
    "unknown_language": (
        "language:response_language", {"language": "xx"},
        "language must be one of langdetect's codes (af, ar, ",
    ),
    "language_number": (
        "language:response_language", {"language": 5}, "zh-tw), got 5"
    ),
    "language_list": (
        "language:response_language", {"language": ["en"]}, "got ['en']"
    ),
    "empty_keyword": (EXIST, {"keywords": [""]}, "keywords[0] is blank ('')"),
    "blank_keyword": (EXIST, {"keywords": ["a", "  "]}, "keywords[1] is blank"),
    "no_keywords": (EXIST, {"keywords": []}, "must be a non-empty list of strings"),
    "keywords_string": (EXIST, {"keywords": "cat"}, "got 'cat'"),
    "too_many_keywords": (EXIST, {"keywords": ["w"] * 101}, "101 words, at most 100"),
    "keyword_matching_nothing": (
        EXIST, {"keywords": ["a?"]}, "keyword 'a?' matches the empty string"
    ),
    "empty_forbidden_word": (
        FORBID, {"forbidden_words": [""]}, "forbidden_words[0] is blank"
    ),
    "forbidden_matching_nothing": (
        FORBID, {"forbidden_words": ["x*"]}, "'x*' matches the empty string"
    ),
    "frequency_blank": (
        "keywords:frequency",
        {"keyword": " ", "frequency": 1, "relation": "at least"},
        "keyword must be a word, got ' '",
    ),
    "negative": (
        NUM_WORDS, {"num_words": -1, "relation": "at least"},
        "num_words must be a non-negative integer up to 1000000, got -1",
    ),
    "bool": (NUM_WORDS, {"num_words": True, "relation": "at least"}, "got True"),
    "float": (NUM_WORDS, {"num_words": 2.5, "relation": "at least"}, "got 2.5"),
    "huge": (
        NUM_WORDS, {"num_words": 10**7, "relation": "at least"}, "got 10000000"
    ),
    "huge_letter_count": (
        "keywords:letter_frequency",
        {"letter": "a", "let_frequency": 10**60, "let_relation": "at least"},
        "let_frequency must be a non-negative integer up to 1000000, got an integer "
        "of over 40 digits",
    ),
    "letter_number": (
        "keywords:letter_frequency",
        {"letter": 5, "let_frequency": 1, "let_relation": "at least"},
        "letter must be a string, got 5",
    ),
    "relation": (
        NUM_WORDS, {"num_words": 3, "relation": "more"}, "relation must be 'less than'"
    ),
    "let_relation": (
        "keywords:letter_frequency",
        {"letter": "a", "let_frequency": 1, "let_relation": "<"},
        "let_relation must be 'less than' or 'at least', got '<'",
    ),
    "unknown_kwarg": (
        "punctuation:no_comma", {"foo": 1}, "expected kwargs [], got ['foo']"
    ),
    "blank_first_word": (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": ""},
        "first_word must be a word, got ''",
    ),
    "blank_end_phrase": (
        "startend:end_checker", {"end_phrase": "\n"},
        "end_phrase must be a non-empty string, got '\\n'",
    ),
    "postscript_matching_nothing": (
        "detectable_content:postscript", {"postscript_marker": "(x)?"},
        "postscript_marker '(x)?' matches the empty string",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(NONSENSE))
def test_nonsense_kwargs_are_refused_at_read(tmp_path, case):
    iid, kwargs, want = NONSENSE[case]
    path = _write(tmp_path, _row([iid], [kwargs]))
    with pytest.raises(DataError) as e:
        ifeval.read_responses(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:1: {iid}: "), msg
    assert want in msg and "\n" not in msg, msg


@pytest.mark.parametrize(
    "ids, kwargs, want",
    [
        (
            [],
            [],
            "field 'instruction_id_list' must hold 1 to 32 instruction ids, got 0",
        ),
        (["punctuation:no_comma"], [{}, {}], "1 instruction ids but 2 kwargs objects"),
    ],
)
def test_row_shapes_are_refused_through_the_cli(tmp_path, capsys, ids, kwargs, want):
    assert want in _cli_error(tmp_path, capsys, _row(ids, kwargs))


def test_every_langdetect_code_is_accepted_and_the_good_rows_score(tmp_path):
    rows = [
        _row(["language:response_language"], [{"language": code}])
        for code in sorted(text.language_codes())
    ]
    assert {"en", "zh-cn", "zh-tw", "fi"} <= text.language_codes()
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records, summary = ifeval.score_responses(ifeval.read_responses(path))
    assert summary["n_prompts"] == len(rows) == 55
    assert sum(r["follow_all_strict"] for r in records) >= 1  # "hello" is some one
