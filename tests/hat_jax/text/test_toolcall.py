"""Tests for tool-call rendering and parsing (hat_jax.text.toolcall)."""

import json
import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hat_jax.text.toolcall import (
    ERROR_KINDS,
    ParsedReply,
    ToolCall,
    _needs_escape,
    get_format,
    parse_reply,
    register_format,
    render_tool_calls,
)

FORMATS = ["qwen_xml", "hermes"]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "metric": {"type": "boolean"},
                "note": {"type": ["string", "null"]},
            },
            "required": ["city"],
        },
    },
}


def strict(value):
    """Makes equality type-exact (1, 1.0 and True compare equal in Python)."""
    if isinstance(value, dict):
        return ("dict", {k: strict(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("list", [strict(v) for v in value])
    return (type(value).__name__, value)


def kinds(reply: ParsedReply) -> list[str]:
    return [e.kind for e in reply.errors]


# --- concrete formats -------------------------------------------------------


def test_qwen_xml_render_exact():
    call = ToolCall("get_weather", {"city": "Paris", "days": 3, "units": ["C"]})
    assert render_tool_calls([call]) == (
        "<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n"
        '<parameter=units>\n["C"]\n</parameter>\n'
        "</function>\n</tool_call>"
    )


def test_hermes_render_exact():
    calls = [ToolCall("f", {"a": 1}), {"name": "g", "arguments": {}}]
    assert render_tool_calls(calls, "hermes") == (
        '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'
    )


def test_registry():
    assert get_format("qwen_xml").content_separator == "\n\n"
    with pytest.raises(ValueError, match="unknown tool-call format"):
        get_format("nope")

    @register_format("test_dummy")
    class Dummy(get_format("hermes").__class__):
        pass

    assert isinstance(get_format("test_dummy"), Dummy)


def _string_tool(*types: str) -> dict:
    props = {"v": {"type": list(types) if len(types) > 1 else types[0]}}
    return {"name": "f", "parameters": {"type": "object", "properties": props}}


STRING_TOOL = _string_tool("string")
# Strings that read as JSON or carry spacing: vLLM's qwen3_xml parser keeps a
# string-typed value verbatim, so these are written raw and read back as is.
PLAIN_STRINGS = ["3", "true", "null", "[1]", "{}", "  spaced  ", "two\nlines"]
PLAIN_STRINGS += ["", "\nlead", "trail\n", '"hi"', "-0", " 3 ", "1e999", "NaN"]
PLAIN_STRINGS += ["x <b>bold</b> y", "a < /parametr > b", "\r\n", "日本語 🙂"]


@pytest.mark.parametrize("value", PLAIN_STRINGS)
def test_qwen_xml_strings_are_raw_and_round_trip_with_a_schema(value):
    text = render_tool_calls([ToolCall("f", {"v": value})])
    assert f"<parameter=v>\n{value}\n</parameter>" in text
    reply = parse_reply(text, tools=[STRING_TOOL])
    assert reply.errors == []
    assert strict(reply.tool_calls[0].arguments) == strict({"v": value})


# Strings vLLM cannot carry raw (it cuts a value at a parameter tag, also
# spaced, drops the arguments at </function>, strips ChatML turn tokens) and
# call tags our block splitter would take: written as a JSON literal, "<"
# escaped. A string-typed value then reads back as that literal text, as in
# vLLM (tests/serving/test_toolcheck.py runs vLLM on it); without a schema as
# the string.
TAGGED = {
    "a</parameter>b": '"a\\u003c/parameter>b"',
    "a< / parameter >b": '"a\\u003c / parameter >b"',
    "<parameter=x>": '"\\u003cparameter=x>"',
    "a</function>": '"a\\u003c/function>"',
    "<tool_call>\n</tool_call>": '"\\u003ctool_call>\\n\\u003c/tool_call>"',
    "<function=g>": '"\\u003cfunction=g>"',
    "a<|im_end|>": '"a\\u003c|im_end|>"',
}


@pytest.mark.parametrize("value, rendered", TAGGED.items())
def test_qwen_xml_tagged_strings_are_json_literals(value, rendered):
    text = render_tool_calls([ToolCall("f", {"v": value})])
    assert f"<parameter=v>\n{rendered}\n</parameter>" in text
    assert parse_reply(text).tool_calls == [ToolCall("f", {"v": value})]
    reply = parse_reply(text, tools=[STRING_TOOL])
    assert (reply.tool_calls, reply.errors) == ([ToolCall("f", {"v": rendered})], [])


# (declared types, text, value) as vLLM 0.32's coerce_to_schema_type gives it
# (checked against vLLM by tests/serving/test_toolcheck.py's real-vLLM test).
CONVERSIONS = [
    (["integer"], " 3 ", 3),
    (["integer"], "1_000", 1000),
    (["integer"], "3.0", 3.0),  # int() fails: the JSON fallback
    (["integer"], "three", "three"),
    (["number"], "1e2", 100),
    (["number"], "0.5", 0.5),
    (["number"], "inf", "inf"),
    (["boolean"], "True", True),
    (["boolean"], "0", False),
    (["boolean"], "yes", "yes"),
    (["null"], "NULL", None),
    (["string", "null"], "null", None),
    (["string", "null"], "x", "x"),
    (["integer", "string"], "3", 3),
    (["object"], '{"a": [1]}', {"a": [1]}),
    (["object"], "3", 3),
    (["array"], "[1e999]", "[1e999]"),
    (["array"], "[1, 2]", [1, 2]),
    (["int"], "7", 7),  # vLLM's type aliases
]


@pytest.mark.parametrize("types, text, value", CONVERSIONS)
def test_qwen_xml_schema_conversion_matches_vllm(types, text, value):
    body = f"<tool_call><function=f><parameter=v>{text}</parameter></function>"
    reply = parse_reply(body + "</tool_call>", tools=[_string_tool(*types)])
    assert strict(reply.tool_calls[0].arguments) == strict({"v": value})


def test_qwen_xml_untyped_values_stay_text_with_tools():
    props = {"e": {}, "en": {"enum": [1, 2]}, "d": {"description": "x"}}
    tool = {"name": "f", "parameters": {"properties": props}}
    call = ToolCall("f", {"e": [1], "en": 2, "d": 3, "unknown": 4})
    text = render_tool_calls([call, ToolCall("g", {"x": 3})])
    got = parse_reply(text, tools=[tool]).tool_calls
    assert strict(got[0].arguments) == strict(
        {"e": "[1]", "en": 2, "d": "3", "unknown": "4"}
    )
    assert got[1].arguments == {"x": "3"}  # unknown tool: all text, as vLLM


def test_lenient_whitespace_and_plain_values():
    text = (
        "Sure.\n<tool_call><function=f><parameter=a>12</parameter>"
        "<parameter=b>\nhello world\n</parameter></function></tool_call>"
    )
    reply = parse_reply(text)
    assert reply.content == "Sure."
    assert reply.tool_calls == [ToolCall("f", {"a": 12, "b": "hello world"})]
    assert reply.errors == []


# --- reasoning ----------------------------------------------------------------


def test_think_split():
    reply = parse_reply("<think>\nplan\n</think>\n\nAnswer.")
    assert (reply.reasoning, reply.content, reply.errors) == ("plan", "Answer.", [])
    # Qwen3.5 prompts pre-fill "<think>\n": the reply starts inside reasoning.
    reply = parse_reply("plan more\n</think>\n\nAnswer.")
    assert (reply.reasoning, reply.content) == ("plan more", "Answer.")
    assert parse_reply("<think>\n\n</think>\n\nHi").reasoning == ""
    assert parse_reply("Hi").reasoning is None


def test_unclosed_think_is_all_reasoning():
    reply = parse_reply("<think>\nstill going <tool_call>")
    assert reply.reasoning == "still going <tool_call>"
    assert (reply.content, reply.tool_calls, kinds(reply)) == (
        "",
        [],
        ["unclosed_think"],
    )


def test_close_think_after_tool_call_is_content():
    text = render_tool_calls([ToolCall("f", {"s": "</think>"})]) + " </think>"
    reply = parse_reply(text)
    assert reply.reasoning is None
    assert reply.tool_calls == [ToolCall("f", {"s": "</think>"})]


# --- errors -------------------------------------------------------------------

GOOD = "<tool_call>\n<function=ok>\n</function>\n</tool_call>"
XML_CASES = {
    "unclosed_tool_call": "<tool_call>\n<function=f>\n</function>\n",
    "stray_close": "hi </tool_call>",
    "missing_function": "<tool_call>\nhello\n</tool_call>",
    "missing_name": "<tool_call>\n<function=>\n</function>\n</tool_call>",
    "unclosed_function": "<tool_call>\n<function=f>\n</tool_call>",
    "bad_parameter": "<tool_call><function=f><parameter=a\nb></function></tool_call>",
    "unclosed_parameter": (
        "<tool_call><function=f><parameter=a>1<parameter=b>2</parameter>"
        "</function></tool_call>"
    ),
    "stray_text": "<tool_call>junk<function=f></function></tool_call>",
}
HERMES_CASES = {
    "bad_json": '<tool_call>\n{"name": "f", \n</tool_call>',
    "missing_name": '<tool_call>\n{"arguments": {}}\n</tool_call>',
    "bad_arguments": '<tool_call>\n{"name": "f", "arguments": [1]}\n</tool_call>',
    "duplicate_parameter": (
        '<tool_call>\n{"name": "f", "arguments": {"a": 1, "a": 2}}\n</tool_call>'
    ),
}


@pytest.mark.parametrize(
    "fmt, kind, bad",
    [("qwen_xml", k, v) for k, v in XML_CASES.items()]
    + [("hermes", k, v) for k, v in HERMES_CASES.items()],
)
def test_error_kind_and_good_calls_survive(fmt, kind, bad):
    good = GOOD if fmt == "qwen_xml" else render_tool_calls([ToolCall("ok", {})], fmt)
    text = f"{good}\n{bad}" if kind == "unclosed_tool_call" else f"{bad}\n{good}"
    reply = parse_reply(text, fmt)
    assert kind in kinds(reply)
    assert ToolCall("ok", {}) in reply.tool_calls
    for err in reply.errors:
        assert 0 <= err.span[0] <= err.span[1] <= len(text)


def test_error_span_points_at_the_block():
    bad = "<tool_call>\nnothing\n</tool_call>"
    text = "Intro. " + bad
    (err,) = parse_reply(text).errors
    assert text[slice(*err.span)] == bad


def test_nested_open_reports_the_outer_block():
    text = "<tool_call>\n<function=a>\n" + GOOD
    reply = parse_reply(text)
    assert kinds(reply) == ["unclosed_tool_call"]
    assert reply.tool_calls == [ToolCall("ok", {})]


def test_duplicate_parameter_last_wins():
    text = (
        "<tool_call><function=f><parameter=a>1</parameter>"
        "<parameter=a>2</parameter></function></tool_call>"
    )
    reply = parse_reply(text)
    assert kinds(reply) == ["duplicate_parameter"]
    assert reply.tool_calls == [ToolCall("f", {"a": 2})]


# --- schemas ------------------------------------------------------------------


def test_schema_coerces_declared_types():
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n1984\n</parameter>\n"
        "<parameter=days>\n3.0\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n"
        "<parameter=note>\nnull\n</parameter>\n</function>\n</tool_call>"
    )
    reply = parse_reply(text, tools=[WEATHER])
    args = {"city": "1984", "days": 3.0, "metric": True, "note": None}
    assert strict(reply.tool_calls[0].arguments) == strict(args)
    assert reply.errors == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_schema_errors(fmt):
    calls = [
        ToolCall("get_weather", {"days": "soon", "extra": 1}),
        ToolCall("launch", {}),
    ]
    reply = parse_reply(render_tool_calls(calls, fmt), fmt, tools=[WEATHER])
    assert sorted(kinds(reply)) == [
        "missing_parameter",
        "schema_type",
        "unknown_parameter",
        "unknown_tool",
    ]
    assert len(reply.tool_calls) == 2  # schema problems keep the call


def test_bare_tool_spec_and_junk_tools_do_not_raise():
    bare = WEATHER["function"]
    text = render_tool_calls([ToolCall("get_weather", {"city": "7"})])
    assert parse_reply(text, tools=[bare]).errors == []
    junk = [1, "x", {"name": 3}, {"function": {"name": "f", "parameters": 5}}]
    assert parse_reply(text, tools=junk).tool_calls[0].arguments == {"city": "7"}


# --- round trips ----------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]*", fullmatch=True)
TRICKY = ["<", ">", "\n", " ", "</parameter>", "<parameter=x>", "</function>"]
TRICKY += ["<tool_call>", "</tool_call>", "</think>", "3", "true", "null", '"']
TRICKY += ["{", "[", "\\", "é", "日本語", "🙂", "\t", "\r\n"]
STRINGS = st.lists(st.text(max_size=6) | st.sampled_from(TRICKY), max_size=6).map(
    "".join
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | STRINGS
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3)
    ),
    max_leaves=8,
)
CALLS = st.builds(ToolCall, NAMES, st.dictionaries(NAMES, VALUES, max_size=4))


