"""Scripted policies that try to game the judges, for testing the metrics.

Each is an :class:`~sim.oracle.OraclePolicy` (it finds a conversation's case the
same way) that deviates from the gold in one way a weak model might:

- :class:`ConstantReply`: one plausible lookup (the product tool for the asked
  or featured link), ``load_skill`` of the product-question reply skill, then
  the same sentence for every message (or one per language: a mapping
  ``{"zh": ..., "en": ...}``); ``route=True`` does the oracle's tool calls and
  skill loads and only replaces the reply.
- :class:`WrongNumbers`: the oracle's turn with every number in the reply moved
  by one (``3号链接`` -> ``4号链接``, ``¥99`` -> ``¥100``).
- :class:`Memoriser`: the oracle of one fixed harness (``taolive_v1``) whatever
  the harness in force: its tool and skill names, argument shapes and reply
  rules; a perfect fixed-harness SFT model.

A metric that one of these maxes out measures nothing; ``tests/experiments/
test_gaming.py`` bounds what each scores through the real suites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hat_jax.harness import Harness, load_harness
from hat_jax.text.toolcall import ToolCall
from sim.binding import Binding, bind, role_arguments
from sim.oracle import Case, OraclePolicy, _assistant, _load, _read
from sim.types import TOOL_ROLES

_DIGITS = re.compile(r"\d+")


class ConstantReply(OraclePolicy):
    """Answers every message with ``sentence`` (module docstring)."""

    def __init__(
        self, cases, bindings, sentence: str | Mapping[str, str], *, route=False
    ):
        super().__init__(cases, bindings, reasoning=False)
        self.sentence, self.route = sentence, route

    def next_message(self, messages, case: Case, binding: Binding) -> dict[str, Any]:
        said = self.sentence
        if isinstance(said, Mapping):
            said = said[case.message.lang]
        if self.route:
            out = super().next_message(messages, case, binding)
            if out.get("tool_calls"):
                return out
            return _assistant(content=said)
        steps = _read(messages).steps
        if steps == 0:
            args = role_arguments("product_info", case.message, case.snapshot)
            call = ToolCall(TOOL_ROLES["product_info"], args)
            return _assistant([binding.forward(call)])
        if steps == 1:
            return _assistant(_load([binding.reply_skills["product_question"]]))
        return _assistant(content=said)


def shift_numbers(text: str) -> str:
    """Every run of digits in ``text`` plus one."""
    return _DIGITS.sub(lambda m: str(int(m.group(0)) + 1), text)


class WrongNumbers(OraclePolicy):
    """The oracle's turn, every number of its reply off by one."""

    def __init__(self, cases, bindings):
        super().__init__(cases, bindings, reasoning=False)

    def next_message(self, messages, case: Case, binding: Binding) -> dict[str, Any]:
        out = super().next_message(messages, case, binding)
        if not out.get("tool_calls"):
            out["content"] = shift_numbers(str(out.get("content") or ""))
        return out


class Memoriser(OraclePolicy):
    """The oracle of ``harness`` (default ``taolive_v1``) under any harness."""

    def __init__(
        self,
        cases: Sequence[Case],
        bindings: Binding | Sequence[Binding],
        harness: Harness | str = "taolive_v1",
    ):
        super().__init__(cases, bindings, reasoning=False)
        fixed = load_harness(harness) if isinstance(harness, str) else harness
        self.fixed = bind(fixed)

    def next_message(self, messages, case: Case, binding: Binding) -> dict[str, Any]:
        return super().next_message(messages, case, self.fixed)
