"""Viewers and their danmaku, as integer codes (for the rooms) and as text.

A message is coded as 6 ints, `MESSAGE_FIELDS`: intent (index into INTENTS),
link_id (0 when none), attribute (index into ATTRIBUTES, -1 when none), lang
(index into LANGS), a variant seed and a viewer id. The vectorized rooms carry
codes as int32 arrays and sample them under jit (`code_tables` +
`sample_code_jax`); datasets sample on the host (`sample_code(s)`); text is made
at the edge by `render_message`.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from sim import viewer_banks as VB
from sim.catalog import CATEGORY_ATTRIBUTES
from sim.types import ATTRIBUTES, CATEGORIES, INTENTS, LANGS, Catalog
from sim.viewer_render import ATTRIBUTE_WEIGHTS, mentioned_links, render_message

__all__ = [
    "ATTRIBUTE_WEIGHTS", "DEFAULT_INTENT_MIX", "DEFAULT_LANG_MIX", "INTENT_LINK_PROB",
    "MESSAGE_FIELDS", "N_VIEWERS", "bank_sizes", "code_tables", "mentioned_links",
    "mix_report", "mix_vector", "render_message", "sample_code", "sample_code_jax",
    "sample_codes",
]  # fmt: skip

MESSAGE_FIELDS = ("intent", "link_id", "attribute", "lang", "variant", "viewer")
# A plausible live-room mix: mostly product questions, then chit-chat, purchase and
# after-sales, a few multi-intent and adversarial messages.
DEFAULT_INTENT_MIX = {
    "product_question": 0.45,
    "chit_chat": 0.17,
    "purchase_intent": 0.12,
    "after_sales": 0.10,
    "multi_intent": 0.08,
    "injection": 0.04,
    "forbidden_claim": 0.04,
}
DEFAULT_LANG_MIX = {"zh": 0.7, "en": 0.3}
# How often a message of each intent names a link. Product questions, multi-intent
# and claim requests always do; purchase intent mostly ("怎么买" alone means the
# featured item); chit-chat and after-sales never; injections sometimes.
INTENT_LINK_PROB = {
    "product_question": 1.0,
    "chit_chat": 0.0,
    "purchase_intent": 0.8,
    "after_sales": 0.0,
    "multi_intent": 1.0,
    "injection": 0.6,
    "forbidden_claim": 1.0,
}
INTENTS_WITH_ATTRIBUTE = ("product_question", "multi_intent")
N_VIEWERS = VB.N_VIEWERS
VARIANT_MAX = 2**31 - 1


def mix_vector(mix: Mapping[str, float], names: tuple[str, ...]) -> np.ndarray:
    """A mix dict as probabilities over `names` (missing names get 0)."""
    unknown = set(mix) - set(names)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}; expected some of {names}")
    p = np.array([float(mix.get(n, 0.0)) for n in names], np.float64)
    if (p < 0).any() or p.sum() <= 0:
        raise ValueError(f"mix weights must be non-negative with a positive sum: {mix}")
    return p / p.sum()


def _attr_probs() -> np.ndarray:
    valid = np.zeros((len(CATEGORIES), len(ATTRIBUTES)), np.float64)
    for c, cat in enumerate(CATEGORIES):
        for a in CATEGORY_ATTRIBUTES[cat]:
            valid[c, ATTRIBUTES.index(a)] = ATTRIBUTE_WEIGHTS[a]
    return valid / valid.sum(axis=1, keepdims=True)


_ATTR_P = _attr_probs()  # [n_categories, n_attributes]


def code_tables(catalog: Catalog) -> dict[str, np.ndarray]:
    """Arrays that let jitted code sample valid codes for `catalog`.

    attr_valid [n_categories, n_attributes] bool; attr_logits (same shape,
    float32 log-weights, -inf where invalid); link_category [n_links] int32
    (index = link_id - 1); n_links int32 scalar; intent_link_prob [n_intents]
    float32; intent_has_attr [n_intents] bool.
    """
    links = sorted(catalog.products, key=lambda p: p.link_id)
    with np.errstate(divide="ignore"):
        logits = np.log(_ATTR_P).astype(np.float32)
    return {
        "attr_valid": _ATTR_P > 0,
        "attr_logits": logits,
        "link_category": np.array(
            [CATEGORIES.index(p.category) for p in links], np.int32
        ),
        "n_links": np.int32(len(catalog.products)),
        "intent_link_prob": np.array(
            [INTENT_LINK_PROB[i] for i in INTENTS], np.float32
        ),
        "intent_has_attr": np.array([i in INTENTS_WITH_ATTRIBUTE for i in INTENTS]),
    }


def sample_codes(
    rng: np.random.Generator,
    catalog: Catalog,
    n: int,
    *,
    intent_mix: Mapping[str, float] = DEFAULT_INTENT_MIX,
    lang_mix: Mapping[str, float] = DEFAULT_LANG_MIX,
) -> np.ndarray:
    """`n` message codes for `catalog`, int32 [n, 6] (host-side, vectorized)."""
    tables = code_tables(catalog)
    intent = rng.choice(len(INTENTS), size=n, p=mix_vector(intent_mix, INTENTS))
    lang = rng.choice(len(LANGS), size=n, p=mix_vector(lang_mix, LANGS))
    has_link = rng.random(n) < tables["intent_link_prob"][intent]
    link = rng.integers(1, int(tables["n_links"]) + 1, size=n) * has_link
    cdf = np.cumsum(_ATTR_P[tables["link_category"][np.maximum(link, 1) - 1]], axis=1)
    attr = np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1), len(ATTRIBUTES) - 1)
    attr = np.where(tables["intent_has_attr"][intent], attr, -1)
    variant = rng.integers(0, VARIANT_MAX, size=n)
    viewer = rng.integers(0, N_VIEWERS, size=n)
    return np.stack([intent, link, attr, lang, variant, viewer], axis=1).astype(
        np.int32
    )


def sample_code(
    rng: np.random.Generator,
    catalog: Catalog,
    *,
    intent_mix: Mapping[str, float] = DEFAULT_INTENT_MIX,
    lang_mix: Mapping[str, float] = DEFAULT_LANG_MIX,
) -> np.ndarray:
    """One message code for `catalog`, int32 [6] (see MESSAGE_FIELDS)."""
    return sample_codes(rng, catalog, 1, intent_mix=intent_mix, lang_mix=lang_mix)[0]


def sample_code_jax(
    key: jax.Array,
    tables: Mapping[str, jax.Array],
    intent_p: jax.Array,
    lang_p: jax.Array,
) -> jax.Array:
    """One code, int32 [6], under jit; vmap over keys (and tables) for many.

    Args:
      key: a PRNG key.
      tables: `code_tables(catalog)` (may be padded past `n_links`).
      intent_p: [n_intents] probabilities (e.g. `mix_vector(mix, INTENTS)`).
      lang_p: [n_langs] probabilities.
    """
    k = jax.random.split(key, 7)
    intent = jax.random.categorical(k[0], jnp.log(intent_p))
    lang = jax.random.categorical(k[1], jnp.log(lang_p))
    has_link = jax.random.uniform(k[2]) < tables["intent_link_prob"][intent]
    link = jax.random.randint(k[3], (), 1, tables["n_links"] + 1)
    link = jnp.where(has_link, link, 0)
    category = tables["link_category"][jnp.maximum(link, 1) - 1]
    attr = jax.random.categorical(k[4], tables["attr_logits"][category])
    attr = jnp.where(tables["intent_has_attr"][intent], attr, -1)
    variant = jax.random.randint(k[5], (), 0, VARIANT_MAX)
    viewer = jax.random.randint(k[6], (), 0, N_VIEWERS)
    return jnp.stack([intent, link, attr, lang, variant, viewer]).astype(jnp.int32)


def mix_report(codes: np.ndarray) -> dict:
    """Shares of intents and languages (and attributes, linked messages) in codes.

    Returns {"n", "intent": {name: share}, "lang": {...}, "attribute": {...}
    (among messages with an attribute), "with_link": share}.
    """
    codes = np.asarray(codes).reshape(-1, len(MESSAGE_FIELDS))
    n = len(codes)

    def shares(column: np.ndarray, names: tuple[str, ...]) -> dict[str, float]:
        counts = np.bincount(column, minlength=len(names))
        total = max(int(counts.sum()), 1)
        return {name: round(float(c) / total, 4) for name, c in zip(names, counts)}

    attrs = codes[:, 2][codes[:, 2] >= 0]
    return {
        "n": n,
        "intent": shares(codes[:, 0], INTENTS),
        "lang": shares(codes[:, 3], LANGS),
        "attribute": shares(attrs, ATTRIBUTES),
        "with_link": round(float((codes[:, 1] > 0).mean()) if n else 0.0, 4),
    }


def bank_sizes() -> dict[str, dict[str, int]]:
    """Distinct templates per intent and language.

    Product questions count all attributes; multi-intent counts the templates
    its two parts draw from (joined by one of the language's connectors).
    """
    out: dict[str, dict[str, int]] = {}
    for lang, bank in VB.TEMPLATES.items():
        for intent in INTENTS:
            entry = bank.get(intent, bank["product_question"])
            if intent == "multi_intent":  # a product question + a second part
                n = sum(map(len, bank["product_question"].values()))
                n += sum(
                    len(bank["after_sales"][t]) for t in VB.MULTI_AFTER_SALES_TOPICS
                )
                n += len(bank["purchase_intent"]["link"])
            elif isinstance(entry, Mapping):
                n = sum(map(len, entry.values()))
            else:
                n = len(entry)
            out.setdefault(intent, {})[lang] = n
    return out
