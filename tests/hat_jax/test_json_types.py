"""JSON-Schema types and our validator's subset against `jsonschema` (draft
2020-12), the independent reference; and the tool-call parser agreeing with
the harness validator on them (hat_jax/json_types.py)."""

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hat_jax.harness.json_schema import check_schema, validate_json
from hat_jax.json_types import JSON_TYPES, has_type, type_of
from hat_jax.text.toolcall import ToolCall, parse_reply, render_tool_calls

KEYS = st.sampled_from(["a", "b", "c", "qty"])
NUMBERS = (
    st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-5, 5).map(float)  # integral floats: integers to JSON Schema
    | st.sampled_from([0, -0.0, 1, 1.0, 2**63, float(2**53 + 1), 1e308, 5e-324])
)
SCALARS = st.none() | st.booleans() | NUMBERS | st.text(max_size=4)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3)
    ),
    max_leaves=10,
)


def reference(schema):
    return jsonschema.Draft202012Validator(schema)


@settings(max_examples=500, deadline=None)
@given(value=VALUES)
def test_each_type_agrees_with_jsonschema(value):
    for t in JSON_TYPES:
        assert has_type(value, t) == reference({"type": t}).is_valid(value), (t, value)
    assert reference({"type": type_of(value)}).is_valid(value)


def test_the_cases_the_two_tables_disagreed_on():
    assert has_type(3.0, "integer") and has_type(-0.0, "integer")
    assert not has_type(3.5, "integer") and not has_type(float("inf"), "integer")
    assert not has_type(True, "integer") and not has_type(False, "number")
    assert not has_type((1,), "array") and not has_type(1, "no-such-type")
    assert type_of(3.0) == "integer" and type_of(True) == "boolean"


# --- the validator's subset on generated schemas ------------------------------


@st.composite
def fitting_enum(draw, types):
    """A non-empty enum of distinct scalars of the schema's types."""
    pool = st.lists(SCALARS, min_size=1, max_size=10)
    values = [v for v in draw(pool) if any(has_type(v, t) for t in types)]
    out = []
    for v in values:  # distinct in JSON's sense: 1 is 1.0, true is not 1
        if not any(json.dumps(v) == json.dumps(w) or _same(v, w) for w in out):
            out.append(v)
    assume(out)
    return out


def _same(a, b):
    return isinstance(a, bool) == isinstance(b, bool) and a == b


@st.composite
def schemas(draw, depth=0):
    """A schema `check_schema` accepts, of every keyword our subset knows."""
    types = draw(
        st.lists(st.sampled_from(JSON_TYPES), min_size=1, max_size=3, unique=True)
    )
    s = {"type": types[0] if len(types) == 1 and draw(st.booleans()) else types}
    scalar = [
        t for t in types if t in ("string", "integer", "number", "boolean", "null")
    ]
    if scalar and len(scalar) == len(types) and draw(st.integers(0, 3)) == 0:
        s["enum"] = draw(fitting_enum(types))
    if {"integer", "number"} & set(types):
        bounds = sorted(draw(st.lists(NUMBERS, min_size=2, max_size=2)))
        for key, b in zip(("minimum", "maximum"), bounds):
            if draw(st.booleans()):
                s[key] = b
    if "array" in types:
        s["items"] = draw(schemas(depth + 1)) if depth < 2 else {"type": "null"}
    if "object" in types and depth < 2:
        props = draw(st.dictionaries(KEYS, schemas(depth + 1), max_size=3))
        if props:
            s["properties"] = props
            s["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
        extra = draw(st.none() | st.booleans() | schemas(depth + 1))
        if extra is not None:
            s["additionalProperties"] = extra
    return s


@st.composite
def near(draw, schema):
    """A value built to the schema's shape (often valid, sometimes not)."""
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "enum" in schema and draw(st.booleans()):
        return draw(st.sampled_from(schema["enum"]))
    t = draw(st.sampled_from(types))
    if t == "array":
        return draw(st.lists(near(schema["items"]), max_size=3))
    if t == "object":
        props = schema.get("properties", {})
        keys = draw(st.lists(st.sampled_from(sorted(props) or ["a"]), unique=True))
        out = {k: draw(near(props[k])) if k in props else draw(VALUES) for k in keys}
        if draw(st.integers(0, 3)) == 0:
            out[draw(KEYS)] = draw(VALUES)
        return out
    return draw(VALUES.filter(lambda v: has_type(v, t)) | VALUES)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_validator_agrees_with_jsonschema(data):
    schema = data.draw(schemas())
    assert check_schema(schema) == [], schema
    reference(schema).check_schema(schema)  # the reference's meta-schema too
    value = data.draw(near(schema) | VALUES)
    ours = validate_json(value, schema) == []
    assert ours == reference(schema).is_valid(value), (schema, value)


@pytest.mark.parametrize(
    "schema,value",
    [
        ({"type": "integer", "minimum": 3}, 3.0),
        ({"type": "number", "enum": [1, 2.5]}, 1.0),
        ({"type": ["integer", "boolean"], "enum": [1, True]}, True),
        (
            {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "integer"}},
            },
            {"a": 2.0},
        ),
        ({"type": "array", "items": {"type": "number", "maximum": 1}}, [1, 0.5, True]),
    ],
)
def test_examples_agree_with_jsonschema(schema, value):
    assert (validate_json(value, schema) == []) == reference(schema).is_valid(value)


# --- the tool-call parser asks the same question --------------------------------

TOOL = {
    "name": "buy",
    "parameters": {
        "type": "object",
        "properties": {"qty": {"type": "integer"}, "note": {"type": "string"}},
    },
}


@pytest.mark.parametrize("fmt", ["hermes", "qwen_xml"])
@pytest.mark.parametrize("qty", [3, 3.0, 3.5, True, "3", None])
def test_parser_and_validator_agree_on_a_call(fmt, qty):
    text = render_tool_calls([ToolCall("buy", {"qty": qty})], fmt)
    reply = parse_reply(text, fmt, tools=[TOOL])
    args = reply.tool_calls[0].arguments
    parser_ok = not any(e.kind == "schema_type" for e in reply.errors)
    assert parser_ok == (validate_json(args, TOOL["parameters"]) == [])
    assert parser_ok == reference(TOOL["parameters"]).is_valid(args)


def test_hermes_integral_float_is_an_integer():
    text = '<tool_call>{"name": "buy", "arguments": {"qty": 3.0}}</tool_call>'
    reply = parse_reply(text, "hermes", tools=[TOOL])
    assert reply.errors == []
    assert reply.tool_calls == [ToolCall("buy", {"qty": 3.0})]
