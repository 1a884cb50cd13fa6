"""Binding the simulator's canonical playbook to the harness in force.

The simulator thinks in the canonical harness ``taolive_v1``: tool roles
(``TOOL_ROLES``), canonical arguments, canonical skill names (``REPLY_SKILL``,
``STRATEGY_SKILLS``). A harness in force is reached through a
``hat_jax.harness.Mapping`` from ``taolive_v1`` to it:

- ``taolive_v1``: the identity;
- ``taolive_v2``: a hand-written mapping (its product tool is ``query_item``,
  with the link number nested as ``item.link_id``; the other tools and the
  skills keep their names);
- an augmented harness: the caller composes
  ``canonical_mapping(base).compose(hsa_mapping)`` and passes it to :func:`bind`.

The canonical skill vocabulary is taolive_v1's skills plus ``campaign_double12``
(v2's campaign strategy skill), so that composing with an HSA mapping carries a
renamed campaign skill too.

The playbook functions here (:func:`canonical_calls`, :func:`strategy_skill`,
:func:`gold_skills`, :func:`gold_calls`) are what the oracle does and what the
judges expect; both import them from here so they cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping as AnyMapping

from hat_jax.harness import Harness, Mapping, load_harness, schema_leaves
from hat_jax.text.toolcall import ToolCall
from sim.types import (
    REPLY_SKILL,
    STRATEGY_SKILLS,
    TOOL_ROLES,
    RoomSnapshot,
    ViewerMessage,
    needed_roles,
)

CANONICAL = "taolive_v1"
CAMPAIGN_SKILL = "campaign_double12"
PROMOTION_SKILL = "promotion_push"
# taolive_v1 -> taolive_v2: the product tool renamed and its argument nested.
V2_PRODUCT_TOOL = "query_item"
V2_LINK_PATH = ("item", "link_id")
ROLE_OF_TOOL = {tool: role for role, tool in TOOL_ROLES.items()}


@functools.cache
def canonical_harness() -> Harness:
    """The canonical harness (``taolive_v1``), loaded once."""
    return load_harness(CANONICAL)


def _identity(extra_skills: tuple[str, ...] = ()) -> Mapping:
    m = Mapping.identity(canonical_harness())
    for name in extra_skills:
        m.skills.setdefault(name, name)
    return m


def _v2_mapping() -> Mapping:
    m = _identity((CAMPAIGN_SKILL,))
    src = TOOL_ROLES["product_info"]
    m.tools[src] = V2_PRODUCT_TOOL
    m.params[src] = {("link_id",): V2_LINK_PATH}
    return m


def _fits(harness: Harness, m: Mapping) -> bool:
    """Whether every canonical tool, argument leaf and reply skill lands on a tool,
    leaf and skill of ``harness`` under ``m``."""
    for tool in canonical_harness().tools:
        spec = harness.tool(m.tool(tool.name))
        if spec is None:
            return False
        have = set(schema_leaves(spec.parameters))
        paths = m.params.get(tool.name, {})
        if any(paths.get(p, p) not in have for p in schema_leaves(tool.parameters)):
            return False
    return all(harness.skill(m.skill(s)) is not None for s in REPLY_SKILL.values())


def canonical_mapping(harness: Harness) -> Mapping:
    """The Mapping from ``taolive_v1`` to ``harness`` (a builtin or the like).

    Recognised by structure, not by name: a harness with every canonical tool,
    argument and reply skill gets the identity; one with ``query_item`` taking
    ``item.link_id`` in place of the product tool gets the v2 mapping. Skills
    beyond v1's that the canonical vocabulary knows (``campaign_double12``) map
    to themselves when present.

    Raises:
      ValueError: for any other harness (an augmented one: compose
        ``canonical_mapping(base).compose(hsa_mapping)`` instead).
    """
    extra = tuple(s for s in STRATEGY_SKILLS if harness.skill(s) is not None)
    for m in (_identity(extra), _v2_mapping()):
        if CAMPAIGN_SKILL not in extra:
            m.skills.pop(CAMPAIGN_SKILL, None)
        if _fits(harness, m):
            return m
    raise ValueError(_unknown(harness))


def _unknown(harness: Harness) -> str:
    return (
        f"no canonical mapping for harness {harness.id!r} (tools "
        f"{[t.name for t in harness.tools]}); for an augmented harness pass "
        "canonical_mapping(base).compose(hsa_mapping) to bind()"
    )


@dataclasses.dataclass(frozen=True)
class Binding:
    """The canonical playbook as names of one harness.

    Attributes:
      harness: the harness in force.
      mapping: taolive_v1 (canonical) -> ``harness``.
      tools: tool role -> the tool's name in ``harness``.
      reply_skills: viewer intent -> the reply skill's name in ``harness``.
      strategy_skills: canonical strategy skill -> its name in ``harness``
        (only those the harness has).
    """

    harness: Harness
    mapping: Mapping
    tools: AnyMapping[str, str]
    reply_skills: AnyMapping[str, str]
    strategy_skills: AnyMapping[str, str]

    @property
    def campaign(self) -> bool:
        """Whether the Double 12 campaign skill is in force."""
        return CAMPAIGN_SKILL in self.strategy_skills

    def role_of(self, tool: str) -> str | None:
        """The role a harness tool serves (None for load_skill, distractors and
        names that are no image of a canonical tool)."""
        if tool not in self.mapping.tools.values():
            return None
        return ROLE_OF_TOOL.get(self.mapping.inverse_tool(tool))

    def forward(self, call: ToolCall) -> ToolCall:
        """A canonical call as this harness expects it."""
        return self.mapping.forward_call(call)

    def inverse(self, call: ToolCall) -> ToolCall:
        """A call of this harness mapped back to canonical names and arguments."""
        return self.mapping.inverse_call(call)

    def reply_skill(self, msg: ViewerMessage) -> str:
        return self.reply_skills[msg.intent]


def bind(harness: Harness, mapping: Mapping | None = None) -> Binding:
    """Binds the playbook to ``harness`` (through ``mapping`` when given).

    Raises:
      ValueError: if a role's tool or a reply skill is missing from ``harness``.
    """
    m = mapping if mapping is not None else canonical_mapping(harness)
    tools = {role: m.tool(name) for role, name in TOOL_ROLES.items()}
    missing = [t for t in tools.values() if harness.tool(t) is None]
    replies = {intent: m.skill(s) for intent, s in REPLY_SKILL.items()}
    missing += [s for s in replies.values() if harness.skill(s) is None]
    if missing:
        raise ValueError(
            f"harness {harness.id!r} lacks {sorted(set(missing))} under this mapping"
        )
    strategy = {
        s: m.skill(s) for s in STRATEGY_SKILLS if harness.skill(m.skill(s)) is not None
    }
    return Binding(harness, m, tools, replies, strategy)


# --- The playbook -------------------------------------------------------------
def target_link(msg: ViewerMessage, snapshot: RoomSnapshot) -> int:
    """The link a message is about: the one named, else the featured one."""
    return msg.link_id if msg.link_id is not None else snapshot.featured_link


def role_arguments(
    role: str, msg: ViewerMessage, snapshot: RoomSnapshot
) -> dict[str, object]:
    """The canonical (taolive_v1) arguments of a role's call for ``msg``."""
    link = target_link(msg, snapshot)
    if role in ("product_info", "promotions"):
        return {"link_id": link}
    if role == "stock":
        return {"link_id": link, **({"sku": msg.sku} if msg.sku else {})}
    if role == "shipping":
        return {"region": msg.region} if msg.region else {}
    raise ValueError(f"unknown tool role {role!r}")


