"""What the rule judge knows about a turn: room facts and trajectory views.

Everything here is a pure function of (trajectory, snapshot, message, binding).
Numbers are compared after ``hat_jax.harness.hooks`` normalisation (``¥199.00``,
``199元`` and ``199`` are the same number). Text checks are in
``sim/judge_text.py``, the reward functions in ``sim/judge_rules.py`` and
``sim/judge_tools.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hat_jax.harness import LOAD_SKILL, Trajectory
from hat_jax.harness.hooks import find_numbers, number_support
from hat_jax.text.toolcall import ToolCall
from sim.binding import Binding, asks_price, target_link
from sim.types import FAULT_KINDS, RoomSnapshot, ViewerMessage

ADVERSARIAL = ("injection", "forbidden_claim")
_PIECES = re.compile(r"[,，、;；/|]+")
# Attribute -> extra attribute keys that hold its facts (besides keys containing it).
ATTRIBUTE_KEYS = {"size": ("size_chart", "sizes"), "specs": ("spec",)}


# --- Numbers and phrases ------------------------------------------------------
def numbers(text: str) -> set[str]:
    """The normalised numbers written in ``text``."""
    return {norm for _, norm, _ in find_numbers(text or "")}


def support(texts: Sequence[str]) -> set[str]:
    """The normalised numbers ``texts`` support (percentages as fractions too)."""
    return number_support([t for t in texts if t])


def leaves(value: Any) -> Iterator[str]:
    """String forms of the scalars in a nested value (and its non-language keys)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if isinstance(key, str) and key not in ("zh", "en"):
                yield key
            yield from leaves(sub)
    elif isinstance(value, list | tuple | set | frozenset):
        for sub in value:
            yield from leaves(sub)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def has_phrase(text: str, phrase: str) -> bool:
    """``phrase`` in ``text``; ASCII tokens must stand alone, short ones by case."""
    if not phrase:
        return False
    body = re.escape(phrase)
    if phrase[:1].isascii() and phrase[:1].isalnum():
        body = r"(?<![A-Za-z0-9])" + body
    if phrase[-1:].isascii() and phrase[-1:].isalnum():
        body += r"(?![A-Za-z0-9])"
    flags = 0 if len(phrase) <= 2 and phrase.isascii() else re.IGNORECASE
    return re.search(body, text or "", flags) is not None


def any_phrase(text: str, phrases: Sequence[str]) -> bool:
    return any(has_phrase(text, p) for p in phrases)


# --- What the message is about ----------------------------------------------------
def about_deals(msg: ViewerMessage) -> bool:
    """The price, a promotion or buying is asked (shop coupons are relevant)."""
    return asks_price(msg) or "promotion" in (msg.attribute, msg.second_attribute)


def about_shipping(msg: ViewerMessage) -> bool:
    """Shipping or after-sales is asked (the shop's policy is relevant)."""
    return "after_sales" in (msg.intent, msg.second_intent) or "shipping" in (
        msg.attribute,
        msg.second_attribute,
    )


def num(x: float) -> str:
    """A value as a normalised number (159.0 -> "159")."""
    return next(iter(numbers(str(x))), str(x))


# --- Room facts ------------------------------------------------------------------
def product_facts(snapshot: RoomSnapshot, link: int) -> list[str]:
    """Texts holding every true number about one product now (derived ones too).

    Derived: savings against the list and live price, the price after each
    coupon the current price reaches, and whole minutes left in a flash sale.
    """
    p = snapshot.catalog.product(link)
    if p is None:
        return [str(link)]
    now = snapshot.price_now(link)
    stock = snapshot.stock.get(link, p.stock)
    out = [str(v) for v in (link, p.price, p.live_price, now, stock)]
    out += [str(v) for v in (p.ships_in_days, p.free_shipping_over, p.return_days)]
    for c in p.coupons:
        out += [str(c.threshold), str(c.off)]
        if now is not None and now >= c.threshold:
            out.append(str(round(now - c.off, 2)))
    saved = (p.price - now, p.live_price - now, p.price - p.live_price)
    out += [str(round(x, 2)) for x in saved if x > 0]
    out += list(leaves(p.attributes)) + list(leaves(p.title)) + list(p.skus)
    out += list(p.selling_points)
    for sale in snapshot.catalog.flash_sales:
        if sale.link_id == link and link in snapshot.active_flash:
            left = max(sale.end - snapshot.clock, 0.0) / 60
            out += [str(sale.price), str(int(left)), str(int(left) + 1)]
    return out


