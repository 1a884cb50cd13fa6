"""RecordWriter given text that is not valid Unicode (a lone surrogate, as a
reply decoded with surrogateescape carries): the record is written with the
surrogate escaped as text, the file stays whole JSONL and a resume reads it."""

import json

from hat_jax.eval.records import RecordWriter, read_records


def test_a_lone_surrogate_is_escaped_and_the_file_stays_whole(tmp_path):
    path = tmp_path / "t1" / "records.jsonl"
    hostile = {"id": "b", "reply": "bad \ud800 text", "\udcff": [1, "\udc80"]}
    with RecordWriter(path) as w:
        w.write({"id": "a", "reply": "fine 🙂", "score": float("nan")})
        w.write(hostile)
        w.write({"id": "c", "reply": "after"})
        assert w.done["b"] == {"id": "b", "reply": "bad \\ud800 text",
                               "\\udcff": [1, "\\udc80"]}  # fmt: skip
    data = path.read_bytes()
    data.decode("utf-8")  # strict: the whole file is UTF-8
    lines = data.splitlines()
    assert len(lines) == 3 and data.endswith(b"\n")
    assert json.loads(lines[1])["reply"] == "bad \\ud800 text"
    assert [r["id"] for r in read_records(path)] == ["a", "b", "c"]
    with RecordWriter(path) as again:  # a resumed run reads every record back
        assert set(again.done) == {"a", "b", "c"}
        assert again.done["b"] == w.done["b"]


def test_a_paired_surrogate_is_the_character_it_encodes(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as w:
        w.write({"id": "a", "reply": "x\U0001f600"})
    assert read_records(path)[0]["reply"] == "x\U0001f600"
    assert "\U0001f600".encode() in path.read_bytes()
