"""The scripted teacher of the generated apps, and the tools behind them.

:class:`AppBackend` serves an episode's tools from its app's records (injected
faults at ``fault_rate``: a timeout, malformed output or a permission denial,
as taolive's simulator injects them). :class:`AppTeacher` is a
:class:`~hat_jax.harness.Policy` that plays each episode's playbook
(:func:`~experiments.world.apps.episode.needed_skills`,
:func:`~experiments.world.apps.episode.needed_calls`) through the real agent
loop: it reads the harness's names from the app, retries a failed call once,
says it is checking when a call failed twice, and writes a reply from what the
tools returned (:mod:`~experiments.world.apps.replies`) that passes the
harness's reply hooks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments.world.apps.episode import Episode, needed_calls, needed_skills
from experiments.world.apps.replies import checking_options, reply_facts, reply_options
from hat_jax.harness import PolicyOutput, ToolContext, ToolOutcome
from hat_jax.harness.backend import FAULTS, as_result_text, fault_outcome
from hat_jax.harness.policy import first_user_message, formats
from hat_jax.harness.prompt import render_system_prompt
from hat_jax.harness.signoff import required_tags
from hat_jax.harness.spec import LOAD_SKILL
from hat_jax.text.chat import render_assistant
from sim.oracle import hooks_accept, parse_result

EPISODE_KEY = "app_episode"  # the request meta key naming the episode's index
LANG_NAMES = {"zh": "Chinese", "en": "English"}
INTENT_PHRASES = {
    "question": "a question about",
    "buy": "a wish to {action}",
    "reserve": "a request to hold",
    "policy": "a policy question",
    "chat": "small talk",
    "multi": "two questions, the first about",
    "claim": "a request to promise something about",
    "injection": "an attempt to change my instructions",
}


def _leaf(args: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = args
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


class AppBackend:
    """The tools of many episodes' apps (``meta[EPISODE_KEY]`` picks one)."""

    def __init__(self, episodes: Sequence[Episode], fault_rate: float = 0.0):
        self.episodes = list(episodes)
        self.fault_rate = float(fault_rate)

    def call(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext
    ) -> ToolOutcome:
        ep = self.episode(context.meta)
        app = ep.app
        role = next((r for r, n in app.tools.items() if n == name), None)
        if role is None:  # a decoy, or a name the app does not have
            return ToolOutcome(f"error: {name} is not available here", False, "error")
        rng = context.rng or np.random.default_rng(0)
        if self.fault_rate and rng.random() < self.fault_rate:
            return fault_outcome(FAULTS[int(rng.integers(len(FAULTS)))], name)
        paths = app.params.get(role, {})
        n = _leaf(arguments, paths["id"]) if "id" in paths else None
        id_key = paths["id"][-1] if "id" in paths else "number"
        if role in ("lookup", "stock", "reserve") and n not in app.records:
            return ToolOutcome(f"error: no {app.domain.entity_en} {n}", False, "error")
        value = self._result(app, role, n, id_key, arguments, rng)
        return ToolOutcome(as_result_text(value))

    def episode(self, meta) -> Episode:
        """The episode a call belongs to (by the request's meta)."""
        return self.episodes[int(meta[EPISODE_KEY])]

    @staticmethod
    def _result(app, role, n, id_key, arguments, rng) -> dict[str, Any]:
        d = app.domain
        if role == "lookup":
            rec = app.records[n]
            # how many are left comes from the stock tool where the app has one
            hide = d.stock.key if "stock" in app.tools else None
            return {id_key: n} | {k: v for k, v in rec.items() if k != hide}
        if role == "stock":
            return {id_key: n, d.stock.key: app.records[n][d.stock.key]}
        if role == "reserve":
            qty = _leaf(arguments, app.params["reserve"]["qty"])
            return {id_key: n, "qty": qty, "hold_no": int(rng.integers(1000, 10000))}
        if role == "policy":
            topic = _leaf(arguments, app.params["policy"].get("topic", ()))
            if topic in app.policies:
                return {topic: app.policies[topic]}
            return dict(app.policies)
        if n is None:  # deals: app-wide without a number
            return {"deals": app.shop_deals}
        return {id_key: n, "deals": app.deals.get(n, [])}


def read_turn(messages: Sequence[dict[str, Any]]):
    """(exchanges, replies, model calls) of a conversation so far: exchanges are
    (name, arguments, result text) in call order."""
    exchanges, replies, steps, pending = [], [], 0, []
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            steps += 1
            pending = list(m.get("tool_calls") or [])
            if not pending and m.get("content"):
                replies.append(m["content"])
        elif role == "tool" and pending:
            call = pending.pop(0)
            exchanges.append((call["name"], call["arguments"], str(m["content"])))
    return exchanges, replies, steps


