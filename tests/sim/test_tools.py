"""The tool sandbox: results match the room, renamed tools reach the same backend,
faults come at their configured rates, deterministically."""

import dataclasses
import json
from collections import Counter

import pytest

from hat_jax.harness import Mapping, Tool, ToolContext, load_harness
from sim.binding import bind, canonical_harness, canonical_mapping
from sim.catalog import make_catalog, shipping_for_region, sku_stock
from sim.tools import FaultConfig, SimBackend, tool_context
from sim.types import RoomSnapshot


def room(catalog, clock: float, room_id: str = "room-0") -> RoomSnapshot:
    """A room at ``clock``: flash sales running then, some stock sold, one link
    sold out."""
    active = {
        s.link_id: s.price for s in catalog.flash_sales if s.start <= clock < s.end
    }
    stock = {p.link_id: max(p.stock - 7 * p.link_id, 1) for p in catalog.products}
    stock[catalog.products[-1].link_id] = 0
    return RoomSnapshot(room_id, catalog, clock, 1, stock, active, "taolive_v1")


@pytest.fixture(scope="module")
def catalog():
    return make_catalog("test", 11)


@pytest.fixture(scope="module")
def snap(catalog):
    sale = catalog.flash_sales[0]
    return room(catalog, sale.start + 90.0)


@pytest.fixture(scope="module")
def v1():
    return bind(load_harness("taolive_v1"))


@pytest.fixture(scope="module")
def v2():
    return bind(load_harness("taolive_v2"))


def call(backend, binding, snap, name, args, **kw):
    return backend.call(name, args, context=tool_context(snap, binding, **kw))


def ok_json(outcome):
    assert outcome.ok, outcome
    assert outcome.fault is None
    return json.loads(outcome.result_text)


def test_product_info_matches_the_room(catalog, snap, v1):
    backend = SimBackend()
    assert snap.active_flash, "the fixture room needs a running flash sale"
    for p in catalog.products:
        facts = ok_json(
            call(backend, v1, snap, v1.tools["product_info"], {"link_id": p.link_id})
        )
        assert facts["link_id"] == p.link_id
        assert facts["title"] == dict(p.title)
        assert facts["price"] == p.price and facts["live_price"] == p.live_price
        assert facts["price_now"] == snap.price_now(p.link_id)
        coupons = [{"threshold": c.threshold, "off": c.off} for c in p.coupons]
        assert facts["coupons"] == coupons
        if p.link_id in snap.active_flash:
            assert facts["flash_sale"]["price"] == snap.active_flash[p.link_id]
            assert facts["price_now"] == snap.active_flash[p.link_id]
            assert facts["flash_sale"]["ends_in_minutes"] >= 1
        else:
            assert "flash_sale" not in facts
            assert facts["price_now"] == p.live_price
        assert "campaign" not in facts  # v1 is no campaign harness


def test_stock_matches_the_room_per_sku(catalog, snap, v1):
    backend = SimBackend()
    for p in catalog.products:
        out = ok_json(call(backend, v1, snap, "check_stock", {"link_id": p.link_id}))
        units = snap.stock[p.link_id]
        assert out["units_left"] == units
        assert out["sold_out"] == (units == 0)
        assert out["skus"] == sku_stock(p, units)
        assert sum(out["skus"].values()) == units
        sku = p.skus[0]
        one = ok_json(
            call(backend, v1, snap, "check_stock", {"link_id": p.link_id, "sku": sku})
        )
        assert one["sku"] == sku
        assert sku in one["matched_skus"]
        assert one["sku_units_left"] == sum(one["matched_skus"].values())
        assert one["matched_skus"][sku] == sku_stock(p, units)[sku]


