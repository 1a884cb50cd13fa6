"""Decision tokens: the few assistant tokens that decide a turn.

Token accuracy over a whole trajectory is dominated by text a model can copy or
memorise (think lines, tags, templates); the turn is decided by a handful of
tokens. Each token of :func:`hat_jax.harness.tokens.trajectory_to_tokens` gets a
kind (``KINDS``, 0 = none), from the character spans of each assistant segment:

  1 tool      the name of a called tool (not ``load_skill``)
  2 argument  an argument value of a tool call (not ``load_skill``'s)
  3 skill     the skill name of a ``load_skill`` call
  4 number    a number in the reply text (outside reasoning and tool calls)
  5 intent    what the reasoning says the viewer's message is: the words after
              "message is a" up to ":" in a <think> block (the gold's "product
              question (price) about link 7"). The first of them follows the
              user message and a fixed lead, so its teacher-forced argmax is the
              closed-loop first decision; every later decision is conditioned
              on it (a call's argument copies the link the reasoning names)
  6 fact      a value the reasoning names before a reply ("Quote price_now 109,
              off 10; ..." in a <think> block, ``sim.oracle.named_numbers``):
              the look-up of a number in a tool result, which the reply then
              copies from a few tokens back
  7 fact_key  the key it names with each value ("price_now", "off"): which
              field of the result the question asks for
  8 lang      the reply language the reasoning names ("..., in English: call";
              "...; short, in English."), which the reply then follows
  9 plan      what the reasoning before a reply says it will say ("Reply: decline
              the claim, give selling points."; ``sim.oracle.reply_plan``)

A token belongs to a kind when its character span overlaps one of the kind's
spans (tokenizer offsets), so the kinds line up with the ids exactly. Both
tool-call formats are read: ``qwen_xml`` (``<function=NAME>``,
``<parameter=ARG>VALUE</parameter>``) and ``hermes`` (a JSON object).
"""

from __future__ import annotations

import re

import numpy as np

from hat_jax.harness.spec import LOAD_SKILL
from hat_jax.harness.tokens import segment_targets
from hat_jax.harness.trajectory import Trajectory
from hat_jax.text.chat import render_chat_segments
from hat_jax.text.tokenizer import Tokenizer

# kind k + 1 in the arrays
KINDS = (
    "tool",
    "argument",
    "skill",
    "number",
    "intent",
    "fact",
    "fact_key",
    "lang",
    "plan",
)
_THINK = re.compile(r"<think>.*?</think>", re.S)
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_FUNCTION = re.compile(r"<function=([^>\n]+)>")
_PARAM = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.S)
_JSON_NAME = re.compile(r'"name":\s*"([^"]*)"')
_JSON_VALUE = re.compile(r'"[^"]*":\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false)')
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_INTENT = re.compile(r"message is an? ([^:,\n<]+)")
_LANG = re.compile(r"\bin (Chinese|English)\b")
_PLAN = re.compile(r"Reply: ([^.\n<]+)\.")
_QUOTE = re.compile(r"Quote ([^;\n<]+);")
_FACT = re.compile(r"([^,]+?) (\d+(?:\.\d+)?)(?:, |$)")  # "key value" items
Span = tuple[int, int, int]  # [start, end) in characters, kind 1..9


def _call_spans(body: str, at: int) -> list[Span]:
    """The decision spans of one tool call's body (starting at ``at``)."""
    out: list[Span] = []
    fn = _FUNCTION.search(body) or _JSON_NAME.search(body)
    if fn is None:
        return out
    skill = fn.group(1) == LOAD_SKILL
    if not skill:
        out.append((at + fn.start(1), at + fn.end(1), 1))
    if _FUNCTION.search(body):
        values = [(m.start(2), m.end(2)) for m in _PARAM.finditer(body)]
    else:
        rest = body.find('"arguments"')
        found = [] if rest < 0 else list(_JSON_VALUE.finditer(body, rest))
        quoted = [m.group(1).startswith('"') for m in found]  # strings: no quotes
        values = [(m.start(1) + q, m.end(1) - q) for m, q in zip(found, quoted)]
    out += [(at + s, at + e, 3 if skill else 2) for s, e in values if e > s]
    return out


def decision_spans(text: str) -> list[Span]:
    """Decision spans of one rendered assistant message (module docstring)."""
    out: list[Span] = []
    hidden = [m.span() for m in _THINK.finditer(text)]
    for a, b in hidden:
        out += [(m.start(1), m.end(1), 5) for m in _INTENT.finditer(text, a, b)]
        out += [(m.start(1), m.end(1), 8) for m in _LANG.finditer(text, a, b)]
        out += [(m.start(1), m.end(1), 9) for m in _PLAN.finditer(text, a, b)]
        for q in _QUOTE.finditer(text, a, b):
            for f in _FACT.finditer(q.group(1)):
                at = q.start(1)
                out.append((at + f.start(2), at + f.end(2), 6))
                out.append((at + f.start(1), at + f.end(1), 7))
    for m in _CALL.finditer(text):
        out += _call_spans(m.group(1), m.start(1))
        hidden.append(m.span())
    for m in _NUMBER.finditer(text):
        if not any(s <= m.start() < e for s, e in hidden):
            out.append((m.start(), m.end(), 4))
    return out


def decision_kinds(
    traj: Trajectory, tokenizer: Tokenizer, *, fmt: str = "qwen_xml"
) -> np.ndarray:
    """int8 [T]: each token's decision kind (0 none), aligned with the ids of
    ``trajectory_to_tokens(traj, tokenizer, fmt=fmt)``; 0 on outputs the harness
    rejected (``hat_jax.harness.tokens.rejected``)."""
    segments = render_chat_segments(
        traj.messages, tools=None, fmt=fmt, add_generation_prompt=False
    )
    # a rejected output decides nothing
    targets = segment_targets(segments, traj.messages, train_rejected=False)
    kinds: list[int] = []
    for (text, _), target in zip(segments, targets):
        enc = tokenizer.backend.encode(text, add_special_tokens=False)
        spans = decision_spans(text) if target else []
        for s, e in enc.offsets:
            kind = max(
                (k for a, b, k in spans if a < max(e, s + 1) and s < b), default=0
            )
            kinds.append(kind)
    return np.asarray(kinds, np.int8)
