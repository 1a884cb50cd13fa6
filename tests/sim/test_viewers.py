"""Viewer messages: codes, rendering, validity, determinism and the sampled mix."""

import re

import jax
import numpy as np
import pytest

from sim.catalog import CATEGORY_ATTRIBUTES, make_catalog
from sim.types import ATTRIBUTES, CATEGORIES, INTENTS, LANGS, needed_roles
from sim.viewer_banks import EMOJI, nickname
from sim.viewers import (
    DEFAULT_INTENT_MIX,
    DEFAULT_LANG_MIX,
    MESSAGE_FIELDS,
    bank_sizes,
    code_tables,
    mentioned_links,
    mix_report,
    mix_vector,
    render_message,
    sample_code,
    sample_code_jax,
    sample_codes,
)

CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(scope="module")
def catalogs():
    return [make_catalog("train", s) for s in range(6)] + [make_catalog("test", 0)]


@pytest.fixture(scope="module")
def rendered(catalogs):
    """About 6,000 (catalog, code, message) triples under the default mix."""
    out = []
    for i, c in enumerate(catalogs):
        for code in sample_codes(np.random.default_rng(i), c, 900):
            out.append((c, code, render_message(code, c)))
    return out


def test_default_mixes_are_distributions():
    assert set(DEFAULT_INTENT_MIX) == set(INTENTS)
    assert set(DEFAULT_LANG_MIX) == set(LANGS)
    assert abs(sum(DEFAULT_INTENT_MIX.values()) - 1) < 1e-9
    assert max(DEFAULT_INTENT_MIX, key=DEFAULT_INTENT_MIX.get) == "product_question"
    with pytest.raises(ValueError):
        mix_vector({"gossip": 1.0}, INTENTS)


def test_every_intent_and_language_renders(catalogs):
    c = catalogs[0]
    p = c.products[0]
    attr = ATTRIBUTES.index(CATEGORY_ATTRIBUTES[p.category][0])
    for i, intent in enumerate(INTENTS):
        for lang in range(len(LANGS)):
            for variant in range(20):
                has_attr = intent in ("product_question", "multi_intent")
                link = 0 if intent in ("chit_chat", "after_sales") else p.link_id
                code = [i, link, attr if has_attr else -1, lang, variant, 5]
                msg = render_message(code, c)
                assert msg.intent == intent and msg.lang == LANGS[lang]
                assert msg.text.strip() and len(msg.text) <= 300
                assert bool(CJK.search(msg.text)) == (LANGS[lang] == "zh"), msg.text
                assert msg.viewer == nickname(5)


def test_codes_are_valid_for_the_catalog(rendered):
    for c, code, msg in rendered:
        assert code.shape == (len(MESSAGE_FIELDS),) and code.dtype == np.int32
        intent = INTENTS[code[0]]
        if code[1]:
            category = c.product(int(code[1])).category
            assert msg.link_id == code[1]
        else:
            assert msg.link_id is None
            assert intent not in ("product_question", "multi_intent", "forbidden_claim")
        if intent in ("product_question", "multi_intent"):
            assert msg.attribute in CATEGORY_ATTRIBUTES[category]
        else:
            assert code[2] == -1 and msg.attribute is None
        if intent == "multi_intent":
            assert msg.second_intent in (
                "product_question",
                "after_sales",
                "purchase_intent",
            )
            if msg.second_intent == "product_question":
                assert msg.second_attribute in CATEGORY_ATTRIBUTES[category]
                assert msg.second_attribute != msg.attribute
        else:
            assert msg.second_intent is None and msg.second_attribute is None
        assert needed_roles(msg) or intent in ("chit_chat", "injection")


def test_text_names_the_link_and_the_slots(rendered):
    for _, _, msg in rendered:
        links = mentioned_links(msg.text)
        if msg.link_id is not None:
            assert msg.link_id in links, msg.text
        else:
            assert links == [], msg.text
        if msg.sku:
            assert msg.sku in msg.text
        if msg.region:
            assert msg.region in msg.text
        assert bool(CJK.search(msg.text)) == (msg.lang == "zh"), msg.text
    assert any(m.sku for *_, m in rendered) and any(m.region for *_, m in rendered)


