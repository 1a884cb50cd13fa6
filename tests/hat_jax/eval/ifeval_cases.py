"""Responses built to pass, fail and sit on the border of each IFEval instruction.

`cases(prompt)` gives `(label, response)` pairs for one IFEval prompt: for each
of its instructions a passing response, failing ones and border-line ones (off
by one, other case, markers the checker half-accepts), plus loose-only variants
of the passing one (a leading "Sure" line, a trailing line, markdown asterisks).
Deterministic: no randomness.
"""

from __future__ import annotations

SENTENCES = [
    "The morning market opens early and the stalls fill with fresh fruit.",
    "Our guide walks us through the old town before lunch.",
    "Dr. Lee says the museum closes at 5 p.m. on most days.",
    "Rain is expected later so we carry a small umbrella.",
    "The river path is quiet and lined with tall trees.",
    "Tickets cost 12.50 each and sell out by noon.",
    "We end the day with soup and warm bread at a small cafe.",
]
POOL = (
    "art sky map run big fun hot cup tin box owl jam dog cat sun bus log pig "
    "red hut ink mud fog gym zip wax kit dry shy sly spy lynx myth rhythm "
    "plan hill milk tree seed rope lake note wind bell"
).split()
LANG = {
    "kn": "ನಾನು ಇಂದು ಮಾರುಕಟ್ಟೆಗೆ ಹೋಗಿ ತಾಜಾ ಹಣ್ಣುಗಳನ್ನು ಖರೀದಿಸಿದೆ.",
    "pa": "ਮੈਂ ਅੱਜ ਬਾਜ਼ਾਰ ਗਿਆ ਅਤੇ ਤਾਜ਼ੇ ਫਲ ਖਰੀਦੇ।",
    "mr": "मी आज बाजारात गेलो आणि ताजी फळे विकत घेतली.",
    "fa": "من امروز به بازار رفتم و میوه های تازه خریدم.",
    "vi": "Hôm nay tôi đi chợ và mua trái cây tươi.",
    "ko": "나는 오늘 시장에 가서 신선한 과일을 샀습니다.",
    "sw": "Leo nilienda sokoni na kununua matunda mabichi.",
    "ru": "Сегодня я пошёл на рынок и купил свежие фрукты.",
    "hi": "आज मैं बाज़ार गया और ताज़े फल खरीदे।",
    "bg": "Днес отидох на пазара и купих пресни плодове.",
    "pt": "Hoje eu fui ao mercado e comprei frutas frescas.",
    "gu": "આજે હું બજારમાં ગયો અને તાજા ફળો ખરીદ્યા.",
    "te": "ఈ రోజు నేను మార్కెట్‌కి వెళ్లి తాజా పండ్లు కొన్నాను.",
    "it": "Oggi sono andato al mercato e ho comprato frutta fresca.",
    "ar": "ذهبت اليوم إلى السوق واشتريت فواكه طازجة.",
    "ta": "இன்று நான் சந்தைக்குச் சென்று புதிய பழங்களை வாங்கினேன்.",
    "de": "Heute bin ich auf den Markt gegangen und habe frisches Obst gekauft.",
    "fi": "Tänään menin torille ja ostin tuoreita hedelmiä.",
    "ur": "آج میں بازار گیا اور تازہ پھل خریدے۔",
    "th": "วันนี้ฉันไปตลาดและซื้อผลไม้สด",
    "ne": "आज म बजार गएँ र ताजा फलफूल किनेँ।",
    "bn": "আজ আমি বাজারে গিয়ে তাজা ফল কিনেছি।",
}
PROSE = " ".join(SENTENCES[:2])


def words(n: int, avoid: tuple[str, ...] = ()) -> str:
    """n words from the pool, none containing a string of `avoid` (any case)."""
    pool = [w for w in POOL if not any(a.lower() in w for a in avoid)]
    return " ".join(pool[i % len(pool)] for i in range(max(n, 0)))


def sentences(n: int) -> str:
    return " ".join(SENTENCES[i % len(SENTENCES)] for i in range(max(n, 0)))


