"""All domains of generated apps, and the checks their data must pass.

``DOMAINS`` joins the service bank (:mod:`experiments.world.apps.bank_services`)
and the shop bank (:mod:`experiments.world.apps.bank_shops`); ``BY_KEY`` maps a
domain's key to it. :func:`check_domains` lists what is wrong with a set of
domains (an empty list when nothing is): the app generator relies on every rule
it checks (keys it can put in JSON, English that is ASCII, Chinese that is
Chinese, ranges it can draw from, no digit a judge would count as a number).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from experiments.world.apps import bank_services, bank_shops
from experiments.world.apps.domain import Attr, Domain, Policy

DOMAINS: tuple[Domain, ...] = bank_services.DOMAINS + bank_shops.DOMAINS
BY_KEY: dict[str, Domain] = {d.key: d for d in DOMAINS}

N_ATTRS = (4, 6)
N_POLICIES = (2, 4)
MIN_VALUES = 3
MIN_GREETS = 2
MAX_NUMBER = 99999

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")  # any Unicode digit, full-width ones included
# Words of the live-stream target domain, which the base world must not show.
_BANNED_EN = re.compile(
    r"\b(links?|live[sd]?|livestream\w*|streams?|streaming|shel(?:f|ves)|carts?"
    r"|coupons?|promotions?|hosts?|rooms?|danmaku|avatars?)\b",
    re.IGNORECASE,
)
_BANNED_ZH = (
    "直播",
    "链接",
    "宝贝",
    "小黄车",
    "主播",
    "弹幕",
    "优惠券",
    "秒杀",
    "领券",
)


def _en_problems(where: str, s: str, *, empty_ok: bool = False) -> list[str]:
    if not s:
        return [] if empty_ok else [f"{where}: empty"]
    out = []
    if not s.isascii():
        out.append(f"{where}: English text is not ASCII: {s!r}")
    if _DIGIT.search(s):
        out.append(f"{where}: digit in text: {s!r}")
    if s != s.strip() or "  " in s:
        out.append(f"{where}: stray spaces: {s!r}")
    m = _BANNED_EN.search(s)
    if m:
        out.append(f"{where}: live-stream word {m.group(0)!r}: {s!r}")
    return out


def _zh_problems(where: str, s: str, *, unit: bool = False) -> list[str]:
    if not s:
        return [] if unit else [f"{where}: empty"]
    out = []
    if not unit and not _CJK.search(s):
        out.append(f"{where}: Chinese text has no CJK characters: {s!r}")
    if _LETTER.search(s):
        out.append(f"{where}: ASCII letters in Chinese text: {s!r}")
    if _DIGIT.search(s):
        out.append(f"{where}: digit in text: {s!r}")
    if any(c.isspace() for c in s):
        out.append(f"{where}: space in Chinese text: {s!r}")
    out += [f"{where}: live-stream word {w!r}: {s!r}" for w in _BANNED_ZH if w in s]
    return out


def _range_problems(where: str, lo: int, hi: int) -> list[str]:
    out = []
    if not (isinstance(lo, int) and isinstance(hi, int)):
        return [f"{where}: lo/hi are not integers: {lo!r}, {hi!r}"]
    if lo >= hi:
        out.append(f"{where}: lo {lo} >= hi {hi}")
    if lo < 0:
        out.append(f"{where}: lo {lo} < 0")
    if hi > MAX_NUMBER:
        out.append(f"{where}: hi {hi} > {MAX_NUMBER}")
    return out


def _attr_problems(where: str, a: Attr) -> list[str]:
    out = _en_problems(f"{where}.en", a.en) + _zh_problems(f"{where}.zh", a.zh)
    if a.numeric:
        out += _range_problems(where, a.lo, a.hi)
        out += _en_problems(f"{where}.unit_en", a.unit_en, empty_ok=True)
        out += _zh_problems(f"{where}.unit_zh", a.unit_zh, unit=True)
        return out
    if len(a.values) < MIN_VALUES:
        out.append(f"{where}: {len(a.values)} values, want >= {MIN_VALUES}")
    if any(len(v) != 2 for v in a.values):
        return out + [f"{where}: a value is not an (en, zh) pair"]
    ens = [e.lower() for e, _ in a.values]
    zhs = [z for _, z in a.values]
    if len(set(ens)) != len(ens) or len(set(zhs)) != len(zhs):
        out.append(f"{where}: repeated values")
    for i, (e, z) in enumerate(a.values):
        out += _en_problems(f"{where}.values[{i}].en", e)
        out += _zh_problems(f"{where}.values[{i}].zh", z)
    return out


def _policy_problems(where: str, p: Policy) -> list[str]:
    out = _en_problems(f"{where}.en", p.en) + _zh_problems(f"{where}.zh", p.zh)
    out += _en_problems(f"{where}.ask_en", p.ask_en)
    out += _zh_problems(f"{where}.ask_zh", p.ask_zh)
    out += _range_problems(where, p.lo, p.hi)
    out += _en_problems(f"{where}.unit_en", p.unit_en, empty_ok=True)
    out += _zh_problems(f"{where}.unit_zh", p.unit_zh, unit=True)
    return out


def _distinct(where: str, what: str, names: list[str]) -> list[str]:
    seen, out = set(), []
    for n in names:
        if n in seen:
            out.append(f"{where}: duplicate {what} {n!r}")
        seen.add(n)
    return out


def _domain_problems(d: Domain) -> list[str]:
    w = f"domain {d.key!r}"
    out = [] if _KEY.match(d.key) else [f"{w}: key is not snake_case"]
    for field in ("en", "entity_en", "id_en", "action_en"):
        out += _en_problems(f"{w}.{field}", getattr(d, field))
    for field in ("zh", "entity_zh", "id_zh", "action_zh"):
        out += _zh_problems(f"{w}.{field}", getattr(d, field))

    if not N_ATTRS[0] <= len(d.attrs) <= N_ATTRS[1]:
        out.append(f"{w}: {len(d.attrs)} attrs, want {N_ATTRS[0]}-{N_ATTRS[1]}")
    if d.attrs and (
        all(a.numeric for a in d.attrs) or not any(a.numeric for a in d.attrs)
    ):
        out.append(f"{w}: attrs should mix numeric and text fields")
    for a in d.attrs:
        out += _attr_problems(f"{w}.attr {a.key!r}", a)
    out += _attr_problems(f"{w}.stock", d.stock)
    if not d.stock.numeric:
        out.append(f"{w}.stock: not numeric")
    elif d.stock.lo != 0:
        out.append(f"{w}.stock: lo {d.stock.lo} != 0 (none left must be possible)")
    out += _attr_problems(f"{w}.price", d.price)
    if not d.price.numeric:
        out.append(f"{w}.price: not numeric")
    if (d.price.unit_en, d.price.unit_zh) != ("yuan", "元"):
        out.append(f"{w}.price: unit is not yuan/元")

    if not N_POLICIES[0] <= len(d.policies) <= N_POLICIES[1]:
        n = len(d.policies)
        out.append(f"{w}: {n} policies, want {N_POLICIES[0]}-{N_POLICIES[1]}")
    for p in d.policies:
        out += _policy_problems(f"{w}.policy {p.key!r}", p)

    fields = [*d.attrs, d.stock, d.price]
    keys = [a.key for a in fields] + [p.key for p in d.policies]
    for k in keys:
        if not _KEY.match(k):
            out.append(f"{w}: field key {k!r} is not snake_case")
        if k.endswith("_zh"):
            out.append(f"{w}: field key {k!r} ends with '_zh'")
    out += _distinct(w, "field key", keys)
    out += _distinct(w, "field name", [a.en.lower() for a in fields])
    out += _distinct(w, "field name", [a.zh for a in fields])
    out += _distinct(w, "policy topic", [p.en.lower() for p in d.policies])
    out += _distinct(w, "policy topic", [p.zh for p in d.policies])

    for lang, greets in (("en", d.greet_en), ("zh", d.greet_zh)):
        if len(greets) < MIN_GREETS:
            out.append(f"{w}: {len(greets)} greet_{lang} lines, want >= {MIN_GREETS}")
        out += _distinct(w, f"greet_{lang} line", list(greets))
        for i, g in enumerate(greets):
            check = _en_problems if lang == "en" else _zh_problems
            out += check(f"{w}.greet_{lang}[{i}]", g)
    return out


def check_domains(domains: Iterable[Domain]) -> list[str]:
    """What is wrong with ``domains`` (an empty list when nothing is)."""
    domains = list(domains)
    out = _distinct("domains", "key", [d.key for d in domains])
    for d in domains:
        out += _domain_problems(d)
    return out
