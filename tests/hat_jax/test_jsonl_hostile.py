"""Malformed data rows: every reader says `path:line: what was expected`.

Each case writes a good row, a blank line and one bad row, so the bad row is
line 3, and asserts the reader raises `DataError` (no other exception type)
whose message starts with `path:3:`. Writes are atomic: a failure leaves no file
and no temporary file behind.
"""

from __future__ import annotations

import json
import os

import pytest

from hat_jax.eval import ifeval
from hat_jax.eval.ifeval import registry
from hat_jax.eval.records import RecordWriter, read_records
from hat_jax.harness.tokens import read_jsonl, write_jsonl
from hat_jax.harness.trajectory import Trajectory
from hat_jax.jsonl import DataError, atomic_open, field, iter_jsonl
from hat_jax.train.data import tokenize

TRAJ = {
    "harness_id": "h@1",
    "user_message": "hi",
    "messages": [
        {"role": "system", "content": "You are a host."},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"name": "lookup", "arguments": {"q": "hi"}}],
        },
        {"role": "tool", "name": "lookup", "content": "ok"},
        {"role": "assistant", "content": "hello", "reasoning": "greet"},
    ],
}
PROMPT = {
    "key": 1,
    "prompt": "Say hi.",
    "instruction_id_list": ["punctuation:no_comma"],
    "kwargs": [{}],
}
RESPONSE = {**PROMPT, "response": "hi"}


def _msg(i, **kw):
    msgs = [dict(m) for m in TRAJ["messages"]]
    msgs[i] = {**msgs[i], **kw}
    return {**TRAJ, "messages": msgs}


def _ifeval(iid, kwargs, **kw):
    return {**RESPONSE, "instruction_id_list": [iid], "kwargs": [kwargs], **kw}


# Raw third lines that fail whatever the reader (decoding and JSON problems).
RAW = {
    "not_utf8": (b'{"a": "\xff\xfe"}', "not UTF-8 (byte offset 7"),
    "latin1": ('{"a": "café"}'.encode("latin-1"), "not UTF-8"),
    "invalid_json": (b'{"a": ', "invalid JSON"),
    "deep_nesting": (b"[" * 50_000 + b"]" * 50_000, "nested deeper than"),
    "nested_past_limit": (b"[" * 200 + b"]" * 200, "nested deeper than 100"),
    "huge_int": (b'{"key": ' + b"9" * 5000 + b"}", "integer of more than"),
    "nan": (b'{"a": NaN}', "NaN is not a JSON number"),
    "infinity": (b'{"a": -Infinity}', "-Infinity is not a JSON number"),
    "overflow_float": (b'{"a": 1e999}', "number 1e999 is out of range"),
    "lone_surrogate": (b'{"a": "x\\ud800y"}', "lone surrogate U+D800"),
    "lone_low_surrogate_key": (b'{"\\udc00": 1}', "lone surrogate U+DC00"),
    "duplicate_key": (b'{"a": 1, "a": 2}', "duplicate key 'a' in an object"),
    "duplicate_nested_key": (
        b'{"x": [{"id": 1, "b": 2, "id": 3}]}',
        "duplicate key 'id' in an object",
    ),
}