def _existence(kw, prompt):
    ks = kw["keywords"]
    return [
        ("pass", f"{PROSE} We talk about {' and '.join(ks)} today."),
        ("fail", f"{PROSE} We talk about {' and '.join(ks[:-1])} today."),
        ("border", f"{PROSE} {' '.join(k.upper() for k in ks)}!"),
        ("border", f"{PROSE} {' '.join('un' + k + 'ly' for k in ks)}"),
    ]


def _frequency(kw, prompt):
    k, n = kw["keyword"], kw["frequency"]
    base = words(6, avoid=(k,))
    ok = n - 1 if kw["relation"] == "less than" else n
    return [
        (label, f"{base} {' '.join([k] * m)} {base}")
        for label, m in (
            ("pass", ok),
            ("border", n),
            ("border", n - 1),
            ("border", n + 1),
        )
    ] + [("border", f"{base} {' '.join([k.title() + 's'] * n)}")]


def _forbidden(kw, prompt):
    ws = kw["forbidden_words"]
    clean = words(12, avoid=tuple(ws))
    return [
        ("pass", clean),
        ("fail", f"{clean} {ws[-1].capitalize()} {clean}"),
        ("border", f"{clean} {ws[0]}s and {ws[0]}ing"),
        ("border", f"{clean} x-{ws[0]}-y"),
    ]


def _letter(kw, prompt):
    c, n = kw["letter"], kw["let_frequency"]
    base = words(8, avoid=(c,))
    out = []
    ok = n - 1 if kw["let_relation"] == "less than" else n
    for label, m in (("pass", ok), ("border", n), ("border", n - 1), ("border", n + 1)):
        letters = [c.upper() if i % 2 else c for i in range(max(m, 0))]
        out.append((label, f"{base} {' '.join(letters)} {base}"))
    return out


def _language(kw, prompt):
    text = LANG.get(kw["language"], "Bonjour tout le monde.")
    return [
        ("pass", f"{text} {text}"),
        ("fail", sentences(3)),
        ("border", f"{text} {SENTENCES[0]}"),
        ("border", "12345 678"),
    ]


def _n_sentences(kw, prompt):
    n = kw["num_sentences"]
    return [
        ("pass", sentences(n - 1 if kw["relation"] == "less than" else n)),
        ("border", sentences(n)),
        ("border", sentences(n + 1)),
        ("border", sentences(n - 1)),
        ("border", sentences(n).replace(". ", "... ", 1)),
    ]


def _paragraphs(kw, prompt):
    n = kw["num_paragraphs"]

    def paras(m, sep="\n***\n"):
        return sep.join(SENTENCES[i % len(SENTENCES)] for i in range(max(m, 1)))

    return [
        ("pass", paras(n)),
        ("fail", paras(n - 1) if n > 1 else paras(n + 1)),
        ("border", paras(n + 1)),
        ("border", "***\n" + paras(n) + "\n***"),
        ("border", paras(n).replace("\n***\n", "\n***\n\n***\n", 1)),
        ("border", paras(n, sep=" *** ")),
    ]


def _n_words(kw, prompt):
    n = kw["num_words"]
    return [
        ("pass", words(n - 1 if kw["relation"] == "less than" else n)),
        ("border", words(n)),
        ("border", words(n + 1)),
        ("border", words(n - 1)),
        ("border", words(n - 2) + " don't"),
    ]


def _nth_first(kw, prompt):
    n, nth, first = kw["num_paragraphs"], kw["nth_paragraph"], kw["first_word"]
    title = first.capitalize()

    def paras(m, head=title, sep="\n\n"):
        ps = [SENTENCES[i % len(SENTENCES)] for i in range(m)]
        ps[nth - 1 if nth <= m else m - 1] = f"{head} {SENTENCES[-1]}"
        return sep.join(ps)

    return [
        ("pass", paras(n)),
        ("fail", paras(n, head="Elsewhere")),
        ("border", paras(n + 1)),
        ("border", paras(n, head=f'"{first.upper()},"')),
        ("border", paras(n, sep="\n\n\n\n")),
        ("border", paras(n, head=first + "ly")),
    ]


