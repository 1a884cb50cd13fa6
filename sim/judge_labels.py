"""The hand-labelled judge cases (``sim/data/judge_labels.jsonl``) and their loader.

Each line is one turn in a compact form, with the scores a careful human gives
it under the rubrics of ``sim/judge_rules.py``, ``sim/judge_tools.py`` and
``sim/judge_success.py``::

  {"id": "price_ok", "harness": "taolive_v1",
   "room": {"flash": {"4": 279}, "stock": {"3": 0}, "featured": 1, "clock": 1500},
   "products": {"1": {"coupons": []}},            # field overrides on the shelf
   "msg": {"text": "1号链接多少钱", "intent": "product_question", "lang": "zh",
           "link_id": 1, "attribute": "price"},
   "calls": [["get_product_info_by_link_id", {"link_id": 1}],
             ["check_stock", {"link_id": 1}, "timeout"]],   # optional fault
   "skills": ["item_qa"],                          # load_skill calls, after calls
   "reply": "...", "status": "ok",
   "expect": {"accuracy": 1, "effectiveness": 1, "tool_rationality": 1,
              "skill_selection": 1, "success": 1},
   "note": "why"}

Everything else comes from :data:`SHELF`, a five-product shop. Tool results are
rendered from the snapshot by role, as the sandbox would; a call to a tool the
harness lacks, or with arguments its schema rejects, is recorded as the agent
loop records it (``fault="rejected"``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hat_jax.harness import (
    FAULTS,
    LOAD_SKILL,
    ToolExchange,
    Trajectory,
    load_harness,
)
from hat_jax.harness.backend import as_result_text, fault_outcome
from hat_jax.text.toolcall import ToolCall
from sim.binding import Binding, bind
from sim.judge_llm import agreement
from sim.judge_tools import schema_errors
from sim.rewards import JUDGED, Score, judge_all
from sim.types import Catalog, Coupon, FlashSale, Product, RoomSnapshot, ViewerMessage

LABELS = Path(__file__).with_name("data") / "judge_labels.jsonl"


def _product(link: int, category: str, zh: str, en: str, **kw: Any) -> Product:
    base = dict(
        link_id=link,
        sku_id=f"LBL-{link:04d}",
        category=category,
        title={"zh": zh, "en": en},
        brand="小桃优选",
        coupons=(),
        skus=(),
        selling_points=(),
        ships_in_days=2,
        free_shipping_over=99.0,
        return_days=7,
        forbidden_claims=(),
    )
    return Product(**{**base, **kw})


SHELF = (
    _product(
        1, "apparel", "纯棉宽松T恤", "Loose cotton T-shirt", price=199.0,
        live_price=159.0, coupons=(Coupon(150.0, 20.0),), stock=86,
        skus=("S", "M", "L", "XL"),
        attributes={
            "material": {"zh": "新疆长绒棉", "en": "long-staple cotton"},
            "size_chart": {"M": "160-170cm/50-60kg", "L": "170-178cm/60-70kg"},
        },
        selling_points=("不易起球",), forbidden_claims=("永不变形", "never shrinks"),
    ),
    _product(
        2, "beauty", "保湿面霜", "Moisturising cream", price=299.0, live_price=239.0,
        coupons=(Coupon(200.0, 30.0),), stock=40, skus=("50ml",), ships_in_days=1,
        attributes={
            "ingredients": {
                "zh": "透明质酸、神经酰胺", "en": "hyaluronic acid, ceramide"
            },
            "skin_type": {"zh": "干性和混合性肌肤", "en": "dry and combination skin"},
        },
        forbidden_claims=("祛痘", "治疗湿疹", "cures acne", "treats eczema"),
    ),
    _product(
        3, "food", "每日坚果", "Daily mixed nuts", price=129.0, live_price=99.0,
        stock=0, skus=("750g",), free_shipping_over=59.0,
        attributes={
            "shelf_life_days": 180, "allergens": {"zh": "坚果", "en": "tree nuts"}
        },
        forbidden_claims=("降血压", "lowers blood pressure"),
    ),
    _product(
        4, "electronics", "降噪蓝牙耳机", "Noise-cancelling earbuds", price=399.0,
        live_price=329.0, coupons=(Coupon(300.0, 50.0),), stock=12,
        skus=("白色", "黑色"), ships_in_days=3, free_shipping_over=0.0, return_days=15,
        attributes={
            "specs": {"zh": "续航30小时，蓝牙5.3", "en": "30h battery, Bluetooth 5.3"},
            "warranty_months": 12,
        },
        forbidden_claims=("最好的耳机", "best earbuds ever"),
    ),
    _product(
        5, "home", "折叠收纳箱", "Folding storage box", price=89.0, live_price=89.0,
        stock=300, attributes={"material": {"zh": "PP塑料", "en": "PP plastic"}},
    ),
)  # fmt: skip
FLASH_SALES = (FlashSale(link_id=4, start=1200.0, end=1800.0, price=279.0),)
SHIPPING_POLICY = {
    "carrier": {"zh": "中通快递", "en": "ZTO Express"},
    "dispatch_hours": 48,
    "no_delivery": ["西藏", "海外"],
}


@dataclasses.dataclass(frozen=True)
class LabelledCase:
    id: str
    traj: Trajectory
    snapshot: RoomSnapshot
    msg: ViewerMessage
    binding: Binding
    expect: dict[str, float]
    note: str = ""


@functools.cache
def _binding(name: str) -> Binding:
    return bind(load_harness(name))


def _snapshot(case: dict[str, Any]) -> RoomSnapshot:
    edits = {int(k): v for k, v in case.get("products", {}).items()}
    products = []
    for p in SHELF:
        fields = dict(edits.get(p.link_id, {}))
        if "coupons" in fields:
            fields["coupons"] = tuple(Coupon(*c) for c in fields["coupons"])
        products.append(dataclasses.replace(p, **fields))
    catalog = Catalog(
        catalog_id="judge-labels",
        split="test",
        seed=0,
        products=tuple(products),
        flash_sales=FLASH_SALES,
        shop_coupons=(Coupon(299.0, 30.0),),
        shipping_policy=SHIPPING_POLICY,
    )
    room = case.get("room", {})
    stock = {p.link_id: p.stock for p in products}
    stock.update({int(k): v for k, v in room.get("stock", {}).items()})
    return RoomSnapshot(
        room_id=f"label-{case['id']}",
        catalog=catalog,
        clock=float(room.get("clock", 1500.0)),
        featured_link=int(room.get("featured", 1)),
        stock=stock,
        active_flash={int(k): float(v) for k, v in room.get("flash", {}).items()},
        harness_version=case.get("harness", "taolive_v1"),
    )


def render_result(role: str | None, args: dict, snap: RoomSnapshot) -> Any:
    """What the sandbox returns for a canonical call (JSON value)."""
    link = args.get("link_id")
    p = snap.catalog.product(link) if link is not None else None
    if role in ("product_info", "stock", "promotions") and link is not None and not p:
        return {"error": f"no link {link} in this room"}
    if role == "product_info":
        return {
            "link_id": link,
            "title": dict(p.title),
            "price": p.price,
            "live_price": p.live_price,
            "price_now": snap.price_now(link),
            "skus": list(p.skus),
            "attributes": dict(p.attributes),
            "selling_points": list(p.selling_points),
        }
    if role == "stock":
        return {"link_id": link, "sku": args.get("sku"), "stock": snap.stock[link]}
    if role == "promotions":
        coupons = [dataclasses.asdict(c) for c in (p.coupons if p else ())]
        flash = snap.active_flash.get(link) if link is not None else None
        shop = [dataclasses.asdict(c) for c in snap.catalog.shop_coupons]
        return {"coupons": coupons, "flash_price": flash, "shop_coupons": shop}
    if role == "shipping":
        out = dict(snap.catalog.shipping_policy, region=args.get("region"))
        if p is None:
            p = snap.catalog.product(snap.featured_link)
        out.update(ships_in_days=p.ships_in_days, return_days=p.return_days)
        return out
    return {"error": "unknown tool"}


def _exchange(call: list, snap: RoomSnapshot, binding: Binding) -> ToolExchange:
    name, args = call[0], dict(call[1])
    fault = call[2] if len(call) > 2 else None
    h = binding.harness
    if fault is None and schema_errors(name, args, binding):
        fault = "rejected"
    if fault in FAULTS:
        outcome = fault_outcome(fault, name)
        return ToolExchange(name, args, outcome.result_text, False, fault)
    if fault is not None:
        return ToolExchange(name, args, f"error: call rejected ({fault})", False, fault)
    if name == LOAD_SKILL:
        skill = h.skill(args["name"])
        return ToolExchange(name, args, skill.body)
    canon = binding.inverse(ToolCall(name, args))
    role = binding.role_of(name)
    result = as_result_text(render_result(role, canon.arguments, snap))
    return ToolExchange(name, args, result)


def build_case(case: dict[str, Any]) -> LabelledCase:
    """A compact labelled case as the objects the judges take."""
    binding = _binding(case.get("harness", "taolive_v1"))
    snap = _snapshot(case)
    msg = ViewerMessage(**{"viewer": "viewer", **case["msg"]})
    calls = list(case.get("calls", []))
    calls += [[LOAD_SKILL, {"name": s}] for s in case.get("skills", [])]
    traj = Trajectory(
        harness_id=binding.harness.id,
        user_message=msg.text,
        messages=[{"role": "user", "content": msg.text}],
        tool_calls=[_exchange(c, snap, binding) for c in calls],
        reply=case.get("reply"),
        status=case.get("status", "ok"),
        meta={"case_id": case["id"], "message": dataclasses.asdict(msg)},
    )
    expect = {k: float(v) for k, v in case["expect"].items()}
    return LabelledCase(
        case["id"], traj, snap, msg, binding, expect, case.get("note", "")
    )


def load_labels(path: str | Path = LABELS) -> list[LabelledCase]:
    """Every labelled case in ``path`` (default: the shipped set)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [build_case(json.loads(line)) for line in lines if line.strip()]


