"""ChatML rendering of Qwen-style chats with tools, tool results and reasoning.

The skeleton follows the Qwen3 chat template: ``<|im_start|>ROLE\\n...<|im_end|>\\n``
turns; tools listed in the system turn inside ``<tools></tools>``, one JSON object
per line, followed by instructions for the chosen tool-call format; consecutive
``tool`` messages merged into one user turn of ``<tool_response>`` blocks.

Differences from the Qwen templates, on purpose: an assistant turn shows its
reasoning whenever the message carries one (Qwen drops reasoning before the last
user turn; strip it yourself to match), and content and reasoning are stripped
so a rendered body is exactly what :func:`parse_reply` reads back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hat_jax.text.toolcall import (
    ToolCallFormat,
    as_tool_call,
    get_format,
    render_tool_calls,
    tool_function,
)

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
# What the generation prompt pre-fills after "<|im_start|>assistant\n":
# False is Qwen's switch to turn thinking off, True opens reasoning (Qwen3.5).
_THINKING_PREFILL = {None: "", True: "<think>\n", False: "<think>\n\n</think>\n\n"}
_TOOLS_INTRO = (
    "# Tools\n\nYou can call the functions below to help with the user's request. "
    "Their signatures are listed inside <tools></tools> tags, one JSON object per "
    "line:\n"
)

Message = Mapping[str, Any]
Segment = tuple[str, bool]


def _text(content: Any) -> str:
    """Message content as text: None is empty, non-strings are written as JSON."""
    if content is None:
        return ""
    return (
        content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    )


def _tools_block(tools: Iterable[Mapping[str, Any]], form: ToolCallFormat) -> str:
    specs = [{"type": "function", "function": tool_function(t)} for t in tools]
    lines = "\n".join(json.dumps(s, ensure_ascii=False) for s in specs)
    return f"{_TOOLS_INTRO}<tools>\n{lines}\n</tools>\n\n{form.instructions}"


def render_assistant(message: Message, fmt: str = "qwen_xml") -> str:
    """Returns the assistant body the model should produce (no ``<|im_end|>``).

    The body is ``<think>\\nREASONING\\n</think>\\n\\n`` when the message has a
    ``reasoning`` (or ``reasoning_content``) field, then the content, then the
    ``tool_calls`` rendered in ``fmt``.
    """
    form = get_format(fmt)
    reasoning = message.get("reasoning", message.get("reasoning_content"))
    think = "" if reasoning is None else f"<think>\n{reasoning.strip()}\n</think>\n\n"
    content = _text(message.get("content")).strip()
    calls = [as_tool_call(c) for c in message.get("tool_calls") or ()]
    if not calls:
        return think + content
    rendered = render_tool_calls(calls, fmt)
    return think + (
        f"{content}{form.content_separator}{rendered}" if content else rendered
    )


def render_chat_segments(
    messages: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    fmt: str = "qwen_xml",
    add_generation_prompt: bool = True,
    enable_thinking: bool | None = None,
) -> list[Segment]:
    """Renders a chat as ``(text, is_assistant_output)`` pieces.

    The pieces concatenate to :func:`render_chat`'s string. A piece is marked
    True when the model itself produces it: each assistant body and its
    ``<|im_end|>``; role headers, the newline after ``<|im_end|>``, other turns
    and the generation prompt are False. Adjacent pieces with one flag merge.
    """
    form = get_format(fmt)
    out: list[Segment] = []

    def add(text: str, produced: bool = False) -> None:
        if out and out[-1][1] == produced:
            out[-1] = (out[-1][0] + text, produced)
        elif text:
            out.append((text, produced))

    for msg in messages:
        if msg.get("role") not in _ROLES:
            raise ValueError(f"unknown role {msg.get('role')!r} in {msg!r}")
    first_system = bool(messages) and messages[0]["role"] == "system"
    if tools:
        head = f"{_text(messages[0].get('content'))}\n\n" if first_system else ""
        add(f"{IM_START}system\n{head}{_tools_block(tools, form)}{IM_END}\n")
    elif first_system:
        add(f"{IM_START}system\n{_text(messages[0].get('content'))}{IM_END}\n")
    for i, msg in enumerate(messages):
        role = msg["role"]
        if i == 0 and first_system:
            continue
        if role == "assistant":
            add(f"{IM_START}assistant\n")
            add(render_assistant(msg, fmt) + IM_END, True)
            add("\n")
        elif role == "tool":
            if i == 0 or messages[i - 1]["role"] != "tool":
                add(f"{IM_START}user")
            add(f"\n<tool_response>\n{_text(msg.get('content'))}\n</tool_response>")
            if i == len(messages) - 1 or messages[i + 1]["role"] != "tool":
                add(f"{IM_END}\n")
        else:
            add(f"{IM_START}{role}\n{_text(msg.get('content'))}{IM_END}\n")
    if add_generation_prompt:
        add(f"{IM_START}assistant\n{_THINKING_PREFILL[enable_thinking]}")
    return out


def render_chat(
    messages: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    fmt: str = "qwen_xml",
    add_generation_prompt: bool = True,
    enable_thinking: bool | None = None,
) -> str:
    """Renders a chat as one ChatML string.

    Args:
      messages: dicts with ``role`` (system/user/assistant/tool) and
        ``content``; assistant messages may add ``tool_calls`` (ToolCall or
        ``{"name", "arguments"}`` dicts) and ``reasoning``.
      tools: function specs, ``{"type": "function", "function": {...}}`` or
        bare ``{"name", "description", "parameters"}``.
      fmt: the registered tool-call format the model is taught and shown.
      add_generation_prompt: end with an open assistant turn.
      enable_thinking: None leaves the assistant turn open; False pre-fills an
        empty think block (thinking off); True pre-fills ``<think>\\n``.

    Returns:
      The prompt text.
    """
    segments = render_chat_segments(
        messages,
        tools=tools,
        fmt=fmt,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=enable_thinking,
    )
    return "".join(text for text, _ in segments)
