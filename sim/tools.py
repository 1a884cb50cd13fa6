"""The tool sandbox: harness tools executed against a room snapshot, with faults.

:class:`SimBackend` implements ``hat_jax.harness.ToolBackend``. The agent loop
passes each request's ``meta`` to the backend in its ``ToolContext``; the room
and the harness binding travel there under ``meta["sim"]`` as a
:class:`SimContext` (build the meta with :func:`sim_meta`). A call then goes:

1. the harness tool must exist (else ``fault="unknown_tool"``) and its arguments
   fit the harness schema (else ``"invalid_arguments"``);
2. it is mapped back to the canonical harness (``binding.inverse``); a tool that
   serves no role (an HSA distractor) answers ``"unavailable"``, a link that is
   not on the shelf ``"not_found"``;
3. an injected fault may replace the answer of a valid call
   (:class:`FaultConfig` rates, or a forced per-call ``fault_plan``), drawn from
   a generator seeded by ``(seed, room_id, case, call index)``, so results never
   depend on call order;
4. the role runs against the snapshot; results are JSON text with sorted keys
   (with ``compact=True``, only the fields a reply needs:
   ``sim.tools_compact``).

Results never name the tool or the harness, so a trajectory's tool results stay
valid when HSA renames things. Error and fault texts start with ``"error:"``;
malformed output is a truncated JSON object (never valid JSON).
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hat_jax.harness import ToolContext, ToolOutcome, schema_leaves, validate_json
from hat_jax.text.toolcall import ToolCall
from sim.binding import Binding, canonical_harness
from sim.catalog import match_sku, product_facts, shipping_for_region, sku_stock
from sim.tools_compact import compact_result
from sim.types import FAULT_KINDS, Coupon, RoomSnapshot

SIM_META = "sim"  # the request-meta key holding the SimContext
TIMEOUT_MS = 3000
# What the Double 12 campaign adds to promotion results under a campaign harness.
CAMPAIGN = {
    "name": {"zh": "双12", "en": "Double 12"},
    "cross_shop_discount": {"every": 300.0, "off": 30.0},
    "stacks_with_shop_coupon": True,
    "price_protection": False,
}
# query_item-style `fields` values -> product-fact keys they select.
FIELD_KEYS = {
    "title": ("title", "brand", "category"),
    "price": ("price", "live_price", "price_now", "coupons", "flash_sale"),
    "campaign_price": ("campaign", "campaign_price", "price_now", "flash_sale"),
    "specs": ("specs", "skus", "warranty_months", "volume_ml", "net_weight_g"),
    "material": ("material", "care"),
    "size_chart": ("size_chart", "sizes", "skus"),
    "selling_points": ("selling_points",),
}
ALWAYS_KEYS = ("link_id", "title")


@dataclasses.dataclass(frozen=True)
class FaultConfig:
    """Per-call probabilities of each injected fault (they must sum to <= 1)."""

    timeout: float = 0.0
    malformed: float = 0.0
    permission_denied: float = 0.0

    def __post_init__(self):
        rates = self.rates()
        if any(not 0.0 <= r <= 1.0 for r in rates.values()) or sum(rates.values()) > 1:
            raise ValueError(f"fault rates must be in [0, 1] and sum to <= 1: {rates}")

    def rates(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in FAULT_KINDS}

    def draw(self, u: float) -> str | None:
        """The fault for a uniform draw ``u`` in [0, 1), or None."""
        edge = 0.0
        for kind, rate in self.rates().items():
            edge += rate
            if u < edge:
                return kind
        return None


@dataclasses.dataclass(frozen=True)
class SimContext:
    """What the backend needs besides the call (carried in ``meta["sim"]``).

    Attributes:
      snapshot: the room now.
      binding: the harness in force and its mapping from the canonical harness.
      case: the case id (part of the fault seed).
      fault_plan: forced faults by ``ToolContext.index`` (the call's position
        among the conversation's backend calls, load_skill not counted): a fault kind
        or None (no fault); calls past the plan draw from the configured rates.
    """

    snapshot: RoomSnapshot
    binding: Binding
    case: str = ""
    fault_plan: tuple[str | None, ...] = ()


def sim_meta(
    snapshot: RoomSnapshot,
    binding: Binding,
    *,
    case: str = "",
    fault_plan: Sequence[str | None] = (),
) -> dict[str, Any]:
    """Request meta for a room (``TurnRequest(meta=...)`` / ``ToolContext``)."""
    for f in fault_plan:
        if f is not None and f not in FAULT_KINDS:
            raise ValueError(f"unknown fault {f!r}; have {FAULT_KINDS}")
    ctx = SimContext(snapshot, binding, case, tuple(fault_plan))
    return {SIM_META: ctx, "room_id": snapshot.room_id, "case": case}


def tool_context(
    snapshot: RoomSnapshot, binding: Binding, *, index: int = 0, **kw: Any
) -> ToolContext:
    """A ToolContext for calling the backend directly (tests, batch tools)."""
    meta = sim_meta(snapshot, binding, **kw)
    return ToolContext(room_context=snapshot.context(), meta=meta, index=index)


def dumps(value: Any) -> str:
    """Tool results as text: JSON, UTF-8 kept, keys sorted (deterministic)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _error(text: str, fault: str) -> ToolOutcome:
    return ToolOutcome(f"error: {text}", ok=False, fault=fault)


def _coupons(coupons: Sequence[Coupon]) -> list[dict[str, float]]:
    return [{"threshold": c.threshold, "off": c.off} for c in coupons]


def _minutes_left(snapshot: RoomSnapshot, link: int) -> int | None:
    sales = [s for s in snapshot.catalog.flash_sales if s.link_id == link]
    live = [s for s in sales if s.start <= snapshot.clock < s.end] or sales
    if not live:
        return None
    return int(np.ceil(max(live[0].end - snapshot.clock, 0.0) / 60))


def _flash(snapshot: RoomSnapshot, link: int) -> dict[str, Any] | None:
    if link not in snapshot.active_flash:
        return None
    sale: dict[str, Any] = {"price": float(snapshot.active_flash[link])}
    left = _minutes_left(snapshot, link)
    if left is not None:
        sale["ends_in_minutes"] = left
    return sale


# --- The roles ------------------------------------------------------------------
def product_info(
    snapshot: RoomSnapshot, args: Mapping[str, Any], campaign: bool = False
) -> dict[str, Any] | None:
    product = snapshot.catalog.product(args["link_id"])
    if product is None:
        return None
    facts = product_facts(product, snapshot)
    if campaign:
        facts["campaign"] = dict(CAMPAIGN["name"])
        facts["campaign_price"] = facts["price_now"]
        facts["cross_shop_discount"] = dict(CAMPAIGN["cross_shop_discount"])
    return facts


def stock(snapshot: RoomSnapshot, args: Mapping[str, Any]) -> dict[str, Any] | None:
    link = args["link_id"]
    product = snapshot.catalog.product(link)
    if product is None:
        return None
    units = int(snapshot.stock.get(link, product.stock))
    per_sku = sku_stock(product, units)
    out: dict[str, Any] = {
        "link_id": link,
        "units_left": units,
        "sold_out": units <= 0,
        "skus": per_sku,
    }
    said = args.get("sku")
    if said:
        named = match_sku(product, said)
        out["sku"] = said
        out["matched_skus"] = {s: per_sku[s] for s in named}
        if named:
            out["sku_units_left"] = sum(per_sku[s] for s in named)
    return out


def promotions(
    snapshot: RoomSnapshot, args: Mapping[str, Any], campaign: bool = False
) -> dict[str, Any] | None:
    cat = snapshot.catalog
    out: dict[str, Any] = {"shop_coupons": _coupons(cat.shop_coupons)}
    if campaign:
        out["campaign"] = json.loads(json.dumps(CAMPAIGN))
    link = args.get("link_id")
    if link is None:
        out["flash_sales"] = [
            {"link_id": lid, **_flash(snapshot, lid)}
            for lid in sorted(snapshot.active_flash)
        ]
        return out
    product = cat.product(link)
    if product is None:
        return None
    out.update(link_id=link, coupons=_coupons(product.coupons))
    out["price_now"] = snapshot.price_now(link)
    flash = _flash(snapshot, link)
    if flash is not None:
        out["flash_sale"] = flash
    return out


def shipping(snapshot: RoomSnapshot, args: Mapping[str, Any]) -> dict[str, Any]:
    policy = snapshot.catalog.shipping_policy
    out = shipping_for_region(policy, args.get("region"))
    out.update(
        return_days=policy["return_days"],
        return_shipping=dict(policy["return_shipping"]),
        refund_days=policy["refund_days"],
    )
    return out


# --- The backend -----------------------------------------------------------------
def _find_fields(extra: Any) -> list[str] | None:
    """A `fields` list among the arguments the canonical tool does not know."""
    if isinstance(extra, dict):
        for key, value in extra.items():
            if key == "fields" and isinstance(value, list):
                if all(isinstance(v, str) and v in FIELD_KEYS for v in value):
                    return value
            found = _find_fields(value)
            if found is not None:
                return found
    return None


def _project(facts: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    if not fields:
        return facts
    keep = set(ALWAYS_KEYS).union(*(FIELD_KEYS[f] for f in fields))
    return {k: v for k, v in facts.items() if k in keep}


def _split(call: ToolCall) -> tuple[dict[str, Any], dict[str, Any]]:
    """Canonical arguments the canonical tool declares, and the rest."""
    spec = canonical_harness().tool(call.name)
    top = {p[0] for p in schema_leaves(spec.parameters)} if spec else set()
    known = {k: v for k, v in call.arguments.items() if k in top}
    return known, {k: v for k, v in call.arguments.items() if k not in top}


def call_seed(seed: int, room_id: str, case: str, index: int) -> list[int]:
    """The entropy of one call's fault generator."""
    return [
        int(seed),
        zlib.crc32(room_id.encode()),
        zlib.crc32(case.encode()),
        int(index),
    ]


class SimBackend:
    """Harness tools run against the room in ``context.meta["sim"]``.

    Args:
      faults: injected-fault rates per valid call.
      seed: the fault seed (with the room id, case id and call index).
      compact: return only the fields a reply needs (``sim.tools_compact``);
        the default is the full result.
    """

    def __init__(
        self, faults: FaultConfig | None = None, *, seed: int = 0, compact: bool = False
    ):
        self.faults = faults or FaultConfig()
        self.seed = int(seed)
        self.compact = bool(compact)

    def call(
        self, name: str, arguments: dict[str, Any], *, context: ToolContext
    ) -> ToolOutcome:
        sim = (context.meta or {}).get(SIM_META)
        if not isinstance(sim, SimContext):
            return _error(f"no room state for this call (meta[{SIM_META!r}])", "error")
        binding = sim.binding
        spec = binding.harness.tool(name)
        if spec is None:
            return _error(f"unknown tool {name!r}", "unknown_tool")
        if not isinstance(arguments, dict):
            return _error("arguments must be an object", "invalid_arguments")
        errs = validate_json(arguments, spec.parameters)
        canon = binding.inverse(ToolCall(name, arguments))
        role = binding.role_of(name)
        if role is None:
            return _error("this tool is not available in this room", "unavailable")
        known, extra = _split(canon)
        errs = errs or validate_json(
            known, canonical_harness().tool(canon.name).parameters
        )
        if errs:
            return _error("invalid arguments: " + "; ".join(errs), "invalid_arguments")
        link = known.get("link_id")
        if link is not None and sim.snapshot.catalog.product(link) is None:
            return _error(f"there is no link {link} on the shelf", "not_found")
        # Faults are drawn for valid calls only, so rates are per valid call.
        fault = self._fault(sim, context)
        if fault in ("timeout", "permission_denied"):
            return self._fault_outcome(fault, "", sim, context)
        text = dumps(self._run(role, sim, known, extra))
        if fault == "malformed":
            return self._fault_outcome(fault, text, sim, context)
        return ToolOutcome(text)

    def call_batch(
        self, calls: Sequence[tuple[str, dict[str, Any], ToolContext]]
    ) -> list[ToolOutcome]:
        """Many calls (over many rooms); each result depends only on its call."""
        return [self.call(n, a, context=c) for n, a, c in calls]

    # -- internals ---------------------------------------------------------------
    def _rng(self, sim: SimContext, index: int, *more: int) -> np.random.Generator:
        entropy = call_seed(self.seed, sim.snapshot.room_id, sim.case, index)
        return np.random.default_rng([*entropy, *more])

    def _fault(self, sim: SimContext, context: ToolContext) -> str | None:
        if 0 <= context.index < len(sim.fault_plan):
            return sim.fault_plan[context.index]
        return self.faults.draw(float(self._rng(sim, context.index).random()))

    def _fault_outcome(
        self, fault: str, text: str, sim: SimContext, context: ToolContext
    ) -> ToolOutcome:
        if fault == "timeout":
            return _error(f"timeout after {TIMEOUT_MS} ms", fault)
        if fault == "permission_denied":
            return _error(
                "permission denied: the host account may not use this tool now", fault
            )
        # Malformed: the answer cut short (a proper prefix of a JSON object is
        # never valid JSON).
        cut = int(len(text) * self._rng(sim, context.index, 1).uniform(0.3, 0.8))
        return ToolOutcome(text[: max(cut, 1)], ok=False, fault="malformed")

    def _run(
        self, role: str, sim: SimContext, args: dict[str, Any], extra: dict[str, Any]
    ) -> dict[str, Any] | None:
        snap, campaign = sim.snapshot, sim.binding.campaign
        fields = _find_fields(extra) if role == "product_info" else None
        if role == "product_info":
            facts = product_info(snap, args, campaign)
            out = None if facts is None else _project(facts, fields)
        elif role == "stock":
            out = stock(snap, args)
        elif role == "promotions":
            out = promotions(snap, args, campaign)
        else:
            out = shipping(snap, args)
        if not self.compact:
            return out
        asked = [k for f in fields or () for k in FIELD_KEYS[f]]
        return compact_result(role, out, asked)
