"""Realistic alternative identifiers built from synonym parts.

`new_name("get_product_info_by_link_id", rng)` splits the name into words,
swaps words and phrases for synonyms (`product` -> `item` / `goods` / `sku`...),
may drop filler words or add a namespace, then joins the parts in one of several
house styles (snake, camel, Pascal, dotted, kebab). A thousand draws give
hundreds of distinct names per source name. Every result matches `NAME_RE`
(letters, digits, underscore, dot, dash), the identifiers both tool-call formats
read back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

NAME_RE = re.compile(r"^(?=.{1,64}$)(?:[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z])$")
PARAM_RE = re.compile(r"^(?=.{1,64}$)[A-Za-z][A-Za-z0-9_]*$")

# word (or phrase joined with "_") -> alternatives; each alternative may hold
# several words joined with "_".
SYNONYMS: dict[str, tuple[str, ...]] = {
    "get": ("fetch", "lookup", "query", "retrieve", "read", "find", "pull", "show"),
    "check": ("verify", "query", "inspect", "lookup", "get", "probe"),
    "list": ("enumerate", "get_all", "browse", "show"),
    "query": ("lookup", "search", "get", "fetch"),
    "product": ("item", "goods", "sku", "listing", "merch", "commodity", "article"),
    "item": ("product", "goods", "sku", "listing", "article"),
    "info": ("details", "detail", "data", "profile", "facts", "spec", "card"),
    "details": ("info", "data", "profile", "facts"),
    "link": ("slot", "listing", "shelf", "cart_link", "link_no"),
    "id": ("number", "no", "idx", "index", "num", "ref"),
    "link_id": (
        "link_no",
        "slot",
        "item_index",
        "listing_no",
        "link_number",
        "slot_id",
    ),
    "by_link_id": ("by_link", "for_link", "by_slot", "from_link", "via_link_no"),
    "stock": ("inventory", "stock_level", "availability", "quantity_left", "supply"),
    "promotions": ("promos", "deals", "offers", "discounts", "campaigns", "perks"),
    "promotion": ("promo", "deal", "offer", "discount", "campaign", "sale"),
    "push": ("nudge", "pitch", "boost", "highlight"),
    "fields": ("attributes", "columns", "keys", "props", "wanted"),
    "double12": ("d12", "dec12", "twelve_twelve", "shuang12"),
    "shipping": ("delivery", "logistics", "freight", "dispatch", "postage"),
    "policy": ("rules", "terms", "policies", "guidelines", "conditions"),
    "price": ("cost", "pricing", "amount"),
    "coupon": ("voucher", "discount_code", "ticket"),
    "coupons": ("vouchers", "discount_codes", "tickets"),
    "qa": ("questions", "faq", "answers", "qna", "q_and_a", "inquiry"),
    "chit_chat": (
        "smalltalk",
        "banter",
        "casual_talk",
        "chitchat",
        "social",
        "greeting",
    ),
    "after_sales": (
        "aftercare",
        "post_purchase",
        "customer_service",
        "service_help",
        "returns_help",
        "support",
    ),
    "size": ("sizing", "fit", "dimensions"),
    "order": ("purchase", "deal"),
    "status": ("state", "progress"),
    "room": ("stream", "live", "channel", "studio"),
    "viewer": ("audience", "user", "fan", "customer"),
    "reply": ("answer", "response", "respond"),
    "campaign": ("event", "promo_event", "activity"),
    "compliance": ("regulation", "legal", "policy_check"),
    "intent": ("interest", "signal"),
    "purchase": ("buy", "order", "checkout"),
    "style": ("tone", "voice", "manner"),
    "guide": ("guidance", "playbook", "howto", "help"),
    "name": ("title", "label"),
    "city": ("region", "town", "location"),
    "region": ("area", "city", "zone", "province"),
    "aspect": ("field", "topic", "facet", "attribute"),
    "field": ("aspect", "attribute", "key"),
    "type": ("kind", "category", "variant"),
    "kind": ("type", "category"),
    "limit": ("max", "top_n", "count"),
    "date": ("day", "when"),
    "sku": ("variant", "model", "spec", "option"),
    "search": ("find", "lookup", "query"),
    "days": ("horizon", "day_count"),
    "nickname": ("nick", "user_name", "handle"),
    "text": ("content", "message", "input_text"),
    "quantity": ("qty", "count", "amount"),
}
DROPPABLE = frozenset({"by", "info", "details", "data", "of", "the", "for", "policy"})
NAMESPACES = ("shop", "live", "tb", "room", "mall", "store", "api", "v2", "tool", "crm")
STYLES = ("snake", "snake", "snake", "camel", "pascal", "dotted", "kebab", "upper")


def split_words(name: str) -> list[str]:
    """Words of an identifier in any style: snake, camel, dotted, kebab."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w.lower() for w in re.split(r"[_.\-\s]+", name) if w]