def test_mentioned_links_forms():
    assert mentioned_links("3号链接多少钱") == [3]
    assert mentioned_links("链接12还有吗") == [12]
    assert mentioned_links("is link 2 in size M?") == [2]
    assert mentioned_links("#4 and item 5 pls") == [4, 5]
    assert mentioned_links("满199减20") == []


def test_rendering_is_deterministic_and_varied(catalogs, rendered):
    for c, code, msg in rendered[::10]:
        assert render_message(code, c) == msg
        assert render_message(tuple(int(x) for x in code), c) == msg
    base = [0, 1, ATTRIBUTES.index("price"), 0]
    texts = {render_message([*base, v, 0], catalogs[0]).text for v in range(200)}
    assert len(texts) > 60


def test_noise_typos_emoji_and_filler(rendered):
    texts = [m.text for *_, m in rendered]
    with_emoji = np.mean([any(e in t for e in EMOJI) for t in texts])
    assert 0.15 < with_emoji < 0.35
    zh_filler = np.mean([t.startswith(("主播", "家人们", "宝宝们")) for t in texts])
    assert zh_filler > 0.02
    zh_typos = ("神马", "啥", "木有", "嘛", "咋", "多小", "尺马", "包油", "优会")
    assert any(any(x in t for x in zh_typos) for t in texts)


def test_invalid_codes_raise(catalogs):
    c = catalogs[0]
    wrong = next(
        a for a in ATTRIBUTES if a not in CATEGORY_ATTRIBUTES[c.products[0].category]
    )
    with pytest.raises(ValueError):
        render_message([0, 1, ATTRIBUTES.index(wrong), 0, 1, 1], c)
    with pytest.raises(ValueError):
        render_message([0, 0, 0, 0, 1, 1], c)  # a product question needs a link
    with pytest.raises(ValueError):
        render_message([2, 99, -1, 0, 1, 1], c)  # no such link


def test_measured_mix_matches_configuration(catalogs):
    rng = np.random.default_rng(123)
    c = catalogs[1]
    codes = np.stack([sample_code(rng, c) for _ in range(10_000)])
    report = mix_report(codes)
    assert report["n"] == 10_000
    for intent, share in DEFAULT_INTENT_MIX.items():
        assert abs(report["intent"][intent] - share) < 0.02, intent
    for lang, share in DEFAULT_LANG_MIX.items():
        assert abs(report["lang"][lang] - share) < 0.02, lang
    assert abs(sum(report["attribute"].values()) - 1) < 1e-3
    custom = {"injection": 0.5, "chit_chat": 0.5}
    codes = sample_codes(rng, c, 4000, intent_mix=custom, lang_mix={"en": 1.0})
    report = mix_report(codes)
    assert report["intent"]["product_question"] == 0 and report["lang"]["en"] == 1
    assert abs(report["intent"]["injection"] - 0.5) < 0.03


def test_code_tables_and_jax_sampler(catalogs):
    c = catalogs[2]
    t = code_tables(c)
    assert t["attr_valid"].shape == (len(CATEGORIES), len(ATTRIBUTES))
    for ci, cat in enumerate(CATEGORIES):
        valid = {ATTRIBUTES[a] for a in np.flatnonzero(t["attr_valid"][ci])}
        assert valid == set(CATEGORY_ATTRIBUTES[cat])
        assert np.isneginf(t["attr_logits"][ci][~t["attr_valid"][ci]]).all()
    assert t["link_category"].shape == (len(c.products),) and int(t["n_links"]) == len(
        c.products
    )
    intent_p = mix_vector(DEFAULT_INTENT_MIX, INTENTS)
    lang_p = mix_vector(DEFAULT_LANG_MIX, LANGS)
    sample = jax.jit(jax.vmap(sample_code_jax, in_axes=(0, None, None, None)))
    keys = jax.random.split(jax.random.key(0), 4000)
    codes = np.asarray(sample(keys, t, intent_p, lang_p))
    assert codes.shape == (4000, 6) and codes.dtype == np.int32
    report = mix_report(codes)
    for intent, share in DEFAULT_INTENT_MIX.items():
        assert abs(report["intent"][intent] - share) < 0.03, intent
    for code in codes[:500]:
        render_message(code, c)  # valid codes render without error


def test_bank_sizes():
    sizes = bank_sizes()
    assert set(sizes) == set(INTENTS)
    for intent, per_lang in sizes.items():
        assert set(per_lang) == set(LANGS)
        assert min(per_lang.values()) >= 5, intent
