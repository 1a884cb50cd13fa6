"""A harness Mapping read from data (`mapping.json`, a trajectory's
`meta.hsa.mapping`): every wrong type or shape is a `DataError` naming the
field, never a TypeError from deep inside or a silently misread path."""

import json

import pytest

from hat_jax.harness import Mapping, load_harness
from hat_jax.jsonl import DataError


@pytest.fixture(scope="module")
def good():
    m = Mapping.identity(load_harness("taolive_v1"))
    m.values["check_stock"] = {("sku",): {"M": "medium"}}
    m.added_tools.append("decoy")
    m.ops.append("rename_tools")
    return m.to_dict()


# name: (field, bad value, part of the message)
CASES = {
    "tools_list": ("tools", ["a"], "field 'tools' must be an object, got list"),
    "tools_number": ("tools", {"a": 3}, "field 'tools.a' must be a non-empty string"),
    "skills_blank": ("skills", {"a": " "}, "field 'skills.a' must be a non-empty str"),
    "params_list": ("params", [1], "field 'params' must be an object"),
    "params_dict_of_dicts": ("params", {"t": {"a": "b"}}, "'params.t' must be a list"),
    "path_string": (
        "params",
        {"t": [["abc", ["x"]]]},
        "field 'params.t[0][0]' must be an argument path (a non-empty list of "
        "names), got string",
    ),
    "path_number": ("params", {"t": [[["a"], 5]]}, "'params.t[0][1]' must be an arg"),
    "path_empty": ("params", {"t": [[[], ["b"]]]}, "path (a non-empty list of names"),
    "path_key_number": ("params", {"t": [[[1], ["b"]]]}, "'params.t[0][0][0]' must"),
    "pair_of_three": (
        "params",
        {"t": [[["a"], ["b"], ["c"]]]},
        "field 'params.t[0]' must be a pair [a, b], got a list of 3",
    ),
    "path_twice": (
        "params",
        {"t": [[["a"], ["b"]], [["a"], ["c"]]]},
        "field 'params.t' lists the path ['a'] twice",
    ),
    "values_string": ("values", {"t": [[["a"], "xy"]]}, "'values.t[0][1]' must be a"),
    "value_number": (
        "values",
        {"t": [[["a"], [["x", 1]]]]},
        "field 'values.t[0][1][0]' must be two enum spellings (strings), got integer",
    ),
    "added_tools_string": ("added_tools", "abc", "field 'added_tools' must be a list"),
    "ops_number": ("ops", [1], "field 'ops[0]' must be a non-empty string, got int"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_wrong_shape_is_named(good, case):
    key, value, message = case
    with pytest.raises(DataError) as e:
        Mapping.from_dict({**good, key: value}, "x.json")
    msg = str(e.value)
    assert msg.startswith("x.json: field '") and message in msg, msg


def test_good_mapping_round_trips(good):
    m = Mapping.from_dict(good)
    assert m.to_dict() == good
    assert Mapping.from_json(m.to_json()) == m
    assert Mapping.from_dict({}) == Mapping()


def test_not_a_mapping_and_unknown_fields(good):
    with pytest.raises(DataError, match=r"^m: expected a harness mapping \(a JSON"):
        Mapping.from_dict([good], "m")
    with pytest.raises(DataError, match="^m: unknown field 'tool' in a harness map"):
        Mapping.from_dict({"tool": {}}, "m")


def test_from_json_is_strict(good, tmp_path):
    text = json.dumps(good)[:-1] + ', "ops": []}'
    with pytest.raises(DataError, match="^mapping.json: invalid JSON .duplicate key"):
        Mapping.from_json(text)
    with pytest.raises(DataError, match="^m.json: invalid JSON .NaN"):
        Mapping.from_json('{"tools": NaN}', "m.json")


def test_compose_with_a_mapping_missing_params():
    """A mapping read from data may list a tool without params: compose maps
    it by name instead of raising KeyError."""
    m = Mapping.from_dict({"tools": {"a": "b"}})
    n = Mapping.from_dict({"tools": {"b": "c"}})
    assert m.compose(n).tools == {"a": "c"}
