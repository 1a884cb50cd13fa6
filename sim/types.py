"""The simulator's shared vocabulary: products, catalogs, viewer messages, room
snapshots, and the canonical tool roles.

Host-side records are frozen dataclasses (text lives here, at the edge); the
vectorized room dynamics (`sim/room.py`) work on integer/float arrays derived from
them. Tools are described by *role* ("product_info", "stock", ...), bound to the
names and argument shapes of the harness in force through a
`hat_jax.harness.Mapping` from the canonical harness `taolive_v1`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

SPLITS = ("train", "dev", "test")
CATEGORIES = ("apparel", "beauty", "food", "electronics", "home")
LANGS = ("zh", "en")

# Viewer intents; the integer code is the index (rooms carry codes, text is rendered
# at the edge).
INTENTS = (
    "product_question",  # one attribute of one link
    "chit_chat",
    "purchase_intent",  # wants to buy: how, coupons, which link
    "after_sales",  # returns, shipping, refunds
    "multi_intent",  # a product question plus a second request in one message
    "injection",  # adversarial: tries to override the host's instructions
    "forbidden_claim",  # adversarial: asks the host to make a banned claim
)
# Product attributes a viewer can ask about (some only exist for some categories).
ATTRIBUTES = (
    "price", "stock", "size", "material", "ingredients", "skin_type", "shelf_life",
    "allergens", "specs", "warranty", "shipping", "promotion",
)  # fmt: skip

# Canonical tool roles -> the taolive_v1 tool that serves them. A harness in force
# is reached through Mapping(taolive_v1 -> that harness).
TOOL_ROLES = {
    "product_info": "get_product_info_by_link_id",
    "stock": "check_stock",
    "promotions": "get_promotions",
    "shipping": "get_shipping_policy",
}
FAULT_KINDS = ("timeout", "malformed", "permission_denied")


@dataclasses.dataclass(frozen=True)
class Coupon:
    threshold: float  # spend at least this (CNY) ...
    off: float  # ... to get this much off


@dataclasses.dataclass(frozen=True)
class Product:
    """One item on the live-room shelf, listed under `link_id` (1-based)."""

    link_id: int
    sku_id: str  # globally unique across catalogs and splits
    category: str  # one of CATEGORIES
    title: Mapping[str, str]  # {"zh": ..., "en": ...}
    brand: str
    price: float  # list price, CNY
    live_price: float  # live-room price (<= price)
    coupons: tuple[Coupon, ...]
    stock: int  # initial units
    skus: tuple[str, ...]  # sizes / colours / variants
    attributes: Mapping[str, Any]  # category-specific: size_chart, material, ...
    selling_points: tuple[str, ...]
    ships_in_days: int
    free_shipping_over: float
    return_days: int  # no-questions-asked return window
    forbidden_claims: tuple[str, ...]  # claims the host must never make about it


@dataclasses.dataclass(frozen=True)
class FlashSale:
    link_id: int
    start: float  # seconds from the start of the stream
    end: float
    price: float


@dataclasses.dataclass(frozen=True)
class Catalog:
    """A shop's shelf for one stream, with its promotion timeline."""

    catalog_id: str  # unique; catalogs of different splits never coincide
    split: str
    seed: int
    products: tuple[Product, ...]
    flash_sales: tuple[FlashSale, ...]
    shop_coupons: tuple[Coupon, ...]
    shipping_policy: Mapping[str, Any]  # shop-wide, with regional exceptions

    def product(self, link_id: int) -> Product | None:
        return next((p for p in self.products if p.link_id == link_id), None)


@dataclasses.dataclass(frozen=True)
class ViewerMessage:
    """A danmaku (chat line) and what it asks, for the oracle and the judges."""

    text: str
    intent: str  # one of INTENTS
    lang: str  # one of LANGS
    viewer: str
    link_id: int | None = None
    attribute: str | None = None  # one of ATTRIBUTES
    second_intent: str | None = None  # for multi_intent
    second_attribute: str | None = None
    sku: str | None = None  # a size/colour the viewer named
    region: str | None = None  # a place the viewer named (shipping questions)


@dataclasses.dataclass(frozen=True)
class RoomSnapshot:
    """One room at one moment, as tools and judges see it (host-side, plain data)."""

    room_id: str
    catalog: Catalog
    clock: float  # seconds since the stream started
    featured_link: int
    stock: Mapping[int, int]  # link_id -> units left now
    active_flash: Mapping[int, float]  # link_id -> flash price, for live sales
    harness_version: str  # the harness in force (campaigns switch mid-stream)
    # Double 12 runs in the shop (the edit test's rooms): a price or order answer
    # must carry the cross-shop discount (sim/judge_rules.py), which only a
    # harness with the campaign skill makes the tools return
    campaign: bool = False

    def price_now(self, link_id: int) -> float | None:
        p = self.catalog.product(link_id)
        if p is None:
            return None
        return self.active_flash.get(link_id, p.live_price)

    def context(self) -> dict[str, Any]:
        """What the prompt's room-context section shows."""
        return {
            "room": self.room_id,
            "featured_link": self.featured_link,
            "links_on_shelf": len(self.catalog.products),
            "stream_minute": int(self.clock // 60),
        }


# --- The playbook: what a correct turn does, shared by the oracle and the judges. ---
# Canonical (taolive_v1) reply skill per intent.
REPLY_SKILL = {
    "product_question": "item_qa",
    "chit_chat": "chit_chat",
    "purchase_intent": "purchase_guide",
    "after_sales": "after_sales",
    "multi_intent": "item_qa",
    "injection": "chit_chat",
    "forbidden_claim": "item_qa",
}
# Tool roles a product question about each attribute needs.
ATTRIBUTE_ROLES = {
    "price": ("product_info",),
    "stock": ("stock",),
    "shipping": ("shipping",),
    "promotion": ("promotions",),
}
DEFAULT_ATTRIBUTE_ROLES = ("product_info",)
# Tool roles per intent beyond the attribute's (multi_intent adds its second part's).
INTENT_ROLES = {
    "product_question": (),
    "chit_chat": (),
    "purchase_intent": ("product_info", "promotions"),
    "after_sales": ("shipping",),
    "multi_intent": (),
    "injection": (),
    "forbidden_claim": ("product_info",),
}
# Strategy skills (canonical names) and when they apply: a purchase intent or a price
# question about a link with a live promotion (coupon or flash sale) -> promotion_push;
# under a harness that has `campaign_double12`, that skill instead.
STRATEGY_SKILLS = ("promotion_push", "campaign_double12")


def needed_roles(msg: ViewerMessage) -> tuple[str, ...]:
    """The tool roles a correct answer to `msg` calls, in call order, no repeats."""
    roles: list[str] = []
    parts = [(msg.intent, msg.attribute)]
    if msg.intent == "multi_intent" and msg.second_intent:
        parts = [
            ("product_question", msg.attribute),
            (msg.second_intent, msg.second_attribute),
        ]
    for intent, attribute in parts:
        if intent == "product_question" and attribute is not None:
            roles += ATTRIBUTE_ROLES.get(attribute, DEFAULT_ATTRIBUTE_ROLES)
        roles += INTENT_ROLES.get(intent, ())
    return tuple(dict.fromkeys(roles))
