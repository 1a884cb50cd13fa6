"""Success of a turn in a generated app: the judge of the base world.

A turn is a success when every check holds (:func:`failures` says which did
not), the same three parts as taolive's ``sim.judge_success``:

1. within the playbook: every call names a tool the app has (a decoy, or a
   name from memory, fails), each needed call is made with the right arguments
   (the record number, the quantity, the policy topic where given), the reply
   skill for the intent is loaded (and the deals strategy skill where it
   applies) and no other reply skill;
2. accurate: every number in the reply is in a tool result or the user's
   message;
3. effective: a reply exists, in the user's language, states every fact a
   correct reply states (:func:`~experiments.world.apps.replies.reply_facts`,
   read from this turn's own tool results), within the reply hook's length and
   banned phrases, ending with every sign-off tag the harness asks for (the
   hook's, and the loaded reply skill's). When a needed tool failed twice, the
   reply states no fact and is still a success (the rule: say you are checking).

A constant reply, a reply in the wrong language, wrong numbers and v1 names all
fail (``tests/experiments/world/test_apps.py`` runs such policies).
"""

from __future__ import annotations

import re
from typing import Any

from experiments.world.apps.episode import (
    INTENT_SKILL,
    Episode,
    needed_calls,
    needed_skills,
)
from experiments.world.apps.replies import reply_facts
from experiments.world.apps.teacher import _leaf
from hat_jax.harness import Trajectory
from hat_jax.harness.hooks import find_numbers, unsupported_numbers
from hat_jax.harness.signoff import required_tags, signed_off
from hat_jax.harness.spec import LOAD_SKILL
from sim import judge_text
from sim.oracle import parse_result

_TAGS = re.compile(r"#[A-Za-z]{3,}")


def reply_lang(text: str) -> str | None:
    """``sim.judge_text.reply_lang`` with sign-off tags left out (an ASCII tag
    would count as an English word)."""
    return judge_text.reply_lang(_TAGS.sub("", text or ""))


def _states(reply: str, fact: str) -> bool:
    """Whether ``reply`` states ``fact`` (its number as a number, else its text)."""
    nums = [norm for _, norm, _ in find_numbers(fact)]
    if nums:
        said = {norm for _, norm, _ in find_numbers(reply)}
        return all(n in said for n in nums)
    return fact.casefold() in reply.casefold()


def _args_ok(ep: Episode, role: str, expected: dict, given: Any) -> bool:
    if not isinstance(given, dict):
        return False
    for arg, path in ep.app.params.get(role, {}).items():
        want = _leaf(expected, path)
        if want is None:
            continue
        got = _leaf(given, path)
        if got != want and not (arg == "topic" and got is None):
            return False
    return True


def failures(traj: Trajectory, ep: Episode) -> list[str]:
    """Why the turn is not a success (empty when it is)."""
    app, out = ep.app, []
    real = set(app.tools.values())
    calls = [(x.name, x.arguments, x.result) for x in traj.tool_calls]
    loaded = [
        a.get("name") for n, a, t in calls if n == LOAD_SKILL and isinstance(a, dict)
    ]
    for name, _, _ in calls:
        if name != LOAD_SKILL and name not in real:
            out.append(f"tools: called {name!r}, which the app does not have")
    results: dict[str, dict | None] = {}
    for role, name, args in needed_calls(ep):
        made = [
            (a, t) for n, a, t in calls if n == name and _args_ok(ep, role, args, a)
        ]
        if not made:
            out.append(f"tools: no call to {name} with {args}")
        results[role] = next((r for _, t in made if (r := parse_result(t))), None)
        if made and results[role] is None and len(made) < 2:
            out.append(f"tools: {name} failed and was not tried again")
    for skill in needed_skills(ep):
        if skill not in loaded:
            out.append(f"skills: {skill} not loaded")
    reply_skills = {app.skills[r] for r in INTENT_SKILL.values() if r in app.skills}
    reply_skills |= {app.skills["decoy"]} if "decoy" in app.skills else set()
    wrong = [s for s in loaded if s in reply_skills and s not in needed_skills(ep)]
    if wrong:
        out.append(
            f"skills: loaded {', '.join(map(repr, wrong))}, not for this message"
        )
    reply = (traj.reply or "").strip()
    if not reply:
        return out + ["reply: none"]
    if reply_lang(reply) != ep.lang:
        out.append(f"reply: not in {ep.lang}")
    texts = [t for n, _, t in calls if n != LOAD_SKILL and parse_result(t)]
    bad = unsupported_numbers(reply, texts + [ep.message])
    if bad:
        out.append(f"accuracy: numbers {', '.join(bad)} are in no tool result")
    if all(r is not None for r in results.values()):
        for name, fact in reply_facts(ep, results).items():
            if not _states(reply, fact):
                out.append(f"reply: does not state {name} {fact!r}")
    if ep.demand and ep.demand.casefold() in reply.casefold():
        out.append(f"reply: repeats {ep.demand!r}, which it must not say")
    spec = app.harness.hook("reply_format")
    params = dict(spec.params) if spec is not None else {}
    if len(reply) > params.get("max_chars", 10**9):
        out.append(f"reply: {len(reply)} characters, over {params['max_chars']}")
    low = reply.casefold()
    for phrase in params.get("banned_phrases", ()):
        if phrase.casefold() in low:
            out.append(f"reply: says banned {phrase!r}")
    for tag in required_tags(app.harness, needed_skills(ep)[0]):
        if not signed_off(reply, tag):
            out.append(f"reply: does not end with {tag}")
    return out


def success(traj: Trajectory, ep: Episode) -> float:
    return 0.0 if failures(traj, ep) else 1.0