Judge = Callable[..., dict[str, Score]]


def labelled_agreement(
    judge: Judge, cases: list[LabelledCase] | None = None
) -> dict[str, Any]:
    """Runs ``judge(traj, snapshot, msg, binding)`` over the labelled set.

    Returns ``agreement(labels, judged)`` (per-reward agreement rate, mean
    absolute difference and Cohen's kappa where categorical), ``n``,
    ``mismatches`` (``[case id, reward, label, judged]`` rows) and
    ``vs_rule_judge``: ``agreement(rule judge, judged)`` on the same cases.
    """
    cases = load_labels() if cases is None else cases
    labels, judged, rules, mismatches = [], [], [], []
    for c in cases:
        scores = judge(c.traj, c.snapshot, c.msg, c.binding)
        labels.append({k: Score(v) for k, v in c.expect.items()})
        judged.append(scores)
        rules.append(judge_all(c.traj, c.snapshot, c.msg, c.binding))
        for name in JUDGED:
            got = scores[name].value if name in scores else None
            if name in c.expect and got != c.expect[name]:
                mismatches.append([c.id, name, c.expect[name], got])
    out = agreement(labels, judged)
    vs_rules = agreement(rules, judged)
    return {**out, "n": len(cases), "mismatches": mismatches, "vs_rule_judge": vs_rules}
