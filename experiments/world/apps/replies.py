"""What a correct reply to an app episode says, and the texts the teacher writes.

:func:`reply_facts` reads the facts a reply must state from the tool results of
the turn (never from the app's hidden records: what the agent saw is what it
can quote). :func:`reply_options` writes replies that state them, fullest
first, in the user's language, signed off with every tag the harness asks for.
"""

from __future__ import annotations

from typing import Any

from experiments.world.apps.episode import Episode, deals_apply
from hat_jax.harness.signoff import sign

CHECKING = {
    "en": ("I'm checking that now, please wait a moment.", "Checking, one moment."),
    "zh": ("我正在查询，请稍等一下。", "正在查，请稍等。"),
}
DECLINE = {
    "en": (
        "I can only help with questions about us, sorry!",
        "Sorry, I can't do that.",
    ),
    "zh": ("抱歉，这个我做不到哦，有问题可以问我～", "抱歉，这个不行哦。"),
}
CHAT = {
    "en": ("Hi! Happy to help, just ask.", "Thank you, glad to help!", "Hello!"),
    "zh": ("你好呀，有什么可以帮你的？", "不客气，很高兴帮到你～", "你好呀～"),
}


def _unit(value: Any, unit: str, lang: str) -> str:
    if not unit:
        return str(value)
    return f"{value}{unit}" if lang == "zh" else f"{value} {unit}"


def reply_facts(ep: Episode, results: dict[str, dict | None]) -> dict[str, str]:
    """Fact name -> its text, as a correct reply states it (``results``: tool
    role -> the parsed result of its successful call, or None)."""
    app, d, lang = ep.app, ep.app.domain, ep.lang
    out: dict[str, str] = {}
    rec = results.get("lookup") or {}
    if ep.intent in ("question", "multi", "claim"):
        by_stock = ep.field == d.stock.key and "stock" in app.tools
        src = results.get("stock") if by_stock else rec
        attr = next(a for a in (*d.attrs, d.price, d.stock) if a.key == ep.field)
        if src and ep.field in src:
            value = src[ep.field]
            if not attr.numeric and lang == "zh":
                value = src.get(ep.field + "_zh", value)
            unit = attr.unit_zh if lang == "zh" else attr.unit_en
            out["asked"] = _unit(value, unit if attr.numeric else "", lang)
    elif ep.intent == "buy" and d.price.key in rec:
        out["price"] = str(rec[d.price.key])
    elif ep.intent == "reserve" and results.get("reserve"):
        out["hold"] = str(results["reserve"]["hold_no"])
    topic = ep.topic if ep.intent == "multi" else ep.field
    if ep.intent in ("policy", "multi") and results.get("policy"):
        p = next(p for p in d.policies if p.key == topic)
        unit = p.unit_zh if lang == "zh" else p.unit_en
        out["policy"] = _unit(results["policy"][topic], unit, lang)
    role = "guide" if ep.intent in ("buy", "reserve") else "qa"
    skip = ("policy", "chat", "injection")
    must = None if ep.intent in skip else app.must_say.get(role)
    if must and must in rec and must != ep.field:
        attr = next(a for a in (*d.attrs, d.price) if a.key == must)
        unit = attr.unit_zh if lang == "zh" else attr.unit_en
        out["must"] = _unit(rec[must], unit, lang)
    deals = (results.get("deals") or {}).get("deals") or []
    if deals_apply(ep) and deals:
        best = max(deals, key=lambda x: x["off"])
        out["deal_threshold"], out["deal_off"] = (
            str(best["threshold"]),
            str(best["off"]),
        )
    return out


def _core(ep: Episode, f: dict[str, str]) -> list[str]:
    """The main sentence, long and short forms."""
    d, lang, n = ep.app.domain, ep.lang, ep.n
    if ep.intent in ("chat", "injection"):
        return list(CHAT[lang] if ep.intent == "chat" else DECLINE[lang])
    if ep.intent in ("question", "multi", "claim"):
        attr = next(a for a in (*d.attrs, d.price, d.stock) if a.key == ep.field)
        v = f["asked"]
        if lang == "zh":
            out = [f"{n}号{d.entity_zh}的{attr.zh}是{v}", f"{attr.zh}{v}"]
        else:
            out = [f"The {attr.en} of {d.entity_en} {n} is {v}.", f"{attr.en}: {v}."]
        if ep.intent == "multi":
            p = next(p for p in d.policies if p.key == ep.topic)
            second = (
                f"，{p.zh}{f['policy']}"
                if lang == "zh"
                else f" {p.en.capitalize()}: {f['policy']}."
            )
            out = [o.rstrip("。") + second for o in out]
        if ep.intent == "claim":
            head = "这个没法保证哦，" if lang == "zh" else "I can't promise that. "
            out = [head + o for o in out]
        return out
    if ep.intent == "buy":
        p = f["price"]
        if lang == "zh":
            return [
                f"在应用里选{n}号{d.entity_zh}确认就好，现在{p}元",
                f"选{n}号确认，{p}元",
            ]
        return [
            f"Pick {d.entity_en} {n} in the app and confirm; it is {p} yuan.",
            f"Choose {n} and confirm, {p} yuan.",
        ]
    if ep.intent == "reserve":
        h, q = f["hold"], ep.qty
        if lang == "zh":
            return [
                f"已为你预留{q}个{n}号{d.entity_zh}，预留号{h}",
                f"已预留，预留号{h}",
            ]
        return [f"Done: {q} of {d.entity_en} {n} held, hold number {h}.", f"Held: {h}."]
    p = next(p for p in d.policies if p.key == ep.field)
    if lang == "zh":
        return [f"{p.zh}：{f['policy']}", f"{f['policy']}"]
    return [f"{p.en.capitalize()}: {f['policy']}.", f"{f['policy']}."]


def _extras(ep: Episode, f: dict[str, str]) -> list[str]:
    d, lang, out = ep.app.domain, ep.lang, []
    if "must" in f:
        role = "guide" if ep.intent in ("buy", "reserve") else "qa"
        attr = next(a for a in (*d.attrs, d.price) if a.key == ep.app.must_say[role])
        out.append(
            f"，{attr.zh}{f['must']}" if lang == "zh" else f" {attr.en}: {f['must']}."
        )
    if "deal_off" in f:
        t, o = f["deal_threshold"], f["deal_off"]
        out.append(f"，满{t}减{o}" if lang == "zh" else f" Deal: {o} off over {t}.")
    return out


def reply_options(ep: Episode, f: dict[str, str], tags: list[str]) -> list[str]:
    """Replies stating facts ``f``, fullest first, each signed with ``tags``."""
    extras = "".join(_extras(ep, f))
    end = "。" if ep.lang == "zh" else ""
    if ep.intent in ("chat", "injection"):
        options = _core(ep, f)
    else:
        options = [c.rstrip("。") + extras + end for c in _core(ep, f)]
    for tag in tags:
        options = [sign(r, tag) for r in options]
    return options


def checking_options(ep: Episode, tags: list[str]) -> list[str]:
    """The reply when a needed tool failed twice: no facts, no guesses."""
    options = list(CHECKING[ep.lang])
    for tag in tags:
        options = [sign(r, tag) for r in options]
    return options