def canonical_calls(msg: ViewerMessage, snapshot: RoomSnapshot) -> list[ToolCall]:
    """The canonical tool calls a correct answer makes, in order."""
    return [
        ToolCall(TOOL_ROLES[role], role_arguments(role, msg, snapshot))
        for role in needed_roles(msg)
    ]


def gold_calls(
    binding: Binding, msg: ViewerMessage, snapshot: RoomSnapshot
) -> list[ToolCall]:
    """:func:`canonical_calls` with the harness's names and argument shapes."""
    return [binding.forward(c) for c in canonical_calls(msg, snapshot)]


AFTER_SALES_WORDS = (  # after-sales topic -> words that give it away, in order
    (
        "damaged",
        ("坏", "破损", "发错", "少发", "broken", "wrong", "missing", "damaged"),
    ),
    ("refund", ("退款", "refund")),
    ("return", ("退", "return")),
)
ABOUT_HOST = ("真人", "ai", "机器人", "real person")
GREETING_WORDS = (
    "来了", "晚上好", "打卡", "关注", "来的", "第一次", "hi", "hello", "evening",
    "first time", "followed", "watching",
)  # fmt: skip


def after_sales_topic(msg: ViewerMessage) -> str | None:
    """ "damaged", "refund", "return" or None (shipping) for an after-sales text."""
    text = msg.text.lower()
    return next((n for n, ws in AFTER_SALES_WORDS if any(w in text for w in ws)), None)


def chat_kind(msg: ViewerMessage) -> str:
    """What a chit-chat message is: "about_host" (is the host real?), "greeting"
    (arrivals, follows) or "other" (compliments, small talk)."""
    text = msg.text.lower()
    if any(w in text for w in ABOUT_HOST):
        return "about_host"
    return "greeting" if any(w in text for w in GREETING_WORDS) else "other"


def asks_price(msg: ViewerMessage) -> bool:
    """A price question or a purchase intent (either part of a multi-intent)."""
    if "purchase_intent" in (msg.intent, msg.second_intent):
        return True
    if msg.intent == "product_question" and msg.attribute == "price":
        return True
    if msg.intent == "multi_intent":
        return "price" in (msg.attribute, msg.second_attribute)
    return False


def has_live_promotion(snapshot: RoomSnapshot, link_id: int) -> bool:
    """A coupon on the link or a flash sale running on it now."""
    product = snapshot.catalog.product(link_id)
    if product is None:
        return False
    return bool(product.coupons) or link_id in snapshot.active_flash


def strategy_skill(
    binding: Binding, msg: ViewerMessage, snapshot: RoomSnapshot
) -> str | None:
    """The strategy skill (harness name) a correct answer loads, if any.

    A purchase intent or a price question (also as either part of a
    multi-intent message) about a link with a live promotion (a coupon or a
    running flash sale) -> ``promotion_push``; under a harness that has
    ``campaign_double12``, that skill instead.
    """
    if not has_live_promotion(snapshot, target_link(msg, snapshot)):
        return None
    return price_strategy_skill(binding, msg)


def price_strategy_skill(binding: Binding, msg: ViewerMessage) -> str | None:
    """The strategy skill (harness name) of a price or purchase message,
    whatever the results: what a policy can load before it has looked (the
    judges count strategy skills loaded beyond need as free)."""
    if not asks_price(msg):
        return None
    for canon in (CAMPAIGN_SKILL, PROMOTION_SKILL):
        if canon in binding.strategy_skills:
            return binding.strategy_skills[canon]
    return None


def gold_skills(
    binding: Binding, msg: ViewerMessage, snapshot: RoomSnapshot
) -> tuple[str, ...]:
    """The skills a correct answer loads (harness names): reply skill first."""
    strategy = strategy_skill(binding, msg, snapshot)
    return (binding.reply_skill(msg),) + ((strategy,) if strategy else ())
