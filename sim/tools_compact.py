"""Compact tool results: only the fields a reply to the asked question needs.

A full result carries 10-20 fields (brand, category, per-SKU stock, every
attribute). A small model trained from scratch reads each of them as tokens, so
``SimBackend(compact=True)`` passes every result through :func:`compact_result`,
which keeps per role what the oracle's replies (``sim.oracle_replies``) and the
rule judges (``sim.judge_rules``, ``sim.judge_facts``) read:

  product_info  link_id, price (list), price_now, flash_sale, coupons, campaign,
                cross_shop_discount, selling_points, and the attribute facts a
                viewer can ask about (keys holding ``ASKED_ATTRIBUTES``:
                size_chart, sizes, material, ingredients, skin_types,
                shelf_life_*, allergens, specs, warranty_months; size-chart rows
                keep the fit: height and weight); fields a ``fields`` argument
                asks for stay too
  stock         link_id, units_left, and for a named SKU: sku, matched_skus,
                sku_units_left (not the per-SKU table)
  promotions    link_id, coupons, shop_coupons, flash_sale / flash_sales, and the
                campaign's name and cross-shop discount
  shipping      region, ships_to_region, carrier, dispatch_days,
                free_shipping_over, extra_days, extra_fee, return_days,
                return_shipping, refund_days

``None`` values are left out. The default backend keeps full results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Category attributes a viewer can ask about (sim.types.ATTRIBUTES minus the
# common ones, which other keys answer); a fact key holding one is kept, as the
# judges find attribute facts (sim.judge_facts.attribute_facts).
ASKED_ATTRIBUTES = (
    "size",
    "material",
    "ingredients",
    "skin_type",
    "shelf_life",
    "allergens",
    "specs",
    "warranty",
)
COMPACT_KEYS: dict[str, tuple[str, ...]] = {
    "product_info": (
        "link_id",
        "price",
        "price_now",
        "flash_sale",
        "coupons",
        "campaign",
        "cross_shop_discount",
        "selling_points",
    ),
    "stock": ("link_id", "units_left", "sku", "matched_skus", "sku_units_left"),
    "promotions": (
        "link_id",
        "coupons",
        "shop_coupons",
        "flash_sale",
        "flash_sales",
        "campaign",
    ),
    "shipping": (
        "region",
        "ships_to_region",
        "carrier",
        "dispatch_days",
        "free_shipping_over",
        "extra_days",
        "extra_fee",
        "return_days",
        "return_shipping",
        "refund_days",
    ),
}
CAMPAIGN_KEYS = ("name", "cross_shop_discount")
FIT_KEYS = ("height_cm", "weight_kg")  # what a size reply quotes from a chart row


def _keep(role: str, key: str, asked: set[str]) -> bool:
    if key in COMPACT_KEYS[role] or key in asked:
        return True
    return role == "product_info" and any(a in key for a in ASKED_ATTRIBUTES)


def compact_result(
    role: str, result: Mapping[str, Any] | None, asked: Sequence[str] = ()
) -> dict[str, Any] | None:
    """``result`` of a ``role`` tool with only the fields a reply needs.

    Args:
      role: a canonical tool role (``sim.types.TOOL_ROLES``).
      result: the full result (None: not found, passed through).
      asked: fact keys the call asked for by name (a ``fields`` argument).
    """
    if result is None:
        return None
    if role not in COMPACT_KEYS:
        raise ValueError(f"unknown tool role {role!r}; have {sorted(COMPACT_KEYS)}")
    asked = set(asked)
    out = {k: v for k, v in result.items() if v is not None and _keep(role, k, asked)}
    if role == "promotions" and isinstance(out.get("campaign"), Mapping):
        camp = out["campaign"]
        out["campaign"] = {k: camp[k] for k in CAMPAIGN_KEYS if k in camp}
    chart = out.get("size_chart")
    if role == "product_info" and isinstance(chart, Mapping):
        out["size_chart"] = {
            size: {k: row[k] for k in FIT_KEYS if k in row}
            if isinstance(row, Mapping)
            else row
            for size, row in chart.items()
        }
    return out
