"""Rows that decode but say two things at once or nothing at all: an object
naming a key twice (json keeps the last silently), a trajectory without
messages or harness, a tool call whose name no format can write. Each is a
located error through the readers and the CLI, never a traceback."""

from __future__ import annotations

import json

import pytest

from hat_jax.cli.main import main
from hat_jax.harness.tokens import read_jsonl
from hat_jax.jsonl import DataError, parse_line, read_json

TRAJ = {
    "harness_id": "taolive@1.0",
    "user_message": "hi",
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ],
}


def test_parse_line_refuses_a_key_given_twice():
    with pytest.raises(DataError) as e:
        parse_line('{"a": 1, "b": {"c": 2, "c": 3}}', "rows.jsonl:7")
    assert str(e.value) == "rows.jsonl:7: invalid JSON (duplicate key 'c' in an object)"
    # The same key in two different objects is fine, as is NaN where allowed.
    assert parse_line('[{"a": 1}, {"a": 2}]', "x:1") == [{"a": 1}, {"a": 2}]
    assert parse_line('{"a": NaN}', "x:1", allow_nan=True)["a"] != 0


def test_read_json_refuses_a_key_given_twice(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{\n  "seed": 1,\n  "seed": 2\n}\n')
    with pytest.raises(DataError) as e:
        read_json(path)
    assert str(e.value) == f"{path}: invalid JSON (duplicate key 'seed' in an object)"


def test_a_trajectory_key_given_twice_is_located(tmp_path):
    path = tmp_path / "t.jsonl"
    twice = json.dumps(TRAJ)[:-1] + ', "harness_id": "other@2"}'
    path.write_text(json.dumps(TRAJ) + "\n" + twice + "\n")
    with pytest.raises(DataError) as e:
        read_jsonl(path)
    assert str(e.value).startswith(f"{path}:2: invalid JSON (duplicate key 'harness")


@pytest.mark.parametrize(
    "row, message",
    [
        ({**TRAJ, "messages": []}, "field 'messages' must be a non-empty list"),
        ({**TRAJ, "harness_id": ""}, "field 'harness_id' must be a harness id"),
        (
            {
                **TRAJ,
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "tool_calls": [{"name": "bad<>"}]},
                ],
            },
            "field 'messages[1].tool_calls[0].name' must be a tool name",
        ),
        (json.dumps(TRAJ)[:-1] + ', "reply": null, "reply": "x"}', "duplicate key"),
    ],
    ids=["empty_messages", "empty_harness_id", "bad_tool_name", "duplicate_key"],
)
def test_sim_report_names_the_bad_row(tmp_path, capsys, row, message):
    path = tmp_path / "data.jsonl"
    bad = row if isinstance(row, str) else json.dumps(row)
    path.write_text(json.dumps(TRAJ) + "\n" + bad + "\n")
    assert main(["sim", "report", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{path}:2: " in err and message in err, err
