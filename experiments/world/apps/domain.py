"""What a generated app is about: a domain's records, questions and policies.

A :class:`Domain` is plain data in two languages (English and Chinese, the
languages taolive's viewers write). The app generator
(:mod:`experiments.world.apps.app`) draws a fresh harness around it per
episode: tool, parameter and skill names, descriptions, rules, hooks and the
prompt format are drawn there, never here. A domain only says what its records
hold and how a user asks about them, so nothing in it is an identifier a model
could memorise as a tool or skill name.

Banks of domains: :mod:`experiments.world.apps.bank_services`,
:mod:`experiments.world.apps.bank_shops` (``DOMAINS`` joins them).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Attr:
    """One field of a record that a user can ask about.

    Attributes:
      key: the JSON key in tool results (ASCII snake_case, e.g. "pages").
      en, zh: how a user names it ("number of pages", "页数").
      lo, hi: integer values are drawn in ``[lo, hi]`` (both inclusive);
        ignored when ``values`` is set.
      unit_en, unit_zh: written after the number in a reply ("pages", "页");
        may be empty.
      values: for a text field, (en, zh) pairs the value is drawn from (the
        result holds the pair's English text under ``key`` and the Chinese under
        ``key + "_zh"``); empty for a numeric field.
    """

    key: str
    en: str
    zh: str
    lo: int = 0
    hi: int = 0
    unit_en: str = ""
    unit_zh: str = ""
    values: tuple[tuple[str, str], ...] = ()

    @property
    def numeric(self) -> bool:
        return not self.values


@dataclasses.dataclass(frozen=True)
class Policy:
    """A shop- or service-wide rule a user can ask about, with one number.

    Attributes:
      key: the JSON key of the number ("return_days").
      en, zh: the topic as a user names it ("returns", "退货").
      ask_en, ask_zh: a question about it ("Can I return it later?",
        "可以退货吗").
      lo, hi, unit_en, unit_zh: the number, as in :class:`Attr`.
    """

    key: str
    en: str
    zh: str
    ask_en: str
    ask_zh: str
    lo: int
    hi: int
    unit_en: str = ""
    unit_zh: str = ""


@dataclasses.dataclass(frozen=True)
class Domain:
    """A kind of app: what its records are and what users ask.

    Attributes:
      key: a short ASCII name ("bookshop"); never shown as an identifier.
      en, zh: the business as a user names it ("bookshop", "书店").
      entity_en, entity_zh: one record ("book", "书"); users refer to record
        ``n`` as "book 7" / "7号书".
      id_en, id_zh: what the record number is called ("book number", "书号").
      attrs: 4-6 fields of a record a user asks about (numeric and text).
      stock: the availability field (copies / seats / slots left), numeric.
      price: the price field, numeric, unit yuan / 元.
      action_en, action_zh: what a user wants to do with a record ("borrow",
        "借"); "I want to borrow book 7" / "我想借7号书".
      policies: 2-4 shop-wide rules.
      greet_en, greet_zh: small-talk lines a user sends here (2+ each).
    """

    key: str
    en: str
    zh: str
    entity_en: str
    entity_zh: str
    id_en: str
    id_zh: str
    attrs: tuple[Attr, ...]
    stock: Attr
    price: Attr
    action_en: str
    action_zh: str
    policies: tuple[Policy, ...]
    greet_en: tuple[str, ...]
    greet_zh: tuple[str, ...]
