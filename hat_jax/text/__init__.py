"""Text: tokenizer, ChatML rendering (Qwen3.5 XML / hermes), tool-call parsing."""

from hat_jax.text.chat import render_assistant, render_chat, render_chat_segments
from hat_jax.text.tokenizer import Tokenizer
from hat_jax.text.toolcall import (
    ERROR_KINDS,
    ParsedReply,
    ParseError,
    ToolCall,
    ToolCallFormat,
    get_format,
    parse_reply,
    register_format,
    render_tool_calls,
)

__all__ = [
    "ERROR_KINDS",
    "ParseError",
    "ParsedReply",
    "ToolCall",
    "ToolCallFormat",
    "Tokenizer",
    "get_format",
    "parse_reply",
    "register_format",
    "render_assistant",
    "render_chat",
    "render_chat_segments",
    "render_tool_calls",
]
