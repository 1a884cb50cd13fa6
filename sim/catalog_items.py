"""Product builders for `sim.catalog`: one product of each category from a bank
entry, with shop-style prices, coupons and SKUs (pure functions of a Generator)."""

from __future__ import annotations

import math

import numpy as np

from sim import catalog_banks as B
from sim import catalog_shop_banks as SB
from sim.types import Coupon, Product


def zh_en(pair) -> dict[str, str]:
    return {"zh": pair[0], "en": pair[1]}


def pick(rng: np.random.Generator, seq, k: int | None = None):
    if k is None:
        return seq[int(rng.integers(len(seq)))]
    idx = sorted(rng.choice(len(seq), size=min(k, len(seq)), replace=False))
    return [seq[int(i)] for i in idx]


def _charm(x: float) -> float:
    """A shop price: 9.9 / 59.9 below 100, 199 / 1299 above."""
    if x < 100:
        return round(max(math.floor(x), 1) - 0.1, 1) if x >= 2 else 1.0
    return float(max(round(x / 10) * 10 - 1, 99))


def price_below(x: float, cap: float) -> float:
    """`x` as a shop price, strictly below `cap`."""
    p = _charm(x)
    while p >= cap:
        p = _charm(p * 0.9) if p > 2 else round(cap / 2, 2)
    return p


# --- Category builders: (type zh, type en, price range, skus (zh, en), attributes,
# claims, return days) -------------------------------------------------------------
def _apparel(rng, spec):
    zh, en, lo, hi, cut, materials = spec
    colours = pick(rng, B.COLOURS, int(rng.integers(2, 4)))
    chart = {}
    jitter = {col: float(rng.integers(-2, 3)) for col in B.CUTS[cut]}
    for i, size in enumerate(B.SIZES):
        row = {
            c: base + i * step + jitter[c] for c, (base, step) in B.CUTS[cut].items()
        }
        row = {c: int(v) if float(v).is_integer() else v for c, v in row.items()}
        height, weight = B.SIZE_FIT[size]
        chart[size] = {**row, "height_cm": height, "weight_kg": weight}
    skus = [(f"{c[0]} {s}", f"{c[1]} {s}") for c in colours for s in B.SIZES]
    attrs = {
        "size_chart": chart,
        "sizes": list(B.SIZES),
        "colours": [zh_en(c) for c in colours],
        "material": zh_en(pick(rng, materials)),
        "care": zh_en(pick(rng, B.APPAREL_CARE)),
    }
    return zh, en, (lo, hi), skus, attrs, 15 if rng.random() < 0.1 else 7


def _beauty(rng, spec):
    zh, en, lo, hi, volumes, actives = spec
    ingredients = [("水", "water"), *actives]
    for extra, p in ((B.ALCOHOL, 0.3), (B.FRAGRANCE, 0.3)):
        if rng.random() < p:
            ingredients.append(extra)
    attrs = {
        "volume_ml": int(pick(rng, volumes)),
        "ingredients": [zh_en(i) for i in ingredients],
        "alcohol_free": B.ALCOHOL not in ingredients,
        "fragrance_free": B.FRAGRANCE not in ingredients,
        "skin_types": [zh_en(s) for s in pick(rng, B.SKIN_TYPES, rng.integers(2, 6))],
        "shelf_life_months": int(pick(rng, (24, 36))),
        "shelf_life_after_opening_months": int(pick(rng, (6, 12))),
    }
    skus = pick(rng, B.BEAUTY_PACKS, int(rng.integers(1, 3)))
    return zh, en, (lo, hi), skus, attrs, 7


def _food(rng, spec):
    zh, en, lo, hi, weights, days, storage, fresh, ingr, allergens, origins, var = spec
    attrs = {
        "net_weight_g": int(pick(rng, weights)),
        "shelf_life_days": int(days),
        "storage": zh_en(B.STORAGE[storage]),
        "ingredients": [zh_en(i) for i in ingr],
        "allergens": [zh_en(a) for a in allergens],
        "origin": zh_en(pick(rng, origins)),
        "fresh": bool(fresh),
    }
    skus = pick(rng, var, int(rng.integers(1, 3)))
    return zh, en, (lo, hi), skus, attrs, 0 if fresh else 7


