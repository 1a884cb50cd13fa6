"""Sign-off tags: a harness rule that every reply ends with a given tag.

A harness can ask for a sign-off in two places, and a reply must follow both
(they name the same tag when both are set):

- the ``reply_format`` hook's ``sign_off`` parameter (checked by the hook, so a
  reply without it is rejected and retried, and listed in the prompt's
  constraints);
- a reply skill's body: a ``#Tag`` in the body of the reply skill the agent
  loads for the message (``SKILL_RULE``; shown only after ``load_skill``, so an
  agent must read the skill, and nothing checks it at run time).

Tags are ``#`` and 3+ ASCII letters (``#SunnyPicks``): no digits, so they never
count as an invented number, and ASCII, so they never change a reply's language.
"""

from __future__ import annotations

import re

from hat_jax.harness.spec import Harness

TAG = re.compile(r"(?<![\w#])#[A-Za-z][A-Za-z]{2,}(?![\w])")
SKILL_RULE = "Sign-off: end every reply with the tag {tag}."
_TRAILING = " .!。！～~"


def signed_off(reply: str, tag: str) -> bool:
    """Whether ``reply`` ends with ``tag`` (trailing spaces and punctuation aside:
    "...～ #TaoPicks" and "... #TaoPicks." both do)."""
    return reply.strip().rstrip(_TRAILING).endswith(tag)


def sign(reply: str, tag: str) -> str:
    """``reply`` with ``tag`` appended (unchanged when it already ends with it)."""
    if not tag or signed_off(reply, tag):
        return reply
    return f"{reply.rstrip()} {tag}"


def skill_tag(body: str) -> str:
    """The sign-off tag a skill body asks for: its first ``#Tag``, or ""."""
    m = TAG.search(body)
    return m.group(0) if m else ""


def hook_tag(h: Harness) -> str:
    """The ``reply_format`` hook's sign-off tag, or ""."""
    spec = h.hook("reply_format")
    tag = spec.params.get("sign_off", "") if spec is not None else ""
    return tag if isinstance(tag, str) else ""


def required_tags(h: Harness, reply_skill: str | None) -> list[str]:
    """Every tag a reply under ``h`` must end with, when ``reply_skill`` is the
    reply skill for the message (distinct, hook first)."""
    tags = [hook_tag(h)]
    skill = h.skill(reply_skill) if reply_skill else None
    if skill is not None:
        tags.append(skill_tag(skill.body))
    return list(dict.fromkeys(t for t in tags if t))
