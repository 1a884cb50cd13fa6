"""Tests for ChatML rendering (hat_jax.text.chat)."""

import pytest

from hat_jax.text.chat import render_assistant, render_chat, render_chat_segments
from hat_jax.text.toolcall import ToolCall, get_format, parse_reply

TOOL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
TOOL_LINE = (
    '{"type": "function", "function": {"name": "get_weather", "description": '
    '"Weather for a city.", "parameters": {"type": "object", "properties": '
    '{"city": {"type": "string"}, "days": {"type": "integer"}}, "required": '
    '["city"]}}}'
)
CHAT = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "Let me check.",
        "reasoning": "Need the tool.",
        "tool_calls": [ToolCall("get_weather", {"city": "Paris", "days": 2})],
    },
    {"role": "tool", "content": "sunny"},
    {"role": "tool", "content": {"temp": 21}},
    {"role": "assistant", "content": "Sunny, 21 C."},
]
INTRO = (
    "# Tools\n\nYou can call the functions below to help with the user's request. "
    "Their signatures are listed inside <tools></tools> tags, one JSON object per "
    "line:\n"
)
XML_CALL = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"
)
HERMES_CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
    '"days": 2}}\n</tool_call>'
)


def expected(fmt: str, call: str, sep: str) -> str:
    return (
        "<|im_start|>system\nYou are helpful.\n\n"
        f"{INTRO}<tools>\n{TOOL_LINE}\n</tools>\n\n{get_format(fmt).instructions}"
        "<|im_end|>\n"
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nNeed the tool.\n</think>\n\n"
        f"Let me check.{sep}{call}<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n"
        '<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\nSunny, 21 C.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


@pytest.mark.parametrize(
    "fmt, call, sep", [("qwen_xml", XML_CALL, "\n\n"), ("hermes", HERMES_CALL, "\n")]
)
def test_full_conversation(fmt, call, sep):
    assert render_chat(CHAT, tools=[TOOL], fmt=fmt) == expected(fmt, call, sep)


def test_instructions_describe_each_format():
    assert "<parameter=PARAMETER_NAME>" in get_format("qwen_xml").instructions
    assert '"arguments"' in get_format("hermes").instructions


def test_wrapped_and_bare_tool_specs_match():
    wrapped = {"type": "function", "function": TOOL}
    assert render_chat(CHAT, tools=[wrapped]) == render_chat(CHAT, tools=[TOOL])


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes"])
@pytest.mark.parametrize("thinking", [None, True, False])
def test_segments(fmt, thinking):
    kw = dict(tools=[TOOL], fmt=fmt, enable_thinking=thinking)
    segments = render_chat_segments(CHAT, **kw)
    assert "".join(t for t, _ in segments) == render_chat(CHAT, **kw)
    produced = [t for t, mine in segments if mine]
    bodies = [m for m in CHAT if m["role"] == "assistant"]
    assert produced == [render_assistant(m, fmt) + "<|im_end|>" for m in bodies]
    assert all(t for t, _ in segments)
    flags = [mine for _, mine in segments]
    assert all(a != b for a, b in zip(flags, flags[1:], strict=False))


def test_generation_prompt_variants():
    chat = [{"role": "user", "content": "Hi"}]
    base = "<|im_start|>user\nHi<|im_end|>\n"
    assert render_chat(chat, add_generation_prompt=False) == base
    assert render_chat(chat) == base + "<|im_start|>assistant\n"
    assert render_chat(chat, enable_thinking=False) == (
        base + "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert render_chat(chat, enable_thinking=True) == (
        base + "<|im_start|>assistant\n<think>\n"
    )


def test_system_without_tools_and_tools_without_system():
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert render_chat(chat, add_generation_prompt=False) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
    )
    text = render_chat(chat[1:], tools=[TOOL], add_generation_prompt=False)
    assert text.startswith(f"<|im_start|>system\n{INTRO}<tools>\n")


def test_tool_message_first_and_openai_style_calls():
    chat = [
        {"role": "tool", "content": "r"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
            ],
        },
    ]
    assert render_chat(chat, fmt="hermes", add_generation_prompt=False) == (
        "<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}'
        "\n</tool_call><|im_end|>\n"
    )


def test_unknown_role_raises():
    with pytest.raises(ValueError, match="unknown role"):
        render_chat([{"role": "robot", "content": "x"}])


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes"])
def test_render_assistant_parses_back(fmt):
    msg = CHAT[2]
    reply = parse_reply(render_assistant(msg, fmt), fmt, tools=[TOOL])
    assert reply.reasoning == msg["reasoning"]
    assert reply.content == msg["content"]
    assert reply.tool_calls == msg["tool_calls"]
    assert reply.errors == []