def _placeholders(kw, prompt):
    n = kw["num_placeholders"]

    def ph(m):
        return " ".join(f"[field {i}]" for i in range(max(m, 0)))

    return [
        ("pass", f"{PROSE} {ph(n)}"),
        ("fail", f"{PROSE} {ph(n - 1)}"),
        ("border", f"{PROSE} {ph(n - 1)} [unclosed"),
        ("border", f"{PROSE} {ph(n - 1)} []"),
    ]


def _postscript(kw, prompt):
    m = kw["postscript_marker"]
    return [
        ("pass", f"{PROSE}\n\n{m} See you soon."),
        ("fail", PROSE),
        ("border", f"{PROSE}\n\n{m.lower().replace('.', '. ')} See you soon."),
        ("border", f"{PROSE}\n\nPS See you soon."),
        ("border", f"{m} first. {PROSE}"),
    ]


def _bullets(kw, prompt):
    n = kw["num_bullets"]

    def bl(m, mark="*"):
        return "\n".join(f"{mark} point {i}" for i in range(max(m, 0)))

    return [
        ("pass", f"Points:\n{bl(n)}"),
        ("fail", f"Points:\n{bl(n - 1)}"),
        ("border", f"Points:\n{bl(n + 1)}"),
        ("border", f"Points:\n{bl(n - 1, '-')}\n**Bold line**\n{bl(1)}"),
        ("border", f"Points:\n{bl(n - 1)}\n---"),
    ]


def _constrained(kw, prompt):
    return [
        ("pass", "My answer is yes."),
        ("fail", "My answer is Yes"),
        ("border", f"{PROSE} My answer is maybe. Or not."),
    ]


def _highlights(kw, prompt):
    n = kw["num_highlights"]

    def hl(m, wrap="*"):
        return " ".join(f"{wrap}part {i}{wrap}" for i in range(max(m, 0)))

    return [
        ("pass", f"{PROSE} {hl(n)}"),
        ("fail", f"{PROSE} {hl(n - 1)}"),
        ("border", f"{PROSE} {hl((n + 1) // 2, '**')}"),
        ("border", f"{PROSE} {hl(n - 1)} * * **"),
    ]


def _sections(kw, prompt):
    s, n = kw["section_spliter"], kw["num_sections"]

    def sec(m, name=s):
        return "\n".join(f"{name} {i + 1}\n{SENTENCES[i % 7]}" for i in range(m))

    return [
        ("pass", sec(n)),
        ("fail", sec(n - 1)),
        ("border", sec(n, name=s.lower())),
        ("border", sec(n - 1) + f"\n{s} X\nmore"),
    ]


def _json(kw, prompt):
    body = '{"city": "Paris", "days": [1, 2]}'
    return [
        ("pass", body),
        ("pass", f"```json\n{body}\n```"),
        ("fail", f"Here is the JSON: {body}"),
        ("border", f"```JSON\n{body}\n```\nDone."),
        ("border", "{'city': 'Paris'}"),
    ]


def _title(kw, prompt):
    return [
        ("pass", f"<<A Day in Town>>\n{PROSE}"),
        ("fail", f"<A Day in Town>\n{PROSE}"),
        ("border", f"<< >>\n{PROSE}"),
        ("border", f"<<A Day\nin Town>>\n{PROSE}"),
    ]


def _two(kw, prompt):
    a, b = SENTENCES[0], SENTENCES[1]
    return [
        ("pass", f"{a}\n******\n{b}"),
        ("fail", f"{a}\n******\n{a}"),
        ("border", f"******\n{a}\n******\n{b}\n******"),
        ("border", f"{a}\n******\n******\n{b}"),
        ("border", f"{a}\n******\n{b}\n******\n{SENTENCES[2]}"),
    ]


