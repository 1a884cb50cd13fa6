"""Slips: gold trajectories in which the first reply quotes wrong numbers and the
harness's hooks catch it, so SFT sees the recovery (issue 16).

A small policy's commonest closed-loop failure is a reply whose numbers are in
no tool result ("现在119元" where ``price_now`` is 619): the ``factual_risk``
hook rejects it and asks again, and a policy trained only on golds, which are
never rejected, has not seen what to do next. With ``slips`` = s, a share s of
the cases (chosen from the case id, so the same cases whatever the batch) send
one wrong first reply: the gold reply with each number it takes from a tool
result replaced by another of the same number of digits that no tool result
holds, under reasoning that names the wrong values. The harness's real hooks
judge it in the agent loop, their feedback follows, and the oracle then looks
the facts up again and sends the gold reply. SFT trains the recovery only
(``hat_jax.harness.tokens.trajectory_to_tokens``: a rejected output is
context), never the wrong reply.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from hat_jax.harness.hooks import number_support

_INT = re.compile(r"(?<![\d.])\d+(?![\d.])")  # a whole number, not part of a decimal


def _rng(case_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"slip:{case_id}".encode()).digest()
    return np.random.default_rng(list(np.frombuffer(digest, np.uint32)))


def slips_here(case_id: str, share: float) -> bool:
    """Whether case ``case_id`` slips at ``share`` (a fixed draw per case)."""
    return share > 0 and _rng(case_id).random() < share


def _wrong(value: str, taken: set[str], rng: np.random.Generator) -> str | None:
    """Another whole number with ``value``'s digit count, not in ``taken``."""
    n = len(value)
    lo, hi = (0, 10) if n == 1 else (10 ** (n - 1), 10**n)
    for _ in range(20):
        w = str(int(rng.integers(lo, hi)))
        if w != value and w not in taken:
            return w
    return None


def slip(
    case_id: str, reply: str, why: str, named: Sequence[str], facts: Sequence[str]
) -> tuple[str, str] | None:
    """The wrong first ``(reply, reasoning)`` of a slipping case, or None when
    the gold reply quotes no whole number from a tool result.

    Args:
      case_id: the case (seeds the wrong values).
      reply: the gold reply.
      why: the gold reasoning before it ("Quote price_now 619; short, ...").
      named: the gold's ``"key value"`` items (``sim.oracle.named_numbers``).
      facts: the tool results of the conversation (JSON texts).
    """
    rng = _rng(case_id)
    rng.random()  # the draw slips_here used
    taken = number_support(facts) | set(_INT.findall(reply))
    swap: dict[str, str] = {}
    for item in named:
        value = item.rsplit(" ", 1)[-1]
        if value.isdigit() and value not in swap:
            w = _wrong(value, taken | set(swap.values()), rng)
            if w is not None:
                swap[value] = w
    if not swap:
        return None

    def sub(text: str) -> str:
        return _INT.sub(lambda m: swap.get(m.group(0), m.group(0)), text)

    start = why.find("Quote ")  # only the quoted values change in the reasoning
    bad_why = why if start < 0 else why[:start] + sub(why[start:])
    return sub(reply), bad_why