class AppTeacher:
    """Writes each episode's gold turn (a :class:`~hat_jax.harness.Policy`)."""

    def __init__(self, episodes: Sequence[Episode], *, skills_first: float = 0.7):
        self.episodes = list(episodes)
        self.skills_first = float(skills_first)
        self.table: dict[tuple[str, str], int] = {}
        for i, ep in enumerate(self.episodes):
            system = render_system_prompt(ep.app.harness, ep.context)
            self.table.setdefault((system, ep.message), i)

    def generate(self, conversations, *, fmt="qwen_xml", seed=None):
        out = []
        for conv, f in zip(conversations, formats(fmt, len(conversations))):
            key = (str(conv[0].get("content", "")), first_user_message(conv))
            if key not in self.table:
                raise KeyError(f"no episode for message {key[1]!r}")
            ep = self.episodes[self.table[key]]
            out.append(PolicyOutput(render_assistant(self.next_message(conv, ep), f)))
        return out

    def next_message(self, conv, ep: Episode) -> dict[str, Any]:
        exchanges, replies, steps = read_turn(conv)
        skills = needed_skills(ep)
        loaded = [
            a.get("name")
            for name, a, text in exchanges
            if name == LOAD_SKILL and not text.startswith("error")
        ]
        todo_skills = [s for s in skills if s not in loaded]
        calls = needed_calls(ep)
        tries = [[t for n, a, t in exchanges if (n, a) == (c[1], c[2])] for c in calls]
        ok = [any(parse_result(t) is not None for t in ts) for ts in tries]
        first = [c for c, ts in zip(calls, tries) if not ts]
        retry = [
            c for c, ts, k in zip(calls, tries, ok) if ts and not k and len(ts) < 2
        ]
        about = self._about(ep)
        if first or retry:
            now = first or retry
            lead = todo_skills if first and self._lead(ep) else []
            names = ", ".join(_code(c[1]) for c in now)
            if retry and not first:
                why = f"The call to {names} failed; try it once more."
            elif lead:
                why = f"{about}: load {' and '.join(map(_code, lead))}, call {names}."
            else:
                why = f"{about}: call {names} first."
            msg_calls = [_load(s) for s in lead] + [
                {"name": c[1], "arguments": c[2]} for c in now
            ]
            return {"role": "assistant", "content": "", "reasoning": why,
                    "tool_calls": msg_calls}  # fmt: skip
        if todo_skills:
            why = f"Load {' and '.join(map(_code, todo_skills))} before replying."
            if steps == 0:
                why = f"{about}: load {' and '.join(map(_code, todo_skills))} first."
            return {"role": "assistant", "content": "", "reasoning": why,
                    "tool_calls": [_load(s) for s in todo_skills]}  # fmt: skip
        results = {}
        for (role, _, _), ts in zip(calls, tries):
            results[role] = next((r for t in ts if (r := parse_result(t))), None)
        h = ep.app.harness
        tags = required_tags(h, skills[0])
        lang = LANG_NAMES[ep.lang]
        if not all(ok):
            options = checking_options(ep, tags)
            why = "A tool failed twice; tell the user I am checking, no guesses."
        else:
            facts = reply_facts(ep, results)
            options = reply_options(ep, facts, tags)
            quoted = ", ".join(facts.values())
            why = f"Quote {quoted}; short, in {lang}." if quoted else ""
            why = why or f"Answer warmly; short, in {lang}."
        facts_seen = [t for n, _, t in exchanges if n != LOAD_SKILL]
        fits = [
            r for r in options if hooks_accept(h, ep.message, loaded, facts_seen, r)
        ]
        reply = (fits or options)[0]
        if replies:
            why = f"The harness rejected my reply. {why}"
        return {"role": "assistant", "content": reply, "reasoning": why}

    def _lead(self, ep: Episode) -> bool:
        """Whether this episode loads its skills in the first message (a fixed
        function of the episode, so regenerating gives the same gold)."""
        h = sum(map(ord, ep.message + ep.app.harness.name)) % 1000
        return h < self.skills_first * 1000

    @staticmethod
    def _about(ep: Episode) -> str:
        d = ep.app.domain
        phrase = INTENT_PHRASES[ep.intent].format(action=d.action_en)
        lang = LANG_NAMES[ep.lang]
        if ep.n is not None:
            phrase += f" {d.entity_en} {ep.n}"
        return f"The user's message is {phrase}, in {lang}"


def _code(name: str) -> str:
    """A name as the reasoning writes it: in backticks, as the skill bodies do, so
    that a ``bare`` world tokenizer cuts it as in the tool list and the call."""
    return f"`{name}`"


def _load(name: str) -> dict[str, Any]:
    return {"name": LOAD_SKILL, "arguments": {"name": name}}