def test_promotions_and_campaign(catalog, snap, v1, v2):
    backend = SimBackend()
    link = next(iter(snap.active_flash))
    p = catalog.product(link)
    out = ok_json(call(backend, v1, snap, "get_promotions", {"link_id": link}))
    assert out["coupons"] == [
        {"threshold": c.threshold, "off": c.off} for c in p.coupons
    ]
    assert out["flash_sale"]["price"] == snap.active_flash[link]
    sale = next(s for s in catalog.flash_sales if s.link_id == link)
    assert out["flash_sale"]["ends_in_minutes"] == -(-(sale.end - snap.clock) // 60)
    shop = [{"threshold": c.threshold, "off": c.off} for c in catalog.shop_coupons]
    assert out["shop_coupons"] == shop
    assert "campaign" not in out
    wide = ok_json(call(backend, v1, snap, "get_promotions", {}))
    assert [f["link_id"] for f in wide["flash_sales"]] == sorted(snap.active_flash)
    campaign = ok_json(call(backend, v2, snap, "get_promotions", {"link_id": link}))
    assert campaign["campaign"]["name"]["zh"] == "双12"
    assert {k: v for k, v in campaign.items() if k != "campaign"} == out


def test_shipping_policy_and_regions(catalog, snap, v1):
    backend = SimBackend()
    policy = catalog.shipping_policy
    plain = ok_json(call(backend, v1, snap, "get_shipping_policy", {}))
    assert plain["dispatch_days"] == policy["dispatch_days"]
    assert plain["return_days"] == policy["return_days"]
    remote = policy["remote_regions"][0]
    out = ok_json(
        call(backend, v1, snap, "get_shipping_policy", {"region": remote["region"]})
    )
    assert out["extra_days"] == remote["extra_days"]
    assert out["extra_fee"] == remote["extra_fee"]
    excluded = policy["excluded_regions"][0]["region_en"]
    out = ok_json(call(backend, v1, snap, "get_shipping_policy", {"region": excluded}))
    assert out["ships_to_region"] is False
    assert out["region"] == shipping_for_region(policy, excluded)["region"]


def test_v2_reshaped_tool_reaches_the_same_backend(catalog, snap, v1, v2):
    backend = SimBackend()
    assert v2.tools["product_info"] == "query_item"
    for p in catalog.products:
        a = ok_json(
            call(
                backend, v1, snap, "get_product_info_by_link_id", {"link_id": p.link_id}
            )
        )
        b = ok_json(
            call(backend, v2, snap, "query_item", {"item": {"link_id": p.link_id}})
        )
        campaign_only = {"campaign", "campaign_price", "cross_shop_discount"}
        assert {k: v for k, v in b.items() if k not in campaign_only} == a
        assert b["campaign_price"] == a["price_now"]
        # The same stock, promotion and shipping tools answer identically.
        args = {"link_id": p.link_id}
        assert ok_json(call(backend, v2, snap, "check_stock", args)) == ok_json(
            call(backend, v1, snap, "check_stock", args)
        )
    # item.fields (v2 only) selects fields; the rest of the answer is the same.
    some = ok_json(
        call(
            backend,
            v2,
            snap,
            "query_item",
            {"item": {"link_id": 2, "fields": ["price", "material"]}},
        )
    )
    assert {"link_id", "title", "price", "price_now", "coupons"} <= set(some)
    assert "selling_points" not in some and "skus" not in some


def test_augmented_harness_through_a_composed_mapping(catalog, snap, v1):
    """An HSA-style edit (tool renamed, argument renamed and nested) composed onto
    the canonical mapping still reaches the stock role."""
    base = load_harness("taolive_v2")
    stock = base.tool("check_stock")
    props = dict(stock.parameters["properties"])
    renamed = Tool(
        "inventory_lookup",
        stock.description,
        {
            "type": "object",
            "properties": {
                "target": {
                    "type": "object",
                    "properties": {
                        "item_no": props["link_id"],
                        "variant": props["sku"],
                    },
                    "required": ["item_no"],
                }
            },
            "required": ["target"],
        },
    )
    tools = tuple(renamed if t.name == "check_stock" else t for t in base.tools)
    augmented = base.replace(tools=tools)
    hsa = Mapping.identity(base)
    hsa.tools["check_stock"] = "inventory_lookup"
    hsa.params["check_stock"] = {
        ("link_id",): ("target", "item_no"),
        ("sku",): ("target", "variant"),
    }
    binding = bind(augmented, canonical_mapping(base).compose(hsa))
    assert binding.tools["stock"] == "inventory_lookup"
    backend = SimBackend()
    sku = catalog.product(3).skus[0]
    got = call(
        backend,
        binding,
        snap,
        "inventory_lookup",
        {"target": {"item_no": 3, "variant": sku}},
    )
    want = call(backend, v1, snap, "check_stock", {"link_id": 3, "sku": sku})
    assert ok_json(got) == ok_json(want)


def test_canonical_mapping_of_builtins_and_unknown_harness():
    v1h, v2h = load_harness("taolive_v1"), load_harness("taolive_v2")
    m1 = canonical_mapping(v1h)
    assert all(m1.tool(t.name) == t.name for t in canonical_harness().tools)
    m2 = canonical_mapping(v2h)
    assert m2.tool("get_product_info_by_link_id") == "query_item"
    assert m2.skill("campaign_double12") == "campaign_double12"
    assert "campaign_double12" not in m1.skills
    stripped = v1h.replace(tools=v1h.tools[1:])
    with pytest.raises(ValueError, match="canonical mapping"):
        canonical_mapping(stripped)
    # Same tool names, a renamed argument: not recognised (needs the HSA mapping).
    stock = v1h.tool("check_stock")
    props = dict(stock.parameters["properties"])
    props["item_no"] = props.pop("link_id")
    params = {**stock.parameters, "properties": props, "required": ["item_no"]}
    edited = tuple(
        dataclasses.replace(t, parameters=params) if t.name == "check_stock" else t
        for t in v1h.tools
    )
    with pytest.raises(ValueError, match="canonical mapping"):
        canonical_mapping(v1h.replace(tools=edited))


@pytest.mark.parametrize(
    "name, args, fault",
    [
        ("get_product_info_by_link_id", {"link_id": 3}, "unknown_tool"),  # v1 name
        ("query_item", {"item": {"link_id": "three"}}, "invalid_arguments"),
        ("query_item", {"item": {}}, "invalid_arguments"),
        ("query_item", {"link_id": 3}, "invalid_arguments"),
        ("query_item", {"item": {"link_id": 99}}, "not_found"),
        ("check_stock", {"link_id": 0}, "invalid_arguments"),
        ("check_stock", "not an object", "invalid_arguments"),
    ],
)
def test_bad_calls_are_error_outcomes(snap, v2, name, args, fault):
    out = call(SimBackend(FaultConfig(timeout=1.0)), v2, snap, name, args)
    assert not out.ok and out.fault == fault
    assert out.result_text.startswith("error:")


def test_missing_room_state_is_an_error(v1):
    out = SimBackend().call("check_stock", {"link_id": 1}, context=ToolContext())
    assert not out.ok and out.fault == "error"


def test_fault_rates_over_10000_calls(catalog, snap, v2):
    rates = FaultConfig(timeout=0.1, malformed=0.05, permission_denied=0.03)
    backend = SimBackend(rates, seed=3)
    rooms = [dataclasses.replace(snap, room_id=f"room-{i}") for i in range(100)]
    calls = [
        (
            "query_item",
            {"item": {"link_id": 1 + i % 5}},
            tool_context(rooms[i % 100], v2, index=i // 100, case=f"c{i % 7}"),
        )
        for i in range(10_000)
    ]
    outs = backend.call_batch(calls)
    counts = Counter(o.fault for o in outs)
    for kind, rate in rates.rates().items():
        assert abs(counts[kind] / 10_000 - rate) <= 0.01, (kind, counts)
    for o in outs:
        if o.fault == "timeout":
            assert o.result_text == "error: timeout after 3000 ms" and not o.ok
        elif o.fault == "malformed":
            assert not o.ok and o.result_text.startswith("{")
            with pytest.raises(ValueError):
                json.loads(o.result_text)
        elif o.fault == "permission_denied":
            assert o.result_text.startswith("error: permission denied")
        else:
            assert o.ok and json.loads(o.result_text)["link_id"] >= 1
    # Deterministic and order-free: the same calls reversed give the same outcomes.
    assert backend.call_batch(calls[::-1])[::-1] == outs
    assert SimBackend(rates, seed=3).call_batch(calls[:500]) == outs[:500]
    other = SimBackend(rates, seed=4).call_batch(calls[:500])
    assert [o.fault for o in other] != [o.fault for o in outs[:500]]


def test_fault_plan_forces_faults_by_call_index(snap, v1):
    backend = SimBackend(FaultConfig(timeout=1.0))
    plan = ("permission_denied", None, "malformed")
    outs = [
        call(backend, v1, snap, "check_stock", {"link_id": 1}, index=i, fault_plan=plan)
        for i in range(4)
    ]
    assert [o.fault for o in outs] == [
        "permission_denied",
        None,
        "malformed",
        "timeout",
    ]


def test_fault_config_validates():
    with pytest.raises(ValueError):
        FaultConfig(timeout=0.8, malformed=0.3)
    with pytest.raises(ValueError):
        FaultConfig(permission_denied=-0.1)
    assert FaultConfig().draw(0.0) is None


def test_distractor_tool_is_unavailable(snap):
    base = load_harness("taolive_v1")
    extra = Tool("compare_prices", "Prices elsewhere.", {"type": "object"})
    harness = base.replace(tools=(*base.tools, extra))
    mapping = canonical_mapping(base)
    mapping.added_tools.append("compare_prices")
    binding = bind(harness, mapping)
    assert binding.role_of("compare_prices") is None
    out = call(SimBackend(), binding, snap, "compare_prices", {})
    assert not out.ok and out.fault == "unavailable"
