"""Compact tool results: each a trimmed copy of the full one, shorter, and enough
for the oracle to reply exactly as it does from full results."""

import json
from statistics import mean

import pytest

from hat_jax.harness import LOAD_SKILL, load_harness
from sim.binding import bind
from sim.catalog import make_catalog
from sim.datasets import make_cases
from sim.oracle import gold_trajectories
from sim.rewards import judge_all
from sim.tools import FaultConfig, SimBackend, tool_context
from sim.tools_compact import FIT_KEYS, compact_result
from sim.types import RoomSnapshot


@pytest.fixture(scope="module")
def catalog():
    return make_catalog("test", 11)


@pytest.fixture(scope="module")
def snap(catalog):
    sale = catalog.flash_sales[0]
    clock = sale.start + 90.0
    active = {
        s.link_id: s.price for s in catalog.flash_sales if s.start <= clock < s.end
    }
    stock = {p.link_id: max(p.stock - 7 * p.link_id, 1) for p in catalog.products}
    return RoomSnapshot("room-0", catalog, clock, 1, stock, active, "taolive_v1")


def both(binding, snap, name, args):
    """(full, compact) results of one call."""
    ctx = tool_context(snap, binding)
    out = [SimBackend(compact=c).call(name, args, context=ctx) for c in (0, 1)]
    assert all(o.ok for o in out), out
    return [json.loads(o.result_text) for o in out]


def calls(catalog, binding):
    t = binding.tools
    for p in catalog.products:
        link = {"link_id": p.link_id}
        yield "product_info", t["product_info"], link
        yield "stock", t["stock"], link
        yield "stock", t["stock"], {**link, "sku": p.skus[0]}
        yield "promotions", t["promotions"], link
    yield "promotions", t["promotions"], {}
    for region in (None, "新疆", "Hong Kong"):
        yield "shipping", t["shipping"], {"region": region} if region else {}


@pytest.mark.parametrize("name", ["taolive_v1", "taolive_v2"])
def test_compact_is_a_trimmed_copy(catalog, snap, name):
    binding = bind(load_harness(name))
    sizes = {False: [], True: []}
    for role, tool, args in calls(catalog, binding):
        if name == "taolive_v2" and role == "product_info":
            args = {"item": args}
        full, small = both(binding, snap, tool, args)
        assert small == compact_result(role, full)
        assert set(small) <= set(full) and len(str(small)) <= len(str(full))
        for key, value in small.items():
            if key not in ("campaign", "size_chart"):
                assert value == full[key], key
        sizes[False].append(len(json.dumps(full)))
        sizes[True].append(len(json.dumps(small)))
    assert mean(sizes[True]) < 0.7 * mean(sizes[False])


def test_role_fields_kept(catalog, snap):
    v1, v2 = bind(load_harness("taolive_v1")), bind(load_harness("taolive_v2"))
    link = next(iter(snap.active_flash))
    full, info = both(v1, snap, "get_product_info_by_link_id", {"link_id": link})
    keep = {"link_id", "price", "price_now", "flash_sale", "coupons", "selling_points"}
    assert keep <= set(info) and not {"brand", "skus", "title", "live_price"} & set(
        info
    )
    attrs = {"material", "size_chart", "sizes", "ingredients", "specs", "allergens"}
    assert set(full) & attrs == set(info) & attrs != set()
    _, promo = both(v2, snap, "get_promotions", {"link_id": link})
    assert promo["campaign"] == {
        "name": {"zh": "双12", "en": "Double 12"},
        "cross_shop_discount": {"every": 300.0, "off": 30.0},
    }
    assert {"flash_sale", "coupons", "shop_coupons"} <= set(promo)
    _, stock = both(v1, snap, "check_stock", {"link_id": link})
    assert set(stock) == {"link_id", "units_left"}
    _, ship = both(v1, snap, "get_shipping_policy", {})
    assert "region" not in ship and "shipping_fee" not in ship
    assert {"dispatch_days", "return_days", "refund_days", "carrier"} <= set(ship)


def test_size_chart_rows_keep_the_fit():
    full = {"link_id": 1, "size_chart": {"M": {"height_cm": "158-165", "chest_cm": 94}}}
    out = compact_result("product_info", full)
    assert out["size_chart"] == {"M": {"height_cm": "158-165"}}
    assert FIT_KEYS == ("height_cm", "weight_kg")


def test_asked_fields_stay(catalog, snap):
    v2 = bind(load_harness("taolive_v2"))
    item = {"item": {"link_id": 1, "fields": ["title"]}}
    full, small = both(v2, snap, "query_item", item)
    assert small["title"] == full["title"] and "brand" in small
    assert compact_result("product_info", {"title": "x", "brand": "y"}) == {}


def test_none_and_errors():
    assert compact_result("stock", None) is None
    assert compact_result("shipping", {"region": None, "dispatch_days": 2}) == {
        "dispatch_days": 2
    }
    with pytest.raises(ValueError, match="unknown tool role"):
        compact_result("weather", {})


def test_faults_apply_to_compact_text(catalog, snap):
    v1 = bind(load_harness("taolive_v1"))
    ctx = tool_context(snap, v1)
    args = {"link_id": 1}
    good = SimBackend(compact=True).call("check_stock", args, context=ctx)
    bad = SimBackend(FaultConfig(malformed=1.0), compact=True).call(
        "check_stock", args, context=ctx
    )
    assert bad.fault == "malformed" and good.result_text.startswith(bad.result_text)


@pytest.mark.parametrize("name", ["taolive_v1", "taolive_v2"])
def test_oracle_on_compact_results_scores_full_marks(name):
    h = load_harness(name)
    binding, cases = bind(h), make_cases("test", 0, 60)
    full = gold_trajectories(cases, h)
    small = gold_trajectories(cases, h, compact_results=True)
    for traj, case in zip(small, cases):
        scores = judge_all(
            traj, case.snapshot, case.message, binding, ("accuracy", "effectiveness")
        )
        assert {k: s.value for k, s in scores.items()} == {
            "accuracy": 1.0,
            "effectiveness": 1.0,
        }, (case.message.text, scores)
    assert [t.reply for t in small] == [t.reply for t in full]

    def chars(trajs):
        return mean(
            len(x.result)
            for t in trajs
            for x in t.tool_calls
            if x.name != LOAD_SKILL and x.ok
        )

    assert chars(small) < 0.7 * chars(full)