def _swap(words: list[str], rng: np.random.Generator, p: float) -> list[str]:
    """Greedy longest-phrase synonym swaps, each with probability ``p``."""
    out, i = [], 0
    while i < len(words):
        for n in (3, 2, 1):
            key = "_".join(words[i : i + n])
            if n <= len(words) - i and key in SYNONYMS:
                alts = SYNONYMS[key]
                pick = key if rng.random() >= p else alts[rng.integers(len(alts))]
                out += pick.split("_")
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return out


def join_words(words: list[str], style: str) -> str:
    """``words`` joined in house ``style`` (snake, camel, pascal, dotted, kebab,
    upper)."""
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "dotted" and len(words) > 1:
        return words[0] + "." + "_".join(words[1:])
    if style == "kebab":
        return "-".join(words)
    if style == "upper":
        return "_".join(words).upper()
    return "_".join(words)


def variant(name: str, rng: np.random.Generator, *, styles=STYLES, ns=True) -> str:
    """One random alternative for ``name`` (may equal it; callers check)."""
    words = _swap(split_words(name) or ["x"], rng, p=0.75)
    kept = [w for w in words if w not in DROPPABLE or rng.random() > 0.5]
    words = kept if len(kept) >= 2 or len(kept) == len(words) else words
    if ns and rng.random() < 0.2:
        words = [NAMESPACES[rng.integers(len(NAMESPACES))], *words]
    words = [re.sub(r"[^a-z0-9]", "", w) for w in words]
    words = [w for w in words if w] or ["x"]
    if words[0][0].isdigit():
        words = ["n", *words]
    return join_words(words, styles[rng.integers(len(styles))])


def fresh_name(
    name: str,
    rng: np.random.Generator,
    taken: Iterable[str],
    *,
    styles=STYLES,
    ns: bool = True,
    valid: re.Pattern = NAME_RE,
    gen: Callable[..., str] = variant,
) -> str:
    """A variant of ``name`` that differs from it and from every ``taken`` name."""
    taken_l = {t.lower() for t in taken} | {name.lower()}
    for _ in range(64):
        cand = gen(name, rng, styles=styles, ns=ns)
        if valid.match(cand) and cand.lower() not in taken_l:
            return cand
    base = "_".join(split_words(name)) or "x"
    for k in range(2, 10_000):
        cand = f"{base}_v{k}"
        if cand.lower() not in taken_l:
            return cand
    raise ValueError(f"no fresh name for {name!r}")


def rename_all(
    names: Iterable[str],
    rng: np.random.Generator,
    reserved: Iterable[str] = (),
    **kw,
) -> dict[str, str]:
    """Distinct fresh names for ``names``, avoiding them all and ``reserved``."""
    names = list(names)
    taken = set(names) | set(reserved)
    out = {}
    for n in names:
        out[n] = fresh_name(n, rng, taken, **kw)
        taken.add(out[n])
    return out
