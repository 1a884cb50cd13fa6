"""What the shop's tools can say about a catalog: product facts, per-SKU stock,
SKU matching and regional shipping. Pure functions of catalog records (and a room
snapshot where the answer changes during the stream); all results are JSON-able.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from sim.types import Product, RoomSnapshot

_CJK = re.compile(r"[\u3400-\u9fff]")


def is_zh(text: str) -> bool:
    """True when `text` contains a CJK character."""
    return _CJK.search(text) is not None


def split_langs(texts: Iterable[str]) -> dict[str, list[str]]:
    """Interleaved bilingual strings (selling points, claims) split by language."""
    out: dict[str, list[str]] = {"zh": [], "en": []}
    for t in texts:
        out["zh" if is_zh(t) else "en"].append(t)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def product_facts(product: Product, snapshot: RoomSnapshot | None = None) -> dict:
    """The facts a product-info tool returns for `product` (JSON-able).

    With a snapshot, `price_now` and `flash_sale` reflect the running flash sale;
    without one, the static live-room price. Stock is not included (the stock
    tool's job), nor are the forbidden claims. Category attributes (size_chart,
    ingredients, specs, ...) are merged in at the top level.
    """
    link = product.link_id
    now = product.live_price
    facts: dict[str, Any] = {
        "link_id": link,
        "title": dict(product.title),
        "brand": product.brand,
        "category": product.category,
        "price": product.price,
        "live_price": product.live_price,
        "price_now": now,
        "coupons": [{"threshold": c.threshold, "off": c.off} for c in product.coupons],
        "skus": list(product.skus),
        "selling_points": split_langs(product.selling_points),
        "ships_in_days": product.ships_in_days,
        "free_shipping_over": product.free_shipping_over,
        "return_days": product.return_days,
    }
    if snapshot is not None and link in snapshot.active_flash:
        facts["price_now"] = float(snapshot.active_flash[link])
        sales = [s for s in snapshot.catalog.flash_sales if s.link_id == link]
        live = [s for s in sales if s.start <= snapshot.clock < s.end] or sales
        sale = {"price": float(snapshot.active_flash[link])}
        if live:
            left = max(live[0].end - snapshot.clock, 0.0) / 60
            sale["ends_in_minutes"] = int(math.ceil(left))
        facts["flash_sale"] = sale
    for key, value in product.attributes.items():
        facts.setdefault(key, _plain(value))
    return facts


def sku_stock(product: Product, units_left: int) -> dict[str, int]:
    """Units left per SKU, a fixed split of the link's `units_left`.

    The split is a deterministic function of the product (some SKUs of a
    multi-SKU link are sold out from the start) and always sums to `units_left`.
    """
    n = len(product.skus)
    rng = np.random.default_rng(zlib.crc32(product.sku_id.encode()))
    w = rng.dirichlet(np.full(n, 2.0))
    if n > 2:
        out = rng.random(n) < 0.15
        out[int(np.argmax(w))] = False
        w = np.where(out, 0.0, w)
    w = w / w.sum()
    units = max(int(units_left), 0)
    alloc = np.floor(w * units).astype(int)
    order = np.argsort(-(w * units - alloc), kind="stable")
    alloc[order[: units - int(alloc.sum())]] += 1
    return {sku: int(a) for sku, a in zip(product.skus, alloc)}


def _words(text: str) -> set[str]:
    return set(text.lower().split())


def match_sku(product: Product, said: str) -> tuple[str, ...]:
    """The product's SKUs a viewer's words name ("M", "黑色M", "black m", ...).

    Matches the zh SKU names and their English forms (`attributes["skus_en"]`);
    every recognised word must belong to the SKU. Nothing recognised -> ().
    """
    english: Sequence[str] = product.attributes.get("skus_en", product.skus)
    forms = [_words(zh) | _words(en) for zh, en in zip(product.skus, english)]
    text = said.lower()
    found = set()
    for word in sorted(set().union(*forms), key=len, reverse=True):
        # Latin words stand alone ("g" is not in "nothing"); CJK ones need not.
        body = re.escape(word)
        if word.isascii():
            body = rf"(?<![a-z0-9]){body}(?![a-z0-9])"
        if re.search(body, text):
            found.add(word)
            text = re.sub(body, " ", text)
    if not found:
        return ()
    return tuple(s for s, f in zip(product.skus, forms) if found <= f)


def _names(entry: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(entry.get(k, "")).lower() for k in ("region", "region_en"))


def _hits(entry: Mapping[str, Any], region: str) -> bool:
    return any(n and (n in region or region in n) for n in _names(entry))


def shipping_for_region(policy: Mapping[str, Any], region: str | None) -> dict:
    """The shipping policy as it applies to one region (zh or en name).

    Excluded regions -> `ships_to_region` False; remote regions add
    `extra_days` and `extra_fee` and lose free shipping; elsewhere the standard
    policy. No region -> the standard policy.
    """
    out: dict[str, Any] = {
        "region": region,
        "ships_to_region": True,
        "carrier": _plain(policy["carrier"]),
        "dispatch_days": policy["dispatch_days"],
        "shipping_fee": policy["shipping_fee"],
        "free_shipping_over": policy["free_shipping_over"],
    }
    key = (region or "").strip().lower()
    if not key:
        return out
    if any(_hits(e, key) for e in policy.get("excluded_regions", ())):
        return {"region": region, "ships_to_region": False}
    for entry in policy.get("remote_regions", ()):
        if _hits(entry, key):
            out.update(
                extra_days=entry["extra_days"],
                extra_fee=entry["extra_fee"],
                free_shipping_applies=False,
            )
    return out
