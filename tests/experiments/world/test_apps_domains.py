"""The domain banks of generated apps pass their checks, and the checks can fail."""

import dataclasses

import pytest

from experiments.world.apps import bank_services, bank_shops
from experiments.world.apps.domain import Attr, Domain, Policy
from experiments.world.apps.domains import BY_KEY, DOMAINS, check_domains


def test_banks_pass_their_checks():
    assert check_domains(DOMAINS) == []
    assert len(DOMAINS) >= 30
    assert len(bank_services.DOMAINS) >= 16 and len(bank_shops.DOMAINS) >= 16
    assert len(BY_KEY) == len(DOMAINS)
    assert all(BY_KEY[d.key] is d for d in DOMAINS)


BASE = BY_KEY["bookshop"]


def _num(d: Domain) -> Attr:
    return next(a for a in d.attrs if a.numeric)


def _text(d: Domain) -> Attr:
    return next(a for a in d.attrs if not a.numeric)


def _with_attr(d: Domain, old: Attr, **changes) -> Domain:
    new = dataclasses.replace(old, **changes)
    return dataclasses.replace(d, attrs=tuple(new if a is old else a for a in d.attrs))


def _with_policy(d: Domain, **changes) -> Domain:
    first = dataclasses.replace(d.policies[0], **changes)
    return dataclasses.replace(d, policies=(first, *d.policies[1:]))


def _with_value(d: Domain, pair: tuple[str, str]) -> Domain:
    t = _text(d)
    return _with_attr(d, t, values=(pair, *t.values[1:]))


def _pol(key: str) -> Policy:
    return Policy(key, key, "规则", "Why?", "为什么？", 1, 5)


d = BASE
BROKEN = {  # name -> (broken domain, a word the problem must mention)
    "digit in a text value": (_with_value(d, ("size 4", "四号")), "digit"),
    "digit in a zh text value": (_with_value(d, ("mystery", "推理4")), "digit"),
    "full-width digit": (_with_value(d, ("mystery", "推理４")), "digit"),
    "digit in a greeting": (
        dataclasses.replace(d, greet_en=("hi", "open at 9?")),
        "digit",
    ),
    "digit in a question": (_with_policy(d, ask_zh="退货期限是7天吗"), "digit"),
    "English letters in a zh field": (
        dataclasses.replace(d, entity_zh="书book"),
        "ASCII letters",
    ),
    "zh field without CJK": (dataclasses.replace(d, zh="？？"), "CJK"),
    "English letters in a zh value": (
        _with_value(d, ("mystery", "推理ok")),
        "ASCII letters",
    ),
    "non-ASCII en field": (dataclasses.replace(d, en="bookshop café"), "ASCII"),
    "Chinese in an en field": (_with_value(d, ("推理", "推理")), "ASCII"),
    "duplicate field key": (
        dataclasses.replace(d, stock=dataclasses.replace(d.stock, key=_num(d).key)),
        "duplicate field key",
    ),
    "attr and policy share a key": (
        _with_policy(d, key=_num(d).key),
        "duplicate field key",
    ),
    "duplicate field name": (
        _with_attr(d, _text(d), en=_num(d).en),
        "duplicate field name",
    ),
    "key not snake_case": (_with_attr(d, _num(d), key="Pages"), "snake_case"),
    "key ends with _zh": (_with_attr(d, _num(d), key="pages_zh"), "_zh"),
    "lo >= hi": (_with_attr(d, _num(d), lo=9, hi=9), "lo 9 >= hi 9"),
    "lo < 0": (_with_attr(d, _num(d), lo=-1), "< 0"),
    "hi too big": (_with_attr(d, _num(d), hi=100000), "> 99999"),
    "policy lo >= hi": (_with_policy(d, lo=30, hi=7), ">= hi"),
    "too few values": (_with_attr(d, _text(d), values=_text(d).values[:2]), "values"),
    "repeated values": (
        _with_attr(d, _text(d), values=(_text(d).values[0],) * 3),
        "repeated",
    ),
    "too few attrs": (dataclasses.replace(d, attrs=d.attrs[:3]), "attrs"),
    "too many attrs": (
        dataclasses.replace(
            d, attrs=d.attrs + (Attr("a", "a", "甲", 0, 1), Attr("b", "b", "乙", 0, 1))
        ),
        "attrs",
    ),
    "attrs all numeric": (
        dataclasses.replace(
            d,
            attrs=tuple(a for a in d.attrs if a.numeric)
            + tuple(
                Attr(k, k, z, 0, 1)
                for k, z in (("aa", "甲"), ("bb", "乙"), ("cc", "丙"))
            ),
        ),
        "mix",
    ),
    "price not yuan": (
        dataclasses.replace(d, price=dataclasses.replace(d.price, unit_en="dollars")),
        "yuan",
    ),
    "price unit zh": (
        dataclasses.replace(d, price=dataclasses.replace(d.price, unit_zh="块")),
        "yuan",
    ),
    "stock is text": (
        dataclasses.replace(
            d, stock=dataclasses.replace(d.stock, values=_text(d).values)
        ),
        "stock",
    ),
    "stock lo not 0": (
        dataclasses.replace(d, stock=dataclasses.replace(d.stock, lo=1)),
        "stock",
    ),
    "too few policies": (dataclasses.replace(d, policies=d.policies[:1]), "policies"),
    "too many policies": (
        dataclasses.replace(d, policies=tuple(_pol(f"p{c}") for c in "abcde")),
        "policies",
    ),
    "one greeting": (dataclasses.replace(d, greet_zh=d.greet_zh[:1]), "greet_zh"),
    "repeated greeting": (
        dataclasses.replace(d, greet_en=(d.greet_en[0],) * 2),
        "greet_en",
    ),
    "live-stream word en": (
        dataclasses.replace(d, greet_en=("hi, nice room", "hello")),
        "live-stream",
    ),
    "live-stream word zh": (
        dataclasses.replace(d, greet_zh=("你好", "直播间好热闹")),
        "live-stream",
    ),
    "empty zh field": (dataclasses.replace(d, action_zh=""), "empty"),
    "bad domain key": (dataclasses.replace(d, key="Book Shop"), "snake_case"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_check_domains_catches(name):
    assert check_domains([BASE]) == []
    broken, word = BROKEN[name]
    problems = check_domains([broken])
    assert problems, name
    assert any(word in p for p in problems), (name, problems)


def test_check_domains_catches_duplicate_domain_keys():
    other = dataclasses.replace(DOMAINS[1], key=BASE.key)
    problems = check_domains([BASE, other])
    assert any("duplicate key" in p for p in problems), problems
