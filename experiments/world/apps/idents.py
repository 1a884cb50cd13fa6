"""Fresh identifiers for generated apps: tool, parameter and skill names, tags.

Every episode of the generalist base world draws its names here, so a model can
only call a tool, load a skill or sign off correctly by reading them from its
context. Three styles are mixed: lexicon compounds (``tally_overdue_loan``,
``lockerSync``), pronounceable nonsense (``vorelli``, ``zenkaru.audit``) and
hash-like ids (``t_9f3a2c``, ``op7k2``), each joined in several house styles
(snake, camel, Pascal, dotted, kebab, upper; parameters snake or camel only).

Disjointness holds by construction: a draw is rejected when its :func:`norm`
form is a known identifier or any of its words is a word of one. Known are
``augment.names``' pool, the builtin harnesses' tools, parameters, skills and
hooks, the augmentation ops' sign-off tags, wrappers and distractor tools, and
the fixed names of the look-up drill and tool bank (:func:`forbidden_words`).

Variety (``np.random.default_rng(0)``, 100,000 draws each): 94,352 distinct
tool names, 60,784 parameter names, 80,354 skill names, 79,030 tags.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence

import numpy as np

from augment.names import NAME_RE, PARAM_RE, join_words, split_words
from hat_jax.harness.signoff import TAG

VERBS = (
    "tally", "stamp", "mend", "summon", "gather", "compute", "estimate", "reckon",
    "audit", "peek", "scan", "scout", "trace", "rank", "sort", "filter", "match",
    "resolve", "locate", "obtain", "collect", "book", "reserve", "cancel", "renew",
    "assign", "compare", "examine", "vet", "survey", "poll", "seek", "draft",
    "compose", "submit", "send", "open", "close", "lock", "sync", "refresh",
    "update", "patch", "edit", "register", "enroll", "archive", "restore",
    "validate", "confirm", "approve", "reject", "flag", "score", "forecast",
    "route", "allocate", "sum", "tabulate", "weigh", "gauge", "appraise", "assess",
    "hold", "release", "queue", "notify", "log", "rebook", "waive", "quarantine",
)  # fmt: skip
NOUNS = (
    "ledger", "roster", "booking", "patron", "member", "account", "balance", "loan",
    "visit", "appointment", "patient", "dose", "flight", "seat", "gate", "fare",
    "baggage", "author", "branch", "locker", "vehicle", "lease", "tenant",
    "invoice", "receipt", "course", "lesson", "grade", "exam", "menu", "venue",
    "concert", "permit", "license", "claim", "refund", "warranty", "repair",
    "device", "tariff", "meter", "trip", "hotel", "guest", "ward", "doctor", "pet",
    "garden", "plot", "pass", "badge", "voyage", "cabin", "berth", "harbor",
    "shuttle", "crate", "pallet", "manifest", "cargo", "journal", "chapter",
    "volume", "manuscript", "specimen", "lab", "clause", "contract", "deposit",
    "payout", "wallet", "transfer", "tuition", "campus", "dorm", "rental", "bike",
    "court", "league", "coach", "fixture", "trail", "ranger", "crop", "orchard",
    "herd", "kennel", "salon", "session", "gallery", "exhibit", "museum",
    "recital", "rehearsal", "episode", "playlist", "album", "parking", "toll",
    "charger", "battery", "outage", "boiler", "chore", "errand", "courier",
    "mailbox", "vaccine", "referral", "pharmacy", "tutor", "locksmith", "ferry",
)  # fmt: skip
QUALIFIERS = (
    "daily", "pending", "active", "recent", "bulk", "quick", "full", "brief", "raw",
    "next", "prior", "overdue", "partial", "nearby", "upcoming", "remote", "weekly",
    "monthly", "spare", "urgent", "annual", "primary", "backup", "extra", "joint",
    "solo", "shared", "private", "public", "staff", "lapsed", "frozen", "sealed",
)  # fmt: skip
PARAM_TAILS = (
    "alias", "serial", "pin", "uid", "mode", "span", "range", "cap", "tier", "slug",
    "hint", "since", "until", "budget", "party", "nights", "weeks", "hours", "age",
    "email", "phone", "total", "scope", "band", "rung", "width", "depth", "seq",
)  # fmt: skip
SKILL_HEADS = (
    "manual", "handbook", "etiquette", "protocol", "routine", "primer", "charter",
    "canon", "briefing", "roadmap", "tactics", "pointers", "mindset", "compass",
    "script", "cadence", "creed", "drill", "ethos", "almanac", "memo",
)  # fmt: skip
TAG_WORDS = (
    "Amber", "Cobalt", "Velvet", "Maple", "Cedar", "Pebble", "Willow", "Ember",
    "Juniper", "Saffron", "Indigo", "Hazel", "Lantern", "Hollow", "Bramble",
    "Meadow", "Thistle", "Quill", "Beacon", "Lark", "Fable", "Otter", "Marble",
    "Clover", "Heron", "Sparrow", "Tundra", "Mosaic", "Comet", "Nimbus",
)  # fmt: skip
LEXICON = (*VERBS, *NOUNS, *QUALIFIERS, *PARAM_TAILS, *SKILL_HEADS)
LEXICON += tuple(w.lower() for w in TAG_WORDS)

# single consonants and vowels weighted up so most nonsense reads easily
ONSETS = tuple("bdfgklmnprstvz" * 2) + ("br", "dr", "gr", "kl", "pl", "st", "tr", "sk")
VOWELS = tuple("aeiouaeio") + ("ai", "ou")
CODAS = ("", "", "", "n", "r", "l", "s", "x", "m", "nd", "lly")
HEX, B36 = "0123456789abcdef", "0123456789abcdefghijklmnopqrstuvwxyz"
HASH_HEADS = {
    "tool": ("t", "op", "fn", "rpc", "svc", "ep", "act", "cmd"),
    "param": ("p", "arg", "f", "k", "fld", "opt"),
    "skill": ("sk", "s", "sop", "pb", "mod"),
}
TEMPLATES = {  # kind -> (cumulative share, word pools) of its lexicon compounds
    "tool": ((0.45, (VERBS, NOUNS)), (0.7, (VERBS, QUALIFIERS, NOUNS)),
             (0.85, (VERBS, NOUNS, NOUNS)), (1.0, (NOUNS, VERBS))),
    "param": ((0.55, (NOUNS, PARAM_TAILS)), (0.7, (QUALIFIERS, NOUNS)),
              (0.85, (PARAM_TAILS,)), (1.0, (NOUNS,))),
    "skill": ((0.6, (NOUNS, SKILL_HEADS)), (0.85, (QUALIFIERS, NOUNS, SKILL_HEADS)),
              (1.0, (SKILL_HEADS, NOUNS))),
}  # fmt: skip
MATES = {"tool": VERBS, "param": PARAM_TAILS, "skill": SKILL_HEADS}  # of nonsense
STYLES = ("snake", "snake", "camel", "pascal", "dotted", "kebab", "upper")
PARAM_STYLES = ("snake", "snake", "camel")
MAX_LEN = {"tool": 32, "param": 24, "skill": 28}
TAG_LETTERS = (4, 14)
KINDS = ("tool", "param", "skill", "tag")
_TRIES = 32


def norm(name: str) -> str:
    """Lower case, separators (and ``#``) dropped: the form disjointness uses."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _keys(schema) -> set[str]:
    """Every property key of a JSON schema, nested objects and arrays included."""
    out: set[str] = set()
    if isinstance(schema, dict):
        for key, sub in (schema.get("properties") or {}).items():
            out |= {key, *_keys(sub)}
        out |= _keys(schema.get("items"))
    return out


@functools.cache
def _forbidden() -> tuple[frozenset[str], frozenset[str]]:
    # Imported here: the pools are large and most callers never need them.
    from augment.distractors import DISTRACTORS
    from augment.names import NAMESPACES, SYNONYMS
    from augment.ops_hooks import TAGS
    from augment.ops_tools import WRAPPERS
    from experiments.world.lookup import RECORDS
    from experiments.world.tools_bank import CONCEPTS
    from hat_jax.harness import BUILTIN, load_harness
    from hat_jax.harness.signoff import hook_tag, skill_tag

    raw = {*NAMESPACES, *TAGS, *WRAPPERS}
    for key, alts in SYNONYMS.items():
        raw |= {key, *alts}
    for tools, params, _, _ in RECORDS.values():
        raw |= {*tools, *params}
    for c in CONCEPTS:
        raw |= {*c.names, *(n for p in c.params for n in p.names)}
    tools = [*DISTRACTORS]
    for name in BUILTIN:
        h = load_harness(name)
        raw |= {s.name for s in h.skills} | {k.name for k in h.hooks}
        raw |= {hook_tag(h), *(skill_tag(s.body) for s in h.skills)}
        tools += [spec["function"] for spec in h.tool_specs()]
    for t in tools:
        raw |= {t["name"], *_keys(t["parameters"])}
    raw.discard("")
    words = {w for r in raw for w in split_words(r.lstrip("#"))}
    return frozenset(map(norm, raw)), frozenset(words)


def forbidden_identifiers() -> frozenset[str]:
    """Normalised identifiers (:func:`norm`) no draw may equal."""
    return _forbidden()[0]


def forbidden_words() -> frozenset[str]:
    """Lower-case words of the forbidden identifiers; no draw may hold one."""
    return _forbidden()[1]


def _pick(rng: np.random.Generator, seq: Sequence):
    # rng.random() is several times cheaper than rng.integers() per scalar.
    return seq[int(rng.random() * len(seq))]


def _nonsense(rng: np.random.Generator) -> str:
    n = 2 + int(rng.random() * 3)
    syl = [_pick(rng, ONSETS) + _pick(rng, VOWELS) for _ in range(n)]
    return "".join(syl) + _pick(rng, CODAS)


def _hash_tail(rng: np.random.Generator) -> list[str]:
    if rng.random() < 0.5:
        return ["".join(_pick(rng, HEX) for _ in range(4 + int(rng.random() * 3)))]
    # glued form (``op7k2``): a digit first keeps the split readable
    tail = "".join(_pick(rng, B36) for _ in range(2 + int(rng.random() * 3)))
    return [str(int(rng.random() * 10)) + tail]


def _words(rng: np.random.Generator, kind: str) -> list[str]:
    """The parts of one name of ``kind`` (tool, param or skill), unjoined."""
    u, v = rng.random(), rng.random()
    if u < 0.25:  # hash-like
        words = [_pick(rng, HASH_HEADS[kind]), *_hash_tail(rng)]
        return ["".join(words)] if v < 0.4 else words
    if u < 0.5:  # nonsense, alone or beside one lexicon word
        word, other = _nonsense(rng), MATES[kind]
        if v < 0.35:
            return [word]
        return [word, _pick(rng, other)] if v < 0.7 else [_pick(rng, other), word]
    pools = next(pools for share, pools in TEMPLATES[kind] if v < share)
    return [_pick(rng, pool) for pool in pools]


def _clean(name: str, parts: list[str]) -> bool:
    """Whether ``name`` and its parts avoid every forbidden identifier and word."""
    idents, words = _forbidden()
    found = {w.lower() for w in parts} | set(split_words(name.lstrip("#")))
    return norm(name) not in idents and not found & words


def _draw(rng: np.random.Generator, kind: str) -> str:
    valid = PARAM_RE if kind == "param" else NAME_RE
    styles = PARAM_STYLES if kind == "param" else STYLES
    while True:  # about 1 draw in 1,000 is rejected (measured at seed 0)
        parts = _words(rng, kind)
        name = join_words(parts, _pick(rng, styles))
        if len(set(parts)) < len(parts):  # no "loan_loan"
            continue
        if len(name) <= MAX_LEN[kind] and valid.match(name) and _clean(name, parts):
            return name


def tool_name(rng: np.random.Generator) -> str:
    """A fresh tool name, e.g. ``tally_overdue_loan`` or ``op7k2``."""
    return _draw(rng, "tool")


def param_name(rng: np.random.Generator) -> str:
    """A fresh parameter name (snake or camel), e.g. ``berthSerial``."""
    return _draw(rng, "param")


def skill_name(rng: np.random.Generator) -> str:
    """A fresh skill name, e.g. ``lapsed-lease-etiquette``."""
    return _draw(rng, "skill")


def sign_off_tag(rng: np.random.Generator) -> str:
    """A fresh sign-off tag: ``#`` and 4-14 ASCII letters, e.g. ``#Vorelly``."""
    lo, hi = TAG_LETTERS
    while True:
        u = rng.random()
        if u < 0.5:
            parts = [_nonsense(rng)]
        elif u < 0.7:
            parts = [_pick(rng, TAG_WORDS), _pick(rng, TAG_WORDS)]
        else:
            parts = [_nonsense(rng), _pick(rng, TAG_WORDS)]
        if len(parts) == 2 and parts[0].lower() == parts[1].lower():
            continue
        case = rng.random()
        body = "".join(p.capitalize() for p in parts)
        body = body.lower() if case < 0.1 else body.upper() if case < 0.15 else body
        tag = "#" + body
        if lo <= len(body) <= hi and TAG.fullmatch(tag) and _clean(tag, parts):
            return tag


DRAWERS = dict(tool=tool_name, param=param_name, skill=skill_name, tag=sign_off_tag)


def _suffix(rng: np.random.Generator, kind: str, name: str) -> str:
    if kind == "tag":
        return name + _pick(rng, ONSETS).capitalize() + _pick(rng, VOWELS)
    tail = "".join(_pick(rng, B36) for _ in range(2))
    return f"{name}_{tail.upper() if name.isupper() else tail}"


def fresh(rng: np.random.Generator, kind: str, taken: set[str]) -> str:
    """A name of ``kind`` that no name in ``taken`` normalises to; added to it.

    Clashes are redrawn ``_TRIES`` times, then a short suffix is appended to a
    draw until it is free (the suffix keeps the kind's length limit).
    """
    if kind not in DRAWERS:
        raise ValueError(f"unknown identifier kind {kind!r}; have {KINDS}")
    seen = {norm(t) for t in taken}
    limit = TAG_LETTERS[1] + 1 if kind == "tag" else MAX_LEN[kind]
    for tries in itertools.count():
        name = DRAWERS[kind](rng)
        if tries >= _TRIES:
            name = _suffix(rng, kind, name)
        if norm(name) not in seen and len(name) <= limit and _clean(name, []):
            taken.add(name)
            return name
    raise AssertionError("unreachable")
