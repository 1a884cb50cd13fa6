"""Catalogs: determinism, split disjointness, category facts, price relations,
arrays for the rooms and the facts a product tool returns."""

import itertools
import json

import numpy as np
import pytest

from sim import catalog_banks
from sim.catalog import (
    CATEGORY_ATTRIBUTES,
    STREAM_SECONDS,
    catalog_arrays,
    make_catalog,
    match_sku,
    product_facts,
    shipping_for_region,
    sku_stock,
)
from sim.catalog_facts import is_zh, split_langs
from sim.types import ATTRIBUTES, CATEGORIES, SPLITS, RoomSnapshot

SEEDS = range(40)


@pytest.fixture(scope="module")
def catalogs():
    return {s: [make_catalog(s, seed) for seed in SEEDS] for s in SPLITS}


def _products(catalogs):
    return [p for cs in catalogs.values() for c in cs for p in c.products]


def test_same_arguments_same_catalog_and_seeds_differ():
    a, b = make_catalog("train", 7), make_catalog("train", 7)
    assert a == b
    assert make_catalog("train", 8) != a
    assert make_catalog("dev", 7) != a
    small = make_catalog("train", 7, n_products=3)
    assert len(small.products) == 3 and small.catalog_id != a.catalog_id
    assert small == make_catalog("train", 7, n_products=3)


def test_bad_arguments():
    with pytest.raises(ValueError):
        make_catalog("val", 0)
    with pytest.raises(ValueError):
        make_catalog("train", -1)


def test_brand_pools_are_disjoint_across_splits():
    pools = {s: set(itertools.chain(*catalog_banks.BRANDS[s].values())) for s in SPLITS}
    for a, b in itertools.combinations(SPLITS, 2):
        assert not pools[a] & pools[b], (a, b)


def test_splits_never_share_brands_skus_or_catalogs(catalogs):
    def ids(split, attr):
        cs = catalogs[split]
        if attr == "catalog_id":
            return {c.catalog_id for c in cs}
        return {getattr(p, attr) for c in cs for p in c.products}

    for attr in ("brand", "sku_id", "catalog_id"):
        for a, b in itertools.combinations(SPLITS, 2):
            assert not ids(a, attr) & ids(b, attr), (attr, a, b)
    all_skus = [p.sku_id for p in _products(catalogs)]
    assert len(all_skus) == len(set(all_skus))
    for split in SPLITS:
        assert {c.split for c in catalogs[split]} == {split}
        for c in catalogs[split]:
            assert {p.brand for p in c.products} <= set(
                itertools.chain(*catalog_banks.BRANDS[split].values())
            )


def test_every_category_appears_with_its_facts(catalogs):
    products = _products(catalogs)
    assert {p.category for p in products} == set(CATEGORIES)
    for p in products:
        a = p.attributes
        # Each category attribute has an attributes key containing its name.
        for attr in CATEGORY_ATTRIBUTES[p.category]:
            assert attr in ATTRIBUTES
            if attr not in ("price", "stock", "shipping", "promotion"):
                assert any(attr in k for k in a), (p.category, attr)
        if p.category == "apparel":
            assert set(a["size_chart"]) == {"S", "M", "L", "XL"}
            for row in a["size_chart"].values():
                assert "length_cm" in row and ({"chest_cm", "waist_cm"} & set(row))
            assert "%" in a["material"]["zh"] and "%" in a["material"]["en"]
            assert all(s.split()[-1] in a["size_chart"] for s in p.skus)
        elif p.category == "beauty":
            assert a["ingredients"] and a["skin_types"] and a["volume_ml"] > 0
            assert a["shelf_life_months"] in (24, 36)
        elif p.category == "food":
            assert a["net_weight_g"] > 0 and a["shelf_life_days"] > 0
            assert isinstance(a["allergens"], list) and a["origin"]["zh"]
            assert p.return_days == (0 if a["fresh"] else 7)
        elif p.category == "electronics":
            assert a["specs"] and a["warranty_months"] >= 12
        else:
            assert "×" in a["specs"]["dimensions_cm"] and a["material"] and a["care"]
    assert any(p.return_days == 0 for p in products)
    assert sum(p.return_days == 7 for p in products) > 0.7 * len(products)


def test_prices_coupons_stock_and_text(catalogs):
    for p in _products(catalogs):
        assert 0 < p.live_price < p.price
        assert p.stock > 0 and p.skus and len(p.skus) == len(p.attributes["skus_en"])
        for c in p.coupons:
            assert 0 < c.off < c.threshold
        assert p.brand in p.title["zh"] and p.brand in p.title["en"]
        assert is_zh(p.title["zh"]) and not is_zh(p.title["en"])
        points, claims = split_langs(p.selling_points), split_langs(p.forbidden_claims)
        assert len(points["zh"]) == len(points["en"]) >= 2
        assert len(claims["zh"]) == len(claims["en"]) >= 4
        assert "全网最低" in claims["zh"] and "the best in the world" in claims["en"]
        assert p.ships_in_days >= 1 and p.free_shipping_over >= 0
    beauty = [p for p in _products(catalogs) if p.category == "beauty"]
    assert all("治疗痘痘" in p.forbidden_claims for p in beauty)


