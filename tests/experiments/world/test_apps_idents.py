"""Fresh app identifiers: disjoint from every known pool, valid, varied, seeded."""

import numpy as np
import pytest

from augment.names import NAME_RE, PARAM_RE, split_words
from experiments.world.apps import idents as I
from hat_jax.harness.signoff import TAG

N_TOOLS, N_OTHER = 100_000, 15_000  # 145,000 draws in all
SEEDS = {"tool": 0, "param": 1, "skill": 2, "tag": 3}


@pytest.fixture(scope="module")
def draws() -> dict[str, list[str]]:
    out = {}
    for kind, seed in SEEDS.items():
        rng = np.random.default_rng(seed)
        n = N_TOOLS if kind == "tool" else N_OTHER
        out[kind] = [I.DRAWERS[kind](rng) for _ in range(n)]
    return out


def test_forbidden_set_holds_the_known_pools():
    idents, words = I.forbidden_identifiers(), I.forbidden_words()
    taolive = ("get_product_info_by_link_id", "item_qa", "link_id", "query_item")
    taolive += ("check_stock", "promotion_push", "load_skill", "campaign_double12")
    others = ("#SunnyPicks", "#BoldDrop", "get_weather", "lookup_item", "order_no")
    others += ("get_live_room_stats", "payload", "fx_convert", "veggie_only")
    for name in taolive + others:
        assert I.norm(name) in idents, name
    for word in ("fetch", "product", "sku", "promo", "shop", "v2", "picks", "sunny"):
        assert word in words, word
    assert len(idents) > 500 and len(words) > 200


def test_lexicon_shares_no_word_with_the_pools():
    words = I.forbidden_words()
    heads = [h for hs in I.HASH_HEADS.values() for h in hs]
    assert not {*I.LEXICON, *heads} & words
    assert len(set(I.LEXICON)) == len(I.LEXICON)


def test_draws_are_disjoint_and_valid(draws):
    assert sum(map(len, draws.values())) >= 100_000
    idents, words = I.forbidden_identifiers(), I.forbidden_words()
    for kind, names in draws.items():
        for name in set(names):
            assert I.norm(name) not in idents, name
            assert not set(split_words(name.lstrip("#"))) & words, name
            if kind == "tag":
                continue
            assert (PARAM_RE if kind == "param" else NAME_RE).match(name), name
            assert len(name) <= I.MAX_LEN[kind], name


def test_tags_are_letters_only(draws):
    for tag in set(draws["tag"]):
        assert TAG.fullmatch(tag) and tag[1:].isascii() and tag[1:].isalpha(), tag
        assert not any(c.isdigit() for c in tag) and 4 <= len(tag) - 1 <= 14, tag


def test_variety(draws):
    assert len(set(draws["tool"])) >= 90_000  # 94,352 measured; issue asks 30,000
    for kind in ("param", "skill", "tag"):
        assert len(set(draws[kind])) >= 0.6 * N_OTHER, kind
    styles = {"_": 0, "-": 0, ".": 0}
    for name in draws["tool"][:5000]:
        for sep in styles:
            styles[sep] += sep in name
    assert min(styles.values()) > 200, styles
    assert any(n.isupper() for n in draws["tool"][:500])
    assert any(n[:1].isupper() and n.isalnum() for n in draws["tool"][:500])


def test_same_seed_same_names():
    for kind, draw in I.DRAWERS.items():
        a, b, c = (np.random.default_rng(s) for s in (7, 7, 8))
        first = [draw(a) for _ in range(300)]
        assert first == [draw(b) for _ in range(300)], kind
        assert first != [draw(c) for _ in range(300)], kind


def test_fresh_never_returns_a_taken_name():
    rng = np.random.default_rng(5)
    for kind in I.KINDS:
        taken = {"get_item", "LINK_ID", "#SunnyPicks"}
        for _ in range(300):
            before = {I.norm(t) for t in taken}
            name = I.fresh(rng, kind, taken)
            assert I.norm(name) not in before and name in taken, name
        assert len(taken) == 303


@pytest.mark.parametrize("kind,base", [("tool", "vorn_tally"), ("tag", "#Vorneli")])
def test_fresh_suffixes_after_repeated_clashes(monkeypatch, kind, base):
    monkeypatch.setitem(I.DRAWERS, kind, lambda rng: base)
    rng, taken = np.random.default_rng(0), {base}
    names = [I.fresh(rng, kind, taken) for _ in range(50)]
    assert len(set(names)) == 50 and all(n.startswith(base) for n in names)
    if kind == "tag":
        assert all(TAG.fullmatch(n) for n in names)
    else:
        assert all(NAME_RE.match(n) for n in names)


def test_fresh_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="unknown identifier kind"):
        I.fresh(np.random.default_rng(0), "hook", set())