def policy_facts(snapshot: RoomSnapshot) -> list[str]:
    """The shop's shipping policy, as texts (keys too: read for numbers only)."""
    return list(leaves(snapshot.catalog.shipping_policy))


def coupon_facts(snapshot: RoomSnapshot) -> list[str]:
    """The shop-wide coupons, as texts."""
    return [f"{c.threshold} {c.off}" for c in snapshot.catalog.shop_coupons]


def harness_facts(binding: Binding) -> list[str]:
    """The harness's own text a reply may repeat (e.g. 双12 in a campaign rule)."""
    h = binding.harness
    return [h.persona, *h.rules, *h.constraints]


def attribute_facts(
    snapshot: RoomSnapshot, link: int, attribute: str
) -> tuple[list[str], set[str]]:
    """Phrases and normalised numbers that answer a question on ``attribute``.

    Taken from the product's attribute entries whose key contains the attribute
    name (``shelf_life_days`` for ``shelf_life``) or is listed in
    ``ATTRIBUTE_KEYS``; sizes also count the SKUs.
    """
    p = snapshot.catalog.product(link)
    if p is None:
        return [], set()
    keys = (attribute, *ATTRIBUTE_KEYS.get(attribute, ()))
    values = [v for k, v in p.attributes.items() if any(a in k for a in keys)]
    if attribute == "size":
        values.append(list(p.skus))
    texts = [t for v in values for t in leaves(v)]
    phrases = [t.strip() for t in texts if len(t) <= 40]
    phrases += [s.strip() for t in texts for s in _PIECES.split(t)]
    phrases = [s for s in dict.fromkeys(phrases) if s and not is_number(s)]
    return phrases, support(texts)


def without_link(text: str, link: int) -> str:
    """``text`` with its mentions of the link ("3号", "链接3", "link 3", "#3")
    blanked, so the link number is not taken for an answer."""
    n = rf"(?<!\d){link}(?![\d.])"
    pattern = rf"{n}\s*号|链接\s*{n}|(?i:link)\s*#?\s*{n}|#\s*{n}"
    return re.sub(pattern, " ", text or "")


def is_number(text: str) -> bool:
    return re.fullmatch(r"[\d.,%％\s]+", text) is not None


# --- The trajectory --------------------------------------------------------------
def reply_text(traj: Trajectory) -> str:
    return (traj.reply or "").strip() if traj.status == "ok" else ""


def canonical(call_name: str, args: Any, binding: Binding) -> ToolCall:
    """A harness call mapped back to canonical (taolive_v1) names and arguments."""
    args = args if isinstance(args, dict) else {}
    return binding.inverse(ToolCall(call_name, args))


def loaded_skills(traj: Trajectory) -> list[str]:
    """Skills (harness names) loaded successfully, in order, no repeats."""
    names = [
        t.arguments.get("name")
        for t in traj.tool_calls
        if t.name == LOAD_SKILL and t.ok and isinstance(t.arguments, dict)
    ]
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def result_facts(
    traj: Trajectory, binding: Binding, links: set[int], roles: Sequence[str] = ()
) -> list[str]:
    """Successful tool results about ``links`` (or about no link in particular).

    With ``roles``, only results of tools serving those roles.
    """
    out = []
    for t in traj.tool_calls:
        if t.name == LOAD_SKILL or not t.ok:
            continue
        if roles and binding.role_of(t.name) not in roles:
            continue
        link = canonical(t.name, t.arguments, binding).arguments.get("link_id")
        if link is None or link in links:
            out.append(t.result)
    return out


def failed_roles(traj: Trajectory, binding: Binding) -> set[str]:
    """Roles whose calls all hit an injected fault (none succeeded)."""
    tried, worked = set(), set()
    for t in traj.tool_calls:
        role = binding.role_of(t.name) if t.name != LOAD_SKILL else None
        if role is not None and t.fault in FAULT_KINDS:
            tried.add(role)
        if role is not None and t.ok:
            worked.add(role)
    return tried - worked


def relevant_links(snapshot: RoomSnapshot, msg: ViewerMessage) -> set[int]:
    return {target_link(msg, snapshot)}


def dumps(value: Any) -> str:
    """A stable text key for call arguments."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