# Trajectory rows (SFT data, `hat sim report`, trajectory files).
TRAJ_ROWS = {
    "list_row": ([TRAJ], "expected a JSON object, got list"),
    "missing_messages": ({"harness_id": "h", "user_message": "u"}, "not a traj"),
    "unknown_field": ({**TRAJ, "bogus": 1}, "unknown field 'bogus'"),
    "messages_object": ({**TRAJ, "messages": {}}, "field 'messages' must be a"),
    "message_string": (
        {**TRAJ, "messages": ["hi"]},
        "field 'messages[0]' must be an object",
    ),
    "reasoning_int": (_msg(4, reasoning=5), "'messages[4].reasoning' must be a str"),
    "role_list": (_msg(1, role=["user"]), "'messages[1].role' must be a string"),
    "role_unknown": (_msg(1, role="bot"), "'messages[1].role' must be one of"),
    "role_missing": (
        {**TRAJ, "messages": [{"content": "x"}]},
        "'messages[0].role' is missing",
    ),
    "content_object": (_msg(1, content={"a": 1}), "'messages[1].content' must be"),
    "tool_calls_string": (_msg(2, tool_calls="lookup"), "tool_calls' must be a list"),
    "tool_call_string": (_msg(2, tool_calls=["x"]), "tool_calls[0]' must be an obj"),
    "tool_call_no_name": (
        _msg(2, tool_calls=[{"arguments": {}}]),
        "tool_calls[0].name' is missing",
    ),
    "arguments_bad_json": (
        _msg(2, tool_calls=[{"name": "f", "arguments": "{q: 1"}]),
        "tool_calls[0].arguments': invalid JSON",
    ),
    "arguments_json_list": (
        _msg(2, tool_calls=[{"name": "f", "arguments": "[1]"}]),
        "a string holding list",
    ),
    "arguments_number": (
        _msg(2, tool_calls=[{"name": "f", "arguments": 3}]),
        "tool_calls[0].arguments' must be an object or a string",
    ),
    "meta_list": ({**TRAJ, "meta": [1]}, "field 'meta' must be an object"),
    "status_unknown": ({**TRAJ, "status": "great"}, "field 'status' must be one of"),
    "timings_string": ({**TRAJ, "timings": {"total": "1s"}}, "'timings.total'"),
    "exchange_no_result": (
        {**TRAJ, "tool_calls": [{"name": "f", "arguments": {}}]},
        "'tool_calls[0].result' is missing",
    ),
    "hook_checkpoint": (
        {**TRAJ, "hook_events": [{"hook": "h", "checkpoint": "x", "passed": True}]},
        "'hook_events[0].checkpoint' must be one of",
    ),
    "reply_list": ({**TRAJ, "reply": ["a"]}, "field 'reply' must be a string or"),
    "messages_empty": (
        {**TRAJ, "messages": []},
        "field 'messages' must be a non-empty list of messages, got an empty list",
    ),
    "harness_id_empty": (
        {**TRAJ, "harness_id": ""},
        "field 'harness_id' must be a harness id (such as 'taolive@1.0'), got ''",
    ),
    "harness_id_blank": ({**TRAJ, "harness_id": " \t"}, "got ' \\t'"),
    "tool_call_bad_name": (
        _msg(2, tool_calls=[{"name": "bad<>", "arguments": {}}]),
        "field 'messages[2].tool_calls[0].name' must be a tool name (non-empty, "
        "printable, no < > or surrounding spaces), got 'bad<>'",
    ),
    "tool_call_escape_name": (
        _msg(2, tool_calls=[{"function": {"name": "\x1b[2J", "arguments": "{}"}}]),
        "'messages[2].tool_calls[0].function.name' must be a tool name",
    ),
    "tool_call_empty_name": (
        _msg(2, tool_calls=[{"name": "", "arguments": {}}]),
        "'messages[2].tool_calls[0].name' must be a tool name",
    ),
    "tool_call_bad_argument_name": (
        _msg(2, tool_calls=[{"name": "f", "arguments": '{"a<b": 1}'}]),
        "'messages[2].tool_calls[0].arguments' has the key 'a<b', which is not a "
        "parameter name",
    ),
    "exchange_bad_name": (
        {**TRAJ, "tool_calls": [{"name": " f", "arguments": {}, "result": "x"}]},
        "field 'tool_calls[0].name' must be a tool name",
    ),
}

# IFEval response rows (`hat eval ifeval-score`) with their own instructions.
IFEVAL_ROWS = {
    "key_null": ({**RESPONSE, "key": None}, "field 'key' must be an integer"),
    "key_list": ({**RESPONSE, "key": [1]}, "field 'key' must be an integer"),
    "key_bool": ({**RESPONSE, "key": True}, "field 'key' must be an integer"),
    "ids_not_list": ({**RESPONSE, "instruction_id_list": "x"}, "must be a list"),
    "ids_ints": ({**RESPONSE, "instruction_id_list": [1]}, "must hold strings"),
    "kwargs_strings": ({**RESPONSE, "kwargs": ["x"]}, "must hold objects"),
    "unknown_id": (_ifeval("x:y", {}), "unknown IFEval instruction 'x:y'"),
    "keyword_paren": (
        _ifeval("keywords:existence", {"keywords": ["("]}),
        "keywords:existence: keyword '(' is not a valid regular expression",
    ),
    "keyword_bracket": (
        _ifeval(
            "keywords:frequency",
            {"keyword": "[", "frequency": 1, "relation": "at least"},
        ),
        "keyword '[' is not a valid regular expression",
    ),
    "forbidden_paren": (
        _ifeval("keywords:forbidden_words", {"forbidden_words": ["a(b"]}),
        "forbidden word 'a(b' is not a valid regular expression",
    ),
    "postscript_bracket": (
        _ifeval("detectable_content:postscript", {"postscript_marker": "P[S"}),
        "postscript_marker 'P[S' is not a valid regular expression",
    ),
    "splitter_paren": (
        _ifeval(
            "detectable_format:multiple_sections",
            {"section_spliter": "Sec(", "num_sections": 2},
        ),
        "section_spliter 'Sec(' is not a valid regular expression",
    ),
    "count_float": (
        _ifeval(
            "length_constraints:number_words",
            {"num_words": 2.5, "relation": "at least"},
        ),  # fmt: skip
        "num_words must be a non-negative integer",
    ),
    "response_list": ({**RESPONSE, "response": ["hi"]}, "'response' missing or not"),
}


