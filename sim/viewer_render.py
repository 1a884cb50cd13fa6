"""Rendering a coded viewer message (6 ints, see `sim.viewers`) into danmaku text.

The variant seed drives every choice: template, link wording, slots (SKU, region,
skin type, allergen, claim), the second part of a multi-intent message, typos,
filler and emoji. Same code and catalog -> same message.
"""

from __future__ import annotations

import re

import numpy as np

from sim import viewer_banks as VB
from sim.catalog import CATEGORY_ATTRIBUTES
from sim.types import ATTRIBUTES, INTENTS, LANGS, Catalog, Product, ViewerMessage

# Attribute weights within a product question (price, stock and size dominate).
ATTRIBUTE_WEIGHTS = {
    "price": 3.0, "stock": 2.0, "size": 2.0, "material": 1.0, "ingredients": 1.0,
    "skin_type": 1.0, "shelf_life": 1.0, "allergens": 1.0, "specs": 1.5,
    "warranty": 1.0, "shipping": 1.5, "promotion": 1.5,
}  # fmt: skip
TYPO_P, PREFIX_P, SUFFIX_P, EMOJI_P, CAPITAL_P = 0.25, 0.25, 0.2, 0.25, 0.3
_SLOT = re.compile(r"(\{\w+\})")
_PARTICLES = "呀呢吗嘛啊吧"
_LINK_PATTERNS = (
    re.compile(r"(?<![\d.])(\d+)\s*号"),
    re.compile(r"链接\s*#?\s*(\d+)"),
    re.compile(r"\b(?:link|item|no\.|number)\s*#?\s*(\d+)", re.IGNORECASE),
    re.compile(r"#\s*(\d+)"),
)


def mentioned_links(text: str) -> list[int]:
    """Link numbers a message names ("3号", "链接3", "link 3", "#3", ...), in order."""
    found = [
        (m.start(), int(m.group(1))) for p in _LINK_PATTERNS for m in p.finditer(text)
    ]
    return list(dict.fromkeys(n for _, n in sorted(found)))


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def _weighted(rng: np.random.Generator, items, weights):
    w = np.asarray(weights, dtype=np.float64)
    return items[int(rng.choice(len(items), p=w / w.sum()))]


class _Message:
    """Slot values shared by every part of one message (one link wording, one
    SKU, one region), and what the viewer named."""

    def __init__(self, rng, lang: str, link: int, product: Product | None):
        self.rng, self.lang, self.link, self.product = rng, lang, link, product
        self.bank = VB.TEMPLATES[lang]
        self.cache: dict[str, str] = {}
        self.named: dict[str, str] = {}

    def slot(self, name: str) -> str:
        if name not in self.cache:
            self.cache[name] = self._value(name)
        return self.cache[name]

    def _sku_index(self) -> int:
        if "_sku" not in self.cache:
            self.cache["_sku"] = str(int(self.rng.integers(len(self.product.skus))))
        return int(self.cache["_sku"])

    def _value(self, name: str) -> str:
        rng, lang, p = self.rng, self.lang, self.product
        if name == "link":
            return _pick(rng, self.bank["link_forms"]).format(n=self.link)
        if name in ("sku", "size"):
            i = self._sku_index()
            names = p.skus if lang == "zh" else p.attributes.get("skus_en", p.skus)
            value = names[i] if name == "sku" else p.skus[i].split()[-1]
            self.named.setdefault(name, value)
            return value
        if name == "region":
            value = _pick(rng, VB.REGIONS)[LANGS.index(lang)]
            self.named["region"] = value
            return value
        if name == "allergen":
            own = p.attributes.get("allergens", []) if p is not None else []
            if own and rng.random() < 0.6:
                return _pick(rng, own)[lang]
            return _pick(rng, self.bank["allergen"])
        if name == "skin":
            return _pick(rng, self.bank["skin"])
        if name == "q":
            claims = [c for c in p.forbidden_claims if c in VB.CLAIM_QUESTIONS]
            return VB.CLAIM_QUESTIONS[_pick(rng, claims)][lang]
        raise KeyError(f"unknown template slot {{{name}}}")

    def fill(self, template: str) -> list[tuple[str, bool]]:
        """Template -> pieces (text, is_literal); slots are never typo'd."""
        out = []
        for i, piece in enumerate(_SLOT.split(template)):
            if i % 2:
                out.append((self.slot(piece[1:-1]), False))
            elif piece:
                out.append((piece, True))
        return out


def _typo(rng, text: str, lang: str, table) -> str | None:
    """One typo in `text`, or None when none applies."""
    if lang == "zh":
        hits = [(a, b) for a, b in table if a in text]
    else:
        hits = [(a, b) for a, b in table if re.search(rf"\b{re.escape(a)}\b", text)]
    if hits and (lang == "zh" or rng.random() < 0.4):
        a, b = _pick(rng, hits)
        if lang == "zh":
            return text.replace(a, b, 1)
        return re.sub(rf"\b{re.escape(a)}\b", b, text, count=1)
    if lang == "zh":
        return None
    words = [m for m in re.finditer(r"[A-Za-z]{4,}", text)]
    if not words:
        return None
    m = _pick(rng, words)
    w, i = m.group(), int(rng.integers(1, len(m.group()) - 1))
    op = int(rng.integers(3))
    if op == 0:
        w = w[:i] + w[i + 1] + w[i] + w[i + 2 :]  # swap two letters
    elif op == 1:
        w = w[:i] + w[i + 1 :]  # drop one
    else:
        w = w[: i + 1] + w[i:]  # double one
    return text[: m.start()] + w + text[m.end() :]