def _electronics(rng, spec):
    zh, en, lo, hi, specs, warranty = spec
    attrs = {
        "specs": {k: pick(rng, v) for k, v in specs.items()},
        "warranty_months": int(pick(rng, warranty)),
    }
    skus = pick(rng, B.DEVICE_COLOURS, int(rng.integers(1, 4)))
    return zh, en, (lo, hi), skus, attrs, 7


def _home(rng, spec):
    zh, en, lo, hi, dims, weight, materials, care, variants = spec
    dims = [int(d + rng.integers(-1, 2) * (d >= 10)) for d in dims]
    attrs = {
        "specs": {
            "dimensions_cm": "×".join(str(d) for d in dims),
            "weight_kg": round(float(weight * rng.uniform(0.9, 1.1)), 1),
        },
        "material": zh_en(pick(rng, materials)),
        "care": zh_en(care),
    }
    skus = pick(rng, variants, int(rng.integers(1, len(variants) + 1)))
    return zh, en, (lo, hi), skus, attrs, 7


BUILDERS = {
    "apparel": (_apparel, B.APPAREL),
    "beauty": (_beauty, B.BEAUTY),
    "food": (_food, B.FOOD),
    "electronics": (_electronics, B.ELECTRONICS),
    "home": (_home, B.HOME),
}


def _coupons(rng, live: float) -> tuple[Coupon, ...]:
    n = int(rng.choice(3, p=(0.35, 0.45, 0.2)))
    out: dict[float, Coupon] = {}
    for i in range(n):
        step = 50.0 if live > 300 else 10.0
        threshold = math.ceil(live * (1 + i) * rng.uniform(0.95, 1.3) / step) * step
        off = max(3.0, float(round(threshold * rng.uniform(0.05, 0.15))))
        if off > 20:
            off = float(round(off / 5) * 5)
        out[threshold] = Coupon(float(threshold), min(off, threshold - 1))
    return tuple(out[t] for t in sorted(out))


def build_product(rng, split, catalog_id, link_id, category, spec, policy) -> Product:
    build, _ = BUILDERS[category]
    zh, en, (lo, hi), skus, attrs, return_days = build(rng, spec)
    brand = str(pick(rng, B.BRANDS[split][category]))
    tag = pick(rng, B.TAGS[category])
    title = {
        "zh": f"{brand} {tag[0]}{zh}".replace("  ", " "),
        "en": f"{brand} {tag[1] + ' ' if tag[1] else ''}{en}",
    }
    price = _charm(rng.uniform(lo, hi))
    live = price_below(price * rng.uniform(0.55, 0.9), price)
    r = rng.random()
    stock = int(rng.integers(3, 20) if r < 0.1 else rng.integers(20, 2000))
    points = pick(rng, SB.SELLING_POINTS[category], int(rng.integers(2, 4)))
    claims = [*SB.CLAIMS[category], *SB.SUPERLATIVES]
    presale = rng.random() < 0.1
    ships = int(rng.integers(7, 16)) if presale else policy["dispatch_days"]
    if presale:
        attrs["presale"] = True
    attrs["skus_en"] = [s[1] for s in skus]
    free_over = 0.0 if rng.random() < 0.5 else policy["free_shipping_over"]
    return Product(
        link_id=link_id,
        sku_id=f"{catalog_id}-{link_id:02d}",
        category=category,
        title=title,
        brand=brand,
        price=price,
        live_price=live,
        coupons=_coupons(rng, live),
        stock=stock,
        skus=tuple(s[0] for s in skus),
        attributes=attrs,
        selling_points=tuple(x for p in points for x in p),
        ships_in_days=ships,
        free_shipping_over=free_over,
        return_days=return_days,
        forbidden_claims=tuple(x for c in claims for x in c[:2]),
    )