def _write(tmp_path, good, bad: bytes):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(json.dumps(good).encode() + b"\n\n" + bad + b"\n")
    return path


def _raises_at(path, fn, what):
    with pytest.raises(DataError) as e:
        fn(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3: "), msg
    assert what in msg, msg


def _records(path):
    return read_records(path)


READERS = {
    "trajectories": (TRAJ, read_jsonl),
    "ifeval_responses": (RESPONSE, ifeval.read_responses),
    "ifeval_prompts": (PROMPT, ifeval.load_prompts),
    "eval_records": ({"id": "a"}, _records),
}


# Eval records keep NaN scores (a judge without a valid vote): see below.
NAN_CASES = ("nan", "infinity", "overflow_float")
UNDECODABLE = [
    (reader, case)
    for reader in sorted(READERS)
    for case in sorted(RAW)
    if not (reader == "eval_records" and case in NAN_CASES)
]


@pytest.mark.parametrize("reader, case", UNDECODABLE)
def test_undecodable_lines_are_located(tmp_path, reader, case):
    good, fn = READERS[reader]
    bad, what = RAW[case]
    _raises_at(_write(tmp_path, good, bad), fn, what)


def test_records_keep_nan_scores(tmp_path):
    path = tmp_path / "r.jsonl"
    with RecordWriter(path) as w:
        w.write({"id": "a", "scores": {"judge": float("nan")}})
    (back,) = read_records(path)
    assert back["id"] == "a" and back["scores"]["judge"] != back["scores"]["judge"]


@pytest.mark.parametrize("case", sorted(TRAJ_ROWS))
def test_bad_trajectory_rows_are_located(tmp_path, case):
    row, what = TRAJ_ROWS[case]
    path = _write(tmp_path, TRAJ, json.dumps(row).encode())
    _raises_at(path, read_jsonl, what)


@pytest.mark.parametrize("case", sorted(IFEVAL_ROWS))
def test_bad_ifeval_rows_are_located(tmp_path, case):
    row, what = IFEVAL_ROWS[case]
    path = _write(tmp_path, RESPONSE, json.dumps(row).encode())
    _raises_at(path, ifeval.read_responses, what)


def test_records_need_an_object_with_an_id(tmp_path):
    for bad in (b'["a"]', b'{"x": 1}', b'{"id": 3}'):
        path = _write(tmp_path, {"id": "a"}, bad)
        _raises_at(path, read_records, "not a record")
        with pytest.raises(DataError, match=r"rows\.jsonl:3: "):
            RecordWriter(path)


@pytest.mark.parametrize(
    "reader, what",
    [
        (read_jsonl, "no trajectories"),
        (ifeval.read_responses, "no responses"),
        (ifeval.load_prompts, "no prompts"),
    ],
)
def test_an_empty_file_is_named(tmp_path, reader, what):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    with pytest.raises(DataError) as e:
        reader(path)
    assert str(e.value).startswith(f"{path}: {what}")


def test_field_helper_words_types_and_choices():
    row = {"role": "bot", "n": True, "x": 1}
    with pytest.raises(DataError, match=r"^f:1: field 'role' must be one of 'a'"):
        field(row, "role", "f:1", str, choices=("a", "b"))
    with pytest.raises(DataError, match="field 'n' must be an integer, got boolean"):
        field(row, "n", "f:1", int)
    with pytest.raises(DataError, match="field 'm' is missing"):
        field(row, "m", "f:1", int)
    assert field(row, "x", "f:1", float) == 1  # a number admits an integer
    assert field(row, "m", "f:1", int, default=7) == 7


def test_a_bom_and_crlf_lines_are_read():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bom.jsonl"
        path.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n{"b": "\\ud83d\\ude00"}\r\n')
        rows = [v for _, v in iter_jsonl(path, objects=True)]
    assert rows == [{"a": 1}, {"b": "\U0001f600"}]  # a surrogate pair is fine


# --- IFEval patterns run with a time bound -------------------------------------------
def test_a_catastrophic_pattern_stops_with_a_located_error(tmp_path):
    # (a|a)+$ backtracks 2^n times on "a"*n + "!"; the bound turns that into an
    # error naming the row and the pattern instead of a hang.
    assert registry.MATCH_TIMEOUT_S <= 5
    row = _ifeval("keywords:existence", {"keywords": ["(a|a)+$"]})
    row["response"] = "a" * 64 + "!"
    path = _write(tmp_path, RESPONSE, json.dumps(row).encode())
    rows = ifeval.read_responses(path)  # the pattern compiles
    with pytest.raises(DataError) as e:
        ifeval.score_responses(rows)
    msg = str(e.value)
    assert msg.startswith(f"{path}:3: keywords:existence: keyword '(a|a)+$' ")
    assert "did not finish matching" in msg


def test_the_issue_pattern_is_scored():
    # (a+)+$ backtracks exponentially in Python's `re` on "a"*n + "!"; the
    # `regex` engine answers it without coming near the bound.
    kw = {"keywords": ["(a+)+$"]}
    rows = [
        _ifeval("keywords:existence", kw, response="a" * 40),
        _ifeval("keywords:existence", kw, response="a" * 40 + "!"),
    ]
    records, _ = ifeval.score_responses(rows)
    assert [r["strict"] for r in records] == [[True], [False]]


def test_ifeval_score_cli_reports_without_traceback(tmp_path, capsys):
    from hat_jax.cli import main

    path = _write(tmp_path, RESPONSE, json.dumps(IFEVAL_ROWS["key_null"][0]).encode())
    argv = ["eval", "ifeval-score", "--responses", str(path)]
    assert main.main([*argv, "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3: field 'key'" in err and "Traceback" not in err


# --- SFT: examples without a trained token ----------------------------------------
class _CharTokenizer:
    def encode(self, text):
        return [ord(c) % 251 for c in text]


def test_no_trained_token_after_truncation_is_an_error(tmp_path):
    path = tmp_path / "sft.jsonl"
    write_jsonl([Trajectory.from_dict(TRAJ)] * 3, path)
    trajs = read_jsonl(path)
    tok = _CharTokenizer()
    examples, stats = tokenize(trajs, tok, seq_len=4096)  # long enough: fine
    assert stats["loss_tokens"] > 0 and stats["no_loss"] == 0
    with pytest.raises(DataError) as e:
        tokenize(trajs, tok, seq_len=16, overlong="truncate")
    msg = str(e.value)
    assert msg.startswith(f"{path}: 0 of 3 trajectories keep a trained token at ")
    assert "seq_len=16" in msg and f"{path}:1" in msg and "max " in msg
    with pytest.raises(DataError, match=rf"^{path}: all 3 trajectories dropped"):
        tokenize(trajs, tok, seq_len=16, overlong="drop")
    no_reply = {**TRAJ, "messages": TRAJ["messages"][:2]}
    with pytest.raises(DataError, match="no assistant message"):
        tokenize([Trajectory.from_dict(no_reply, "x.jsonl:1")], tok, seq_len=4096)


# --- Writes are atomic ------------------------------------------------------------
def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def test_a_row_that_does_not_encode_leaves_no_file(tmp_path):
    good = Trajectory.from_dict(TRAJ)
    bad = Trajectory.from_dict({**TRAJ, "user_message": "x\ud800"})
    path = tmp_path / "out.jsonl"
    with pytest.raises(DataError, match=rf"^{path}:2: .*lone surrogate U\+D800"):
        write_jsonl([good, bad], path)
    assert not path.exists() and not _leftovers(tmp_path)
    nan = Trajectory.from_dict({**TRAJ, "timings": {"t": float("nan")}})
    with pytest.raises(DataError, match=rf"^{path}:1: "):
        write_jsonl([nan], path)
    assert not path.exists()


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.jsonl"
    write_jsonl([Trajectory.from_dict(TRAJ)], path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="killed"), atomic_open(path) as f:
        f.write(b"half a line")
        raise RuntimeError("killed")
    assert path.read_bytes() == before and not _leftovers(tmp_path)
    assert [t.to_dict() for t in read_jsonl(path)] == [
        Trajectory.from_dict(TRAJ).to_dict()
    ]
    assert read_jsonl(path)[0].where == f"{path}:1"
    plain = tmp_path / "plain"
    plain.write_text("")  # the umask's mode, which the renamed file keeps
    assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_file_that_is_not_regular_is_refused_unread(tmp_path, kind):
    from hat_jax.jsonl import DataError, iter_jsonl

    path = {"fifo": tmp_path / "f.jsonl", "device": "/dev/zero"}.get(kind, tmp_path)
    if kind == "fifo":
        os.mkfifo(path)  # a blocking open would hang the test here
    with pytest.raises(DataError, match="not a regular file"):
        list(iter_jsonl(path))


def test_read_json_refuses_a_fifo_unread(tmp_path):
    import os

    from hat_jax.jsonl import DataError, read_json

    os.mkfifo(tmp_path / "run.json")
    with pytest.raises(DataError, match="run.json: not a regular file"):
        read_json(tmp_path / "run.json")  # would block forever if opened plainly