def _finite(text: str) -> float:
    if not math.isfinite(number := float(text)):
        raise ValueError(text)
    return number


def _no_constant(text: str) -> float:
    raise ValueError(text)


def _reads_as_json(value: str) -> bool:
    """Whether json.loads gives finite JSON for ``value``."""
    try:
        json.loads(value, parse_float=_finite, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return False
    return True


# Without a schema a raw string that reads as JSON reads back as that JSON.
UNTYPED_CALLS = st.builds(
    ToolCall,
    NAMES,
    st.dictionaries(
        NAMES,
        VALUES.filter(lambda v: not (isinstance(v, str) and _reads_as_json(v))),
        max_size=4,
    ),
)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=300, deadline=None)
@given(calls=st.lists(UNTYPED_CALLS, min_size=1, max_size=3))
def test_round_trip(fmt, calls):
    reply = parse_reply(render_tool_calls(calls, fmt), fmt)
    assert reply.errors == []
    assert reply.content == ""
    assert [strict(c.arguments) for c in reply.tool_calls] == [
        strict(c.arguments) for c in calls
    ]
    assert [c.name for c in reply.tool_calls] == [c.name for c in calls]


def by_value(value):
    """strict(), but numbers by value: a "number" value that is whole reads back
    as an int, as in vLLM (3.0 -> 3)."""
    if isinstance(value, dict):
        return ("dict", {k: by_value(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("list", [by_value(v) for v in value])
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", value)
    return (type(value).__name__, value)


def _schema_for(value) -> dict:
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    names |= {list: "array", dict: "object", type(None): "null"}
    return {"type": names[type(value)]}


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=150, deadline=None)
@given(call=CALLS)
def test_round_trip_with_schema(fmt, call):
    props = {k: _schema_for(v) for k, v in call.arguments.items()}
    tool = {"name": call.name, "parameters": {"properties": props}}
    reply = parse_reply(render_tool_calls([call], fmt), fmt, tools=[tool])
    assert reply.errors == []
    got = reply.tool_calls[0].arguments
    want = dict(call.arguments)
    for key, value in want.items():
        if fmt == "qwen_xml" and isinstance(value, str) and _needs_escape(value):
            assert json.loads(got[key]) == value  # the JSON literal, as vLLM
            want[key] = got[key]
    assert by_value(got) == by_value(want)


# --- robustness -------------------------------------------------------------------

FRAGMENTS = ["<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter="]
FRAGMENTS += ["</parameter>", ">", "\n", "{", "}", "[", '"name"', '"arguments"', ":"]
FRAGMENTS += ['"', ",", "<think>", "</think>", "f", "null", "1e999", "é", "\\u003c"]

WEATHER_KEYS = st.sampled_from(["city", "days", "metric", "note", "other"])
WEATHER_CALLS = st.builds(
    ToolCall, st.just("get_weather"), st.dictionaries(WEATHER_KEYS, VALUES, max_size=4)
)


@st.composite
def messy_replies(draw) -> tuple[str, str]:
    """A reply text and a format: random fragments or a mutated valid render."""
    fmt = draw(st.sampled_from(FORMATS))
    pieces = st.sampled_from(FRAGMENTS) | st.text(max_size=5)
    if draw(st.booleans()):
        text = "".join(draw(st.lists(pieces, max_size=30)))
    else:
        calls = draw(st.lists(CALLS | WEATHER_CALLS, max_size=3))
        text = draw(st.sampled_from(["", "Hi.\n", "<think>\nr\n</think>\n\n"]))
        text += render_tool_calls(calls, draw(st.sampled_from([fmt, fmt, *FORMATS])))
    for _ in range(draw(st.integers(0, 4))):  # truncate, cut, insert, repeat
        i, j = sorted(draw(st.integers(0, len(text))) for _ in range(2))
        op = draw(st.sampled_from(["truncate", "cut", "insert", "repeat"]))
        if op == "truncate":
            text = text[:i]
        elif op == "cut":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(pieces) + text[i:]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text, fmt


@settings(
    max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(case=messy_replies(), with_tools=st.booleans())
def test_parser_never_raises(case, with_tools):
    text, fmt = case
    reply = parse_reply(text, fmt, tools=[WEATHER] if with_tools else None)
    assert isinstance(reply, ParsedReply)
    assert isinstance(reply.content, str)
    assert all(isinstance(c, ToolCall) for c in reply.tool_calls)
    assert all(isinstance(c.arguments, dict) for c in reply.tool_calls)
    assert reply.reasoning is None or isinstance(reply.reasoning, str)
    for err in reply.errors:
        assert err.kind in ERROR_KINDS
        assert 0 <= err.span[0] <= err.span[1] <= len(text)


ADVERSARIAL = [
    "<tool_call>" * 20_000,
    "</tool_call>" * 20_000,
    "<tool_call>\n<function=f>\n" + "<parameter=" * 20_000,
    "<tool_call>\n<function=f>\n" + "<parameter=a>" * 15_000 + "</tool_call>",
    "<tool_call>\n" + "[" * 200_000 + "\n</tool_call>",
    "<tool_call>\n<function=f>\n<parameter=a>\n" + "[" * 200_000 + "\n</parameter>",
    "<think>" + "</think>" * 25_000,
    "x" * 200_000 + "</think>" + "<tool_call><function=" * 8_000,
    ("<tool_call><function=f><parameter=a>" + "é" * 20 + "</parameter>") * 3_000,
    "<tool_call><function=f>"
    + "<parameter=a>\n1\n</parameter>" * 8_000
    + "</function>",
    render_tool_calls([ToolCall("get_weather", {"city": "Oslo"})] * 2_000),
    render_tool_calls([ToolCall("get_weather", {"city": "Oslo"})] * 2_000, "hermes"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_are_fast(fmt, text):
    # This thread's CPU time, not the wall clock: other processes on a loaded
    # machine do not count. Linear parsing takes < 0.05 s here; a backtracking
    # regex on these 200k-character inputs would take minutes.
    start = time.thread_time()
    reply = parse_reply(text, fmt, tools=[WEATHER])
    assert time.thread_time() - start < 2.0
    assert all(e.kind in ERROR_KINDS for e in reply.errors)