def _with_typo(rng, pieces: list[tuple[str, bool]], lang: str) -> None:
    table = VB.TEMPLATES[lang]["typos"]
    literal = [i for i, (_, lit) in enumerate(pieces) if lit]
    for i in rng.permutation(literal):
        new = _typo(rng, pieces[i][0], lang, table)
        if new is not None:
            pieces[i] = (new, True)
            return


def _decorate(rng, text: str, lang: str, question: bool) -> str:
    """Punctuation, filler (suffixes only on questions) and emoji."""
    bank = VB.TEMPLATES[lang]
    if text and text[-1] in "?？" and (r := rng.random()) < 0.4:
        text = text[:-1] if r < 0.3 else text + text[-1]
    if rng.random() < PREFIX_P:
        text = _pick(rng, bank["prefix"]) + _pick(rng, bank["prefix_sep"]) + text
    if question and rng.random() < SUFFIX_P:
        suffix = _pick(rng, bank["suffix"])
        if not (suffix in _PARTICLES and text[-1:] in _PARTICLES):
            text += ("" if lang == "zh" else " ") + suffix
    if rng.random() < EMOJI_P:
        emoji = "".join(_pick(rng, VB.EMOJI) for _ in range(int(rng.integers(1, 4))))
        text += ("" if rng.random() < 0.5 else " ") + emoji
    if lang == "en" and rng.random() < CAPITAL_P:
        text = text[:1].upper() + text[1:]
    return text


def _second_attribute(rng, product: Product, first: str) -> str:
    options = [a for a in CATEGORY_ATTRIBUTES[product.category] if a != first]
    return _weighted(rng, options, [ATTRIBUTE_WEIGHTS[a] for a in options])


def render_message(code, catalog: Catalog) -> ViewerMessage:
    """The viewer message a code stands for (deterministic given code and catalog).

    Args:
      code: 6 ints (intent, link_id, attribute, lang, variant, viewer), see
        `sim.viewers.MESSAGE_FIELDS`.
      catalog: the room's catalog (link_id indexes its products).
    """
    intent_i, link, attr_i, lang_i, variant, viewer = (int(x) for x in code)
    intent, lang = INTENTS[intent_i], LANGS[lang_i]
    attribute = ATTRIBUTES[attr_i] if attr_i >= 0 else None
    product = catalog.product(link) if link else None
    if link and product is None:
        raise ValueError(f"link {link} is not in catalog {catalog.catalog_id}")
    needs_attr = intent in ("product_question", "multi_intent")
    if needs_attr and (product is None or attribute is None):
        raise ValueError(f"{intent} needs a link and an attribute: {tuple(code)}")
    if attribute and attribute not in CATEGORY_ATTRIBUTES[product.category]:
        raise ValueError(f"{attribute!r} does not apply to {product.category}")
    if intent == "forbidden_claim" and product is None:
        raise ValueError("forbidden_claim needs a link")
    seed = [variant, intent_i, link, attr_i + 1, lang_i, viewer]
    rng = np.random.default_rng([max(int(s), 0) for s in seed])
    msg = _Message(rng, lang, link, product)
    bank = msg.bank
    has = "link" if link else "none"
    second_intent = second_attribute = None
    if intent == "product_question":
        parts = [_pick(rng, bank["product_question"][attribute])]
    elif intent == "multi_intent":
        parts = [_pick(rng, bank["product_question"][attribute])]
        names, weights = zip(*VB.SECOND_INTENTS)
        second_intent = _weighted(rng, names, weights)
        if second_intent == "product_question":
            second_attribute = _second_attribute(rng, product, attribute)
            parts.append(_pick(rng, bank["product_question"][second_attribute]))
        elif second_intent == "after_sales":
            topic = _pick(rng, VB.MULTI_AFTER_SALES_TOPICS)
            parts.append(_pick(rng, bank["after_sales"][topic]))
        else:
            parts.append(_pick(rng, bank["purchase_intent"]["link"]))
    elif intent == "after_sales":
        topic = _pick(rng, VB.AFTER_SALES_TOPICS)
        parts = [_pick(rng, bank["after_sales"][topic])]
    elif intent in ("purchase_intent", "injection"):
        parts = [_pick(rng, bank[intent][has])]
    else:  # chit_chat, forbidden_claim
        parts = [_pick(rng, bank[intent])]
    pieces: list[tuple[str, bool]] = []
    for j, part in enumerate(parts):
        if j:
            last = pieces.pop()
            if text := last[0].rstrip("?？ "):
                pieces.append((text, last[1]))
            pieces.append((_pick(rng, bank["connectors"]), True))
        pieces += msg.fill(part)
    if rng.random() < TYPO_P:
        _with_typo(rng, pieces, lang)
    text = ""
    for piece, _ in pieces:  # keep "链接9" + "10件套" from reading as link 910
        sep = " " if text[-1:].isdigit() and piece[:1].isdigit() else ""
        text += sep + piece
    text = text.strip()
    text = _decorate(rng, text, lang, question=intent != "chit_chat")
    return ViewerMessage(
        text=text,
        intent=intent,
        lang=lang,
        viewer=VB.nickname(viewer),
        link_id=link or None,
        attribute=attribute,
        second_intent=second_intent,
        second_attribute=second_attribute,
        sku=msg.named.get("sku", msg.named.get("size")),
        region=msg.named.get("region"),
    )
