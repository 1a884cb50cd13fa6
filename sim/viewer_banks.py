"""Banks shared by both languages of `sim.viewers`: the templates of each
language, emoji, nicknames, after-sales topics and the claim questions."""

from __future__ import annotations

from sim import catalog_shop_banks as CB
from sim import viewer_banks_en, viewer_banks_zh

TEMPLATES = {"zh": viewer_banks_zh.BANK, "en": viewer_banks_en.BANK}
AFTER_SALES_TOPICS = ("return", "refund", "shipping_time", "region", "damaged")
# Topics a buyer adds to a product question in a multi-intent message.
MULTI_AFTER_SALES_TOPICS = ("return", "shipping_time", "region")
# Second part of a multi-intent message and its weight.
SECOND_INTENTS = (("product_question", 0.4), ("after_sales", 0.35),
                  ("purchase_intent", 0.25))  # fmt: skip

EMOJI = ("😍", "🔥", "❤️", "👍", "🙏", "😂", "🥰", "👀", "✨", "💕", "🤔", "😭")

# Claim (zh) -> the viewer's question asking the host to make it, per language.
CLAIM_QUESTIONS = {
    c[0]: {"zh": c[2], "en": c[3]}
    for claims in (*CB.CLAIMS.values(), CB.SUPERLATIVES)
    for c in claims
}
# Region names a viewer may write, (zh, en).
REGIONS = tuple((r[0], r[1]) for r in CB.REGIONS)

# fmt: off
_NICK_ZH_A = ("爱吃", "快乐的", "元气", "不吃香菜的", "熬夜的", "温柔的", "想变瘦的",
              "会飞的", "减肥中的", "追剧的")
_NICK_ZH_B = ("草莓", "小猫咪", "小鹿", "橙子", "柠檬", "兔兔", "星星", "阿狸", "土豆",
              "奶茶", "饺子", "小熊")
_NICK_EN_A = ("coffee", "sunny", "lucky", "moon", "kiki", "bubble", "mango", "pixel",
              "lily", "tofu")
_NICK_EN_B = ("_lover", "girl", "cat", "99", "_x", "bean", "star", "2024", "_shop",
              "bunny")
# fmt: on
N_VIEWERS = 100_000


def nickname(viewer: int) -> str:
    """A viewer's display name, a fixed function of the viewer id."""
    style, i = viewer % 3, viewer // 3
    if style == 0:
        a = _NICK_ZH_A[i % len(_NICK_ZH_A)]
        b = _NICK_ZH_B[(i // len(_NICK_ZH_A)) % len(_NICK_ZH_B)]
        return f"{a}{b}" + (str(i % 100) if i % 7 == 0 else "")
    if style == 1:
        a = _NICK_EN_A[i % len(_NICK_EN_A)]
        b = _NICK_EN_B[(i // len(_NICK_EN_A)) % len(_NICK_EN_B)]
        return f"{a}{b}"
    return f"tb{(i * 7919 + 104729) % 10**7:07d}"