def _repeat(kw, prompt):
    p = kw["prompt_to_repeat"]
    return [
        ("pass", f"{p}\n{PROSE}"),
        ("fail", PROSE),
        ("border", f"{p.upper()} {PROSE}"),
        ("border", f"{p[:-1]}\n{PROSE}"),
    ]


def _end(kw, prompt):
    e = kw["end_phrase"]
    return [
        ("pass", f"{PROSE} {e}"),
        ("fail", f"{PROSE} {e} And more."),
        ("border", f'"{PROSE} {e.lower()}"'),
        ("border", f"{PROSE} **{e}**"),
    ]


def _capitals(kw, prompt):
    n = kw["capital_frequency"]
    base = words(6)

    def caps(m):
        return " ".join(f"WORD{i % 3}" for i in range(max(m, 0)))

    return [
        (
            "pass",
            f"{base} {caps(n - 1 if kw['capital_relation'] == 'less than' else n)}",
        ),
        ("border", f"{base} {caps(n)}"),
        ("border", f"{base} {caps(n + 1)}"),
        ("border", f"{base} {caps(n - 1)} FINE-TUNED I U.S."),
        ("border", f"{base} {caps(n - 2)} DON'T"),  # 2 tokens for NLTK
    ]


def _upper(kw, prompt):
    return [
        ("pass", sentences(2).upper()),
        ("fail", sentences(2)),
        ("border", LANG["de"].upper()),
        ("border", "1234 !!"),
    ]


def _lower(kw, prompt):
    return [
        ("pass", sentences(2).lower()),
        ("fail", sentences(2)),
        ("border", LANG["pt"].lower()),
        ("border", sentences(2).lower() + " I"),
    ]


def _comma(kw, prompt):
    return [
        ("pass", sentences(2)),
        ("fail", "Well, " + sentences(2)),
        ("border", sentences(2) + "\uff0c"),
    ]


def _quotation(kw, prompt):
    return [
        ("pass", f'"{PROSE}"'),
        ("fail", PROSE),
        ("border", '"'),
        ("border", f'  "{PROSE}"\n'),
        ("border", f"'{PROSE}'"),
    ]


GENERATORS = {
    "keywords:existence": _existence,
    "keywords:frequency": _frequency,
    "keywords:forbidden_words": _forbidden,
    "keywords:letter_frequency": _letter,
    "language:response_language": _language,
    "length_constraints:number_sentences": _n_sentences,
    "length_constraints:number_paragraphs": _paragraphs,
    "length_constraints:number_words": _n_words,
    "length_constraints:nth_paragraph_first_word": _nth_first,
    "detectable_content:number_placeholders": _placeholders,
    "detectable_content:postscript": _postscript,
    "detectable_format:number_bullet_lists": _bullets,
    "detectable_format:constrained_response": _constrained,
    "detectable_format:number_highlighted_sections": _highlights,
    "detectable_format:multiple_sections": _sections,
    "detectable_format:json_format": _json,
    "detectable_format:title": _title,
    "combination:two_responses": _two,
    "combination:repeat_prompt": _repeat,
    "startend:end_checker": _end,
    "change_case:capital_word_frequency": _capitals,
    "change_case:english_capital": _upper,
    "change_case:english_lowercase": _lower,
    "punctuation:no_comma": _comma,
    "startend:quotation": _quotation,
}


def loose_only(response: str) -> list[tuple[str, str]]:
    """Wrappings the strict check may reject and the loose one should accept."""
    first, _, rest = response.partition("\n")
    return [
        ("loose", f"Sure, here it is:\n{response}"),
        ("loose", f"{response}\nI hope this helps!"),
        ("loose", f"**{first}**\n{rest}" if rest else f"**{first}**"),
    ]


def cases(prompt: dict) -> list[tuple[str, str]]:
    out = []
    for iid, kw in zip(prompt["instruction_id_list"], prompt["kwargs"]):
        made = GENERATORS[iid](kw, prompt["prompt"])
        out += [(f"{iid}/{label}", r) for label, r in made]
        out += [(f"{iid}/{label}", r) for label, r in loose_only(made[0][1])]
    return out
