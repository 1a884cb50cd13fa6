"""Rows whose messages are out of order are refused where they are read."""

import re

import pytest

from hat_jax.harness.trajectory import check_messages
from hat_jax.jsonl import DataError

SYS = {"role": "system", "content": "s"}
USER = {"role": "user", "content": "hi"}
CALL = {"role": "assistant", "content": "", "tool_calls": [{"name": "t"}]}
TOOL = {"role": "tool", "name": "t", "content": "{}"}
REPLY = {"role": "assistant", "content": "ok"}


@pytest.mark.parametrize(
    "messages, at, what",
    [
        ([USER, SYS, REPLY], "messages[1]", "system message after the first"),
        ([SYS, USER, TOOL, REPLY], "messages[2]", "follows no tool call"),
        ([TOOL, USER], "messages[0]", "follows no tool call"),
        ([SYS, USER, REPLY, TOOL], "messages[3]", "follows no tool call"),
    ],
)
def test_out_of_order_messages_are_located(messages, at, what):
    with pytest.raises(
        DataError, match=rf"f\.jsonl:3: field '{re.escape(at)}' .*{what}"
    ):
        check_messages(messages, "f.jsonl:3")


def test_calls_then_results_then_a_reply_are_fine():
    check_messages([SYS, USER, CALL, TOOL, TOOL, REPLY], "f.jsonl:1")
    check_messages([USER, REPLY], "f.jsonl:1")  # no system prompt: allowed