def test_flash_sales_and_shop(catalogs):
    n_sales = 0
    for c in itertools.chain(*catalogs.values()):
        links = [p.link_id for p in c.products]
        assert links == list(range(1, len(links) + 1))
        assert 6 <= len(links) <= 16
        for sale in c.flash_sales:
            n_sales += 1
            assert 0 <= sale.start < sale.end <= STREAM_SECONDS
            assert 0 < sale.price < c.product(sale.link_id).live_price
        assert len({s.link_id for s in c.flash_sales}) == len(c.flash_sales)
        for coupon in c.shop_coupons:
            assert 0 < coupon.off < coupon.threshold
        policy = c.shipping_policy
        remote = {r["region"] for r in policy["remote_regions"]}
        assert {"新疆", "西藏"} <= remote
        assert policy["return_days"] == 7 and policy["refund_days"] >= 1
        json.dumps(policy)
    assert n_sales > len(SEEDS)


def test_catalog_arrays():
    c = make_catalog("dev", 3)
    arr = catalog_arrays(c)
    n = len(c.products)
    ints = ("link_id", "category", "stock", "has_coupon")
    floats = ("price", "live_price", "flash_start", "flash_end", "flash_price")
    assert set(arr) == set(ints + floats)
    for k in ints:
        assert arr[k].shape == (n,) and arr[k].dtype == np.int32
    for k in floats:
        assert arr[k].shape == (n,) and arr[k].dtype == np.float32
    assert (arr["live_price"] < arr["price"]).all()
    np.testing.assert_allclose(arr["price"], [p.price for p in c.products], rtol=1e-6)
    sale_links = {s.link_id for s in c.flash_sales}
    for i, p in enumerate(c.products):
        assert CATEGORIES[arr["category"][i]] == p.category
        if p.link_id in sale_links:
            assert arr["flash_price"][i] < arr["live_price"][i]
            assert arr["flash_start"][i] < arr["flash_end"][i]
        else:
            assert np.isinf(arr["flash_start"][i]) and arr["flash_price"][i] == -1


def _snapshot(catalog, clock, active):
    return RoomSnapshot(
        room_id="r0",
        catalog=catalog,
        clock=clock,
        featured_link=1,
        stock={p.link_id: p.stock for p in catalog.products},
        active_flash=active,
        harness_version="taolive/1.0",
    )


def test_product_facts_json_and_flash_price():
    c = next(c for s in range(20) if (c := make_catalog("test", s)).flash_sales)
    sale = c.flash_sales[0]
    p = c.product(sale.link_id)
    before = product_facts(p, _snapshot(c, sale.start - 1, {}))
    during = product_facts(p, _snapshot(c, sale.start + 60, {p.link_id: sale.price}))
    assert before["price_now"] == p.live_price and "flash_sale" not in before
    assert during["price_now"] == sale.price
    left = (sale.end - sale.start - 60) / 60
    assert during["flash_sale"]["ends_in_minutes"] in (int(left), int(left) + 1)
    for facts in (before, during, product_facts(p, None)):
        text = json.dumps(facts, ensure_ascii=False)
        assert json.loads(text) == facts
        assert facts["title"] == dict(p.title) and facts["link_id"] == p.link_id
        assert "forbidden_claims" not in facts and "stock" not in facts
    keys = {"size_chart", "ingredients", "allergens", "specs", "skin_types"}
    seen = {k for p in c.products for k in product_facts(p) if k in keys}
    assert seen  # category attributes are merged in


def test_sku_stock_and_matching(catalogs):
    for p in _products(catalogs)[:200]:
        split = sku_stock(p, p.stock)
        assert sum(split.values()) == p.stock and set(split) == set(p.skus)
        assert sku_stock(p, 7) == sku_stock(p, 7) and sum(sku_stock(p, 0).values()) == 0
        for zh, en in zip(p.skus, p.attributes["skus_en"]):
            assert match_sku(p, zh) == (zh,)
            assert match_sku(p, en.lower()) == (zh,)
        assert match_sku(p, "nothing like it") == ()
    apparel = next(p for p in _products(catalogs) if p.category == "apparel")
    size_m = match_sku(apparel, "M")
    assert size_m and all(s.endswith(" M") for s in size_m)
    zh_colour, size = apparel.skus[0].split()
    assert match_sku(apparel, f"{zh_colour}{size}") == (apparel.skus[0],)


def test_shipping_for_region():
    policy = make_catalog("train", 1).shipping_policy
    remote = shipping_for_region(policy, "新疆")
    assert remote["ships_to_region"] and remote["extra_days"] >= 2
    assert remote["free_shipping_applies"] is False
    assert shipping_for_region(policy, "tibet")["extra_fee"] > 0
    assert shipping_for_region(policy, "overseas") == {
        "region": "overseas",
        "ships_to_region": False,
    }
    plain = shipping_for_region(policy, "上海")
    assert plain["ships_to_region"] and "extra_days" not in plain
    assert shipping_for_region(policy, None)["dispatch_days"] == policy["dispatch_days"]
