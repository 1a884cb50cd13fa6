"""`hat sim report` and dataset files on malformed rows: `path:line:` errors.

The bad row is line 3 of each file (a good row, a blank line, the bad row); the
reader must raise `DataError`, nothing else. Writing a dataset is atomic.
"""

from __future__ import annotations

import json

import pytest

from hat_jax.harness import Trajectory
from hat_jax.jsonl import DataError
from sim.datasets import read_dataset, report, write_dataset

GOOD = {
    "harness_id": "taolive_v1@1",
    "user_message": "多少钱",
    "messages": [
        {"role": "user", "content": "多少钱"},
        {"role": "assistant", "content": "199元"},
    ],
    "meta": {
        "message": {"intent": "product_question", "lang": "zh"},
        "catalog": {"skus": ["s1"], "brands": ["b"]},
        "hsa": {"spec": "rename_tools", "mapping": {"tools": {"a": "b"}}},
    },
}


def _meta(**kw):
    return {**GOOD, "meta": {**GOOD["meta"], **kw}}


BAD = {
    "message_list": (_meta(message=["x"]), "field 'meta.message' must be an obj"),
    "intent_list": (
        _meta(message={"intent": ["q"]}),
        "field 'meta.message.intent' must be a string",
    ),
    "skus_ints": (
        _meta(catalog={"skus": [1]}),
        "field 'meta.catalog.skus' must hold only strings",
    ),
    "hsa_string": (_meta(hsa="yes"), "field 'meta.hsa' must be an object"),
    "mapping_tools": (
        _meta(hsa={"mapping": {"tools": {"a": 1}}}),
        "field 'meta.hsa.mapping.tools' must hold only strings",
    ),
    "mapping_params": (
        _meta(hsa={"mapping": {"params": {"t": [1]}}}),
        "field 'meta.hsa.mapping' is not a harness mapping",
    ),
    "role_unknown": (
        {**GOOD, "messages": [{"role": "viewer", "content": "x"}]},
        "field 'messages[0].role' must be one of",
    ),
}


def _file(tmp_path, bad: bytes):
    path = tmp_path / "data.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n\n" + bad + b"\n")
    return path


def test_the_good_row_reports(tmp_path):
    path = _file(tmp_path, json.dumps(GOOD).encode())
    r = report(path)
    assert r["lines"] == 2 and r["hsa"] == 2 and r["tools"] == {}


@pytest.mark.parametrize("case", sorted(BAD))
def test_report_locates_bad_rows(tmp_path, case):
    row, what = BAD[case]
    path = _file(tmp_path, json.dumps(row).encode())
    for reader in (report, read_dataset):
        with pytest.raises(DataError) as e:
            reader(path)
        assert str(e.value).startswith(f"{path}:3: {what}"), str(e.value)


@pytest.mark.parametrize(
    "bad, what",
    [(b'{"a": "\xff"}', "not UTF-8"), (b"[" * 9000, "nested deeper"), (b"{", "JSON")],
)
def test_report_locates_undecodable_lines(tmp_path, bad, what):
    path = _file(tmp_path, bad)
    with pytest.raises(DataError, match=rf"^{path}:3: .*{what}"):
        report(path)


def test_report_names_an_empty_file_and_the_cli_shows_no_traceback(tmp_path, capsys):
    from hat_jax.cli import main

    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(DataError, match=rf"^{path}: no trajectories"):
        report(path)
    bad = _file(tmp_path, json.dumps(BAD["message_list"][0]).encode())
    assert main.main(["sim", "report", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3: field 'meta.message'" in err and "Traceback" not in err


def test_a_dataset_that_does_not_encode_leaves_the_old_file(tmp_path):
    path = tmp_path / "train.jsonl"
    good = Trajectory.from_dict(GOOD)
    assert write_dataset([good], path) == 1
    before = path.read_bytes()
    bad = Trajectory.from_dict({**GOOD, "messages": [{"role": "system",
                                "content": "host \udc80"}]})  # fmt: skip
    with pytest.raises(DataError, match=rf"^{path}:2: .*lone surrogate U\+DC80"):
        write_dataset([good, bad], path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["train.jsonl"]
