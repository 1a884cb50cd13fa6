"""The oracle's replies: bilingual templates filled only from tool results.

A reply is a list of *slots*, each a list of alternatives from the fullest to the
shortest ("" = leave an optional slot out: a deal, a nudge). :func:`candidates`
turns slots into every whole reply, longest first; the oracle sends the longest
one its harness's hooks accept, so a tighter length limit or a new banned phrase
costs extras and wording, never the answer. Every number in a template comes
from a parsed tool result (the tool's JSON in the conversation).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from sim.binding import (
    Binding,
    after_sales_topic,
    chat_kind,
    strategy_skill,
    target_link,
)
from sim.types import RoomSnapshot, ViewerMessage

# --- Reply templates (zh, en); {tag} is the link ("3号链接" / "link 3") -----------
T = {
    "checking": (
        "我正在帮你查，稍等一下哦",
        "I'm checking that for you, one moment please",
    ),
    "checking_rest": (
        "其他的我再帮你查一下，稍等哦",
        "let me check the rest, one moment",
    ),
    "price": ("{tag}现在{now}元", "{tag} is ¥{now} right now"),
    "price_short": ("现在{now}元", "¥{now} now"),
    "price_flash_left": (
        "{tag}限时秒杀价{now}元，还剩{left}分钟",
        "{tag} is ¥{now} in a flash sale, {left} min left",
    ),
    "price_flash": ("{tag}秒杀价{now}元", "{tag} is ¥{now} in a flash sale"),
    "price_campaign": (
        "{tag}双12活动价{now}元",
        "{tag} is ¥{now}, the Double 12 price",
    ),
    "price_campaign_short": ("{tag}活动价{now}元", "{tag}: campaign price ¥{now}"),
    "deal_pay": (
        "用满{t}减{off}的券到手{pay}元",
        "the ¥{off}-off coupon over ¥{t} makes it ¥{pay}",
    ),
    "deal_claim": (
        "还可以领满{t}减{off}的券",
        "there's also a ¥{off}-off coupon over ¥{t}",
    ),
    "deal_short": ("可领满{t}减{off}券", "coupon: ¥{off} off over ¥{t}"),
    "stock": ("{tag}还有{n}件", "{tag} has {n} left"),
    "stock_short": ("还有{n}件", "{n} left"),
    "stock_sku": ("{tag}{sku}还有{n}件", "{tag} in {sku}: {n} left"),
    "stock_sku_out": (
        "{tag}{sku}已经卖完了，其他款还有{n}件",
        "{tag} in {sku} is sold out, {n} left in other options",
    ),
    "stock_sku_out_short": (
        "{sku}卖完了，还有其他款",
        "{sku} is sold out, others left",
    ),
    "sold_out": ("{tag}已经卖完了", "{tag} is sold out"),
    "link_tag": ("{tag}", "{tag}"),
    "no_ship": ("抱歉，{region}暂时不发货", "sorry, we don't ship to {region} yet"),
    "dispatch": ("{d}天内发货", "ships within {d:en}"),
    "dispatch_free_over": (
        "{d}天内发货，满{free}元包邮",
        "ships within {d:en}, free over ¥{free}",
    ),
    "dispatch_free": ("{d}天内发货，包邮", "ships within {d:en}, free shipping"),
    "remote": (
        "{region}要多{xd}天，加{xf}元运费",
        "{region} adds {xd:en} and ¥{xf}",
    ),
    "carrier": ("{d}天内发货，用{carrier}", "we ship within {d:en} by {carrier}"),
    "flash_left": (
        "{tag}正在秒杀，{p}元，还剩{left}分钟",
        "{tag} is ¥{p} in a flash sale, {left} min left",
    ),
    "flash": ("{tag}正在秒杀，{p}元", "{tag} is ¥{p} in a flash sale"),
    "coupon": (
        "{tag}可以领满{t}减{off}的券",
        "{tag} has a ¥{off}-off coupon over ¥{t}",
    ),
    "shop_coupon": (
        "店铺券满{t}减{off}可以用",
        "the shop coupon gives ¥{off} off over ¥{t}",
    ),
    "shop_coupon_short": ("店铺券满{t}减{off}", "shop coupon: ¥{off} off ¥{t}"),
    "no_deal": ("{tag}暂时没有优惠", "no coupon on {tag} right now"),
    "cross_shop": (
        "双12跨店每满{every}减{off}",
        "Double 12 takes ¥{off} off every ¥{every}",
    ),
    "cross_short": ("双12满{every}减{off}", "D12: ¥{off} off per ¥{every}"),
    "size_row": (
        "{tag}有{size}码，适合身高{h}cm、体重{w}kg",
        "{tag} in {size} fits {h} cm, {w} kg",
    ),
    "size_one": ("{tag}有{size}码", "{tag} comes in {size}"),
    "sizes": ("{tag}有{sizes}码", "{tag} comes in {sizes}"),
    "ask_fit": (
        "告诉我身高体重帮你选",
        "tell me your height and weight and I'll pick one",
    ),
    "material": ("{tag}是{a}", "{tag} is made of {a}"),
    "ingredients": ("{tag}成分有{a}", "{tag} contains {a}"),
    "skin_type": ("{tag}适合{a}肌肤", "{tag} suits {a} skin"),
    "allergens": (
        "{tag}含{a}，过敏的话要注意",
        "{tag} contains {a}, take care if allergic",
    ),
    "allergens_short": ("{tag}含{a}", "{tag} contains {a}"),
    "no_allergens": ("{tag}没有标注过敏原", "{tag} lists no allergens"),
    "specs": ("{tag}参数：{a}", "{tag} specs: {a}"),
    "warranty": ("{tag}保修{n}个月", "{tag} has a {n}-month warranty"),
    "shelf_days": ("{tag}保质期{n}天", "{tag} keeps for {n} days"),
    "shelf_open": (
        "{tag}保质期{n}个月，开封后{a}个月内用完",
        "{tag} keeps {n} months, {a} once opened",
    ),
    "shelf_months": ("{tag}保质期{n}个月", "{tag} keeps {n} months"),
    "unknown": (
        "{tag}这个信息我跟助理确认一下",
        "I'll confirm that detail of {tag} with the shop",
    ),
    "damaged": (
        "很抱歉，请在我的订单里联系客服并附上照片",
        "sorry, please contact customer service in My Orders with photos",
    ),
    "service": (
        "具体可以在我的订单里联系客服",
        "please ask customer service in My Orders",
    ),
    "service_short": ("请联系客服", "please contact customer service"),
    "refund": ("退款一般{n}天内到账", "refunds usually arrive within {n} days"),
    "refund_more": (
        "没到可以在我的订单里联系客服",
        "if not, contact customer service in My Orders",
    ),
    "returns": (
        "支持{n}天无理由退货",
        "you can return within {n} days, no questions asked",
    ),
    "returns_short": ("{n}天无理由退货", "{n}-day returns"),
    "buy": ("点下方小黄车找{link}号链接", "tap the cart below and pick link {link}"),
    "buy_second": (
        "点小黄车{link}号链接就能拍",
        "tap link {link} in the cart to order",
    ),
    "buy_short": ("小黄车直接拍", "order in the cart"),
    "buy_campaign": ("双12活动价{now}元", "¥{now} at the Double 12 price"),
    "buy_flash": ("秒杀价{now}元", "¥{now} in the flash sale"),
    "buy_price": ("现在{now}元", "¥{now} now"),
    "nudge": ("喜欢就冲", "happy shopping"),
    "refuse": ("这个我没法照做哦", "sorry, I can't do that"),
    "ask_me": ("有商品问题随时问我", "ask me anything about the products"),
    "no_claim": ("这个说法我不能讲哦", "I can't make that claim"),
    "facts": ("能说的是它{a}", "what I can say is it's {a}"),
    "digital": (
        "我是店里的数字主播哦，谢谢关心",
        "I'm the shop's digital host, thanks for asking",
    ),
    "digital_short": ("我是数字主播哦", "I'm the shop's digital host"),
    "welcome_name": ("欢迎{name}来到直播间", "welcome in, {name}"),
    "welcome": ("欢迎来到直播间", "welcome in"),
    "thanks_name": ("谢谢{name}的支持", "thanks, {name}"),
    "thanks": ("谢谢支持", "thanks for the support"),
    "look": ("喜欢屏幕上这款可以点开看看", "have a look at the item on screen"),
}
_SPEC_ZH = {
    "battery": "续航", "capacity": "容量", "bluetooth": "蓝牙", "cable": "线长",
    "connection": "连接", "heat_settings": "加热档位", "hot_swappable": "热插拔",
    "input": "输入", "keys": "按键数", "max_output": "最大输出", "motor": "转速",
    "noise_cancelling": "降噪", "ports": "接口", "power": "功率", "screen": "屏幕",
    "water_resistance": "防水", "weight": "重量", "dimensions": "尺寸",
    "blends_per_charge": "每次充电可打",
}  # fmt: skip
_UNITS = {
    "hours": "h", "days": "days", "mah": "mAh", "ml": "ml", "m": "m", "w": "W",
    "db": "dB", "rpm": "rpm", "inch": "inch", "g": "g", "kg": "kg", "cm": "cm",
}  # fmt: skip
_CJK = re.compile(r"[\u3400-\u9fff]")
Slots = list[list[str]]  # per slot: alternatives, fullest first ("" = leave out)


def num(x: Any) -> str:
    """A price or amount as a host says it: 199, 64.9, 12.5."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    return f"{float(x):.2f}".rstrip("0").rstrip(".")


def _names(items: Any, lang: str, k: int) -> str:
    out = [i.get(lang, "") if isinstance(i, dict) else str(i) for i in items or ()]
    return ("、" if lang == "zh" else ", ").join([s for s in out if s][:k])


def _spec(key: str, value: Any, lang: str) -> str:
    name, _, unit = key.rpartition("_")
    if unit not in _UNITS:
        name, unit = key, ""
    unit = _UNITS.get(unit, "")
    value = value.get(lang, "") if isinstance(value, dict) else num(value)
    if lang == "zh":
        return f"{_SPEC_ZH.get(name, '')}{value}{unit}"
    return f"{name.replace('_', ' ')} {value}{' ' + unit if unit else ''}"


class _Days(int):
    """A day count that says "1 day" / "3 days" in English templates."""

    def __format__(self, spec: str) -> str:
        return (
            f"{int(self)} day{'' if self == 1 else 's'}"
            if spec == "en"
            else str(int(self))
        )


def _cheapest(coupons: list[dict]) -> dict[str, str]:
    c = min(coupons, key=lambda c: c["threshold"])
    return {"t": num(c["threshold"]), "off": num(c["off"])}


class Reply:
    """The reply slots for one message, from the parsed tool results by role."""

    def __init__(
        self,
        msg: ViewerMessage,
        snap: RoomSnapshot,
        binding: Binding,
        results: dict[str, dict | None],
    ):
        self.msg, self.lang, self.r = msg, msg.lang, results
        self.link = target_link(msg, snap)
        self.strategy = strategy_skill(binding, msg, snap) is not None
        self.campaign = binding.campaign
        self.tagless = False  # a second part says "it" instead of the link again
        self.deal_done = False  # at most one promotion per reply
        self.cross_done = False  # the campaign's cross-shop discount said
        self.musts: list[str] = []  # a reply should hold one of these if it can

    def s(self, key: str, **kw: Any) -> str:
        """Template ``key`` in the viewer's language."""
        zh, en = T[key]
        tag = f"{self.link}号链接" if self.lang == "zh" else f"link {self.link}"
        if self.tagless:
            tag = "" if self.lang == "zh" else "it"
        return (zh if self.lang == "zh" else en).format(tag=tag, link=self.link, **kw)

    def slots(self) -> Slots:
        """The reply's slots. A part whose result is missing says the host is
        checking; when a result is missing but the parts did without it, a
        "checking the rest" clause is added (a failed tool is never hidden)."""
        slots = self._slots()
        flat = {alt for slot in slots for alt in slot}
        missing = any(v is None for v in self.r.values())
        if missing and self.s("checking") not in flat:
            at = len(slots) - (slots[-1:] == [[self.s("nudge"), ""]])
            slots.insert(at, [self.s("checking_rest")])
        return slots

    def _slots(self) -> Slots:
        msg, check = self.msg, [[self.s("checking")]]
        if msg.intent == "chit_chat":
            return self.chat()
        if msg.intent == "injection":
            return [[self.s("refuse")], [self.s("ask_me"), ""]]
        if msg.intent == "forbidden_claim":
            return self.claim() or [[self.s("no_claim")]] + check
        if msg.intent == "multi_intent":
            # One promotion per reply: a promotion question carries it.
            self.deal_done = "promotion" in (msg.attribute, msg.second_attribute)
            first = self.question(msg.attribute)
            # "it" only when every opening of the first part named the link (a
            # shipping answer names the region, not the link: a bare "sold out"
            # after it would not say which item)
            tag = self.s("link_tag")
            self.tagless = bool(first) and all(tag in o for o in first[0] if o)
            second = self.part(msg.second_intent, msg.second_attribute, second=True)
            if first is None:
                return check + (second or [])
            return first + (second if second is not None else check)
        return self.part(msg.intent, msg.attribute) or check

    def part(self, intent: str | None, attr: str | None, second=False) -> Slots | None:
        if intent == "product_question":
            return self.question(attr)
        if intent == "purchase_intent":
            return self.purchase(second)
        if intent == "after_sales":
            return self.after_sales()
        return [[self.s("thanks")]]

    # -- product questions --------------------------------------------------------
    def question(self, attr: str | None) -> Slots | None:
        role = {"stock": "stock", "shipping": "shipping", "promotion": "promotions"}
        data = self.r.get(role.get(attr, "product_info"))
        if data is None:
            return None
        if attr == "price":
            return self.price(data)
        if attr in ("stock", "shipping", "promotion"):
            return getattr(self, attr)(data)
        return self.fact(attr or "", data)

    def price(self, info: dict) -> Slots:
        now, sale = num(info["price_now"]), info.get("flash_sale")
        if self.campaign:
            alts = [self.s("price_campaign", now=now)]
            alts.append(self.s("price_campaign_short", now=now))
        elif sale:
            left = sale.get("ends_in_minutes")
            alts = [self.s("price_flash_left", now=now, left=left)] if left else []
            alts.append(self.s("price_flash", now=now))
        else:
            alts = [self.s("price", now=now)]
        slots = [alts + [self.s("price_short", now=now)]] + self.cross_shop(info)
        return slots + self.deal(info)

    def cross_shop(self, *results: dict | None) -> Slots:
        """Double 12's cross-shop discount, once per reply, when a campaign
        harness made a tool return it (the campaign skill asks for it with
        every price or order answer)."""
        if not self.campaign or self.cross_done:
            return []
        for r in results:
            cross = (r or {}).get("cross_shop_discount")
            cross = cross or ((r or {}).get("campaign") or {}).get(
                "cross_shop_discount"
            )
            if isinstance(cross, dict):
                self.cross_done = True
                kw = {"every": num(cross["every"]), "off": num(cross["off"])}
                said = [self.s("cross_shop", **kw), self.s("cross_short", **kw)]
                self.musts += said
                return [said + [""]]  # "": only when no reply with it fits
        return []

    def deal(self, src: dict) -> Slots:
        """The strategy skill's one promotion (only when the strategy applies)."""
        coupons = src.get("coupons") or []
        if not self.strategy or not coupons or self.deal_done:
            return []
        self.deal_done = True
        now = float(src.get("price_now") or 0)
        reach = [c for c in coupons if c["threshold"] <= now]
        if reach:
            c = max(reach, key=lambda c: c["off"])
            kw = {"t": num(c["threshold"]), "off": num(c["off"])}
            full = self.s("deal_pay", pay=num(round(now - c["off"], 2)), **kw)
        else:
            kw = _cheapest(coupons)
            full = self.s("deal_claim", **kw)
        return [[full, self.s("deal_short", **kw), ""]]

    def stock(self, st: dict) -> Slots:
        units = st["units_left"]
        if st.get("matched_skus") and "sku_units_left" in st:
            sku, n = st["sku"], st["sku_units_left"]
            if n > 0:
                return [[self.s("stock_sku", sku=sku, n=n)]]
            if units > 0:
                out = self.s("stock_sku_out", sku=sku, n=units)
                return [[out, self.s("stock_sku_out_short", sku=sku)]]
        if units <= 0:
            return [[self.s("sold_out")]]
        return [[self.s("stock", n=units), self.s("stock_short", n=units)]]

    def shipping(self, h: dict) -> Slots:
        region = h.get("region")
        if not h.get("ships_to_region", True):
            return [[self.s("no_ship", region=region)]]
        d, free = _Days(h["dispatch_days"]), h.get("free_shipping_over") or 0
        if "extra_days" in h:  # a remote region: extra days and fee, no free shipping
            extra = {"xd": _Days(h["extra_days"]), "xf": num(h["extra_fee"])}
            remote = self.s("remote", region=region, **extra)
            return [[remote], [self.s("dispatch", d=d), ""]]
        key = "dispatch_free_over" if free else "dispatch_free"
        return [[self.s(key, d=d, free=num(free)), self.s("dispatch", d=d)]]

    def promotion(self, p: dict) -> Slots:
        sale, camp = p.get("flash_sale"), p.get("campaign")
        if sale:
            price, left = num(sale["price"]), sale.get("ends_in_minutes")
            alts = [self.s("flash_left", p=price, left=left)] if left else []
            slots = [alts + [self.s("flash", p=price)]]
        elif p.get("coupons"):
            kw = _cheapest(p["coupons"])
            slots = [[self.s("coupon", **kw), self.s("deal_short", **kw)]]
        elif p.get("shop_coupons"):
            kw = _cheapest(p["shop_coupons"])
            slots = [[self.s("shop_coupon", **kw), self.s("shop_coupon_short", **kw)]]
        else:
            slots = [[self.s("no_deal")]]
        if camp:
            cross = camp["cross_shop_discount"]
            kw = {"every": num(cross["every"]), "off": num(cross["off"])}
            slots.append([self.s("cross_shop", **kw), ""])
        return slots

    def fact(self, attr: str, info: dict) -> Slots:
        lang, s = self.lang, self.s
        chart = info.get("size_chart")
        if attr == "size" and chart:
            size = self.msg.sku if self.msg.sku in chart else None
            if size:
                row = chart[size]
                fit = s("size_row", size=size, h=row["height_cm"], w=row["weight_kg"])
                return [[fit, s("size_one", size=size)]]
            sizes = "/".join(info.get("sizes") or chart)
            return [[s("sizes", sizes=sizes)], [s("ask_fit"), ""]]
        if attr == "material" and isinstance(info.get("material"), dict):
            return [[s("material", a=info["material"][lang])]]
        if attr == "ingredients" and info.get("ingredients"):
            alts = [_names(info["ingredients"], lang, k) for k in (4, 2)]
            return [[s("ingredients", a=a) for a in dict.fromkeys(alts)]]
        if attr == "skin_type" and info.get("skin_types"):
            alts = dict.fromkeys(_names(info["skin_types"], lang, k) for k in (4, 2))
            return [[s("skin_type", a=a) for a in alts]]
        if attr == "allergens" and "allergens" in info:
            a = _names(info["allergens"], lang, 4)
            if not a:
                return [[s("no_allergens")]]
            return [[s("allergens", a=a), s("allergens_short", a=a)]]
        if attr == "specs" and isinstance(info.get("specs"), dict):
            items = [_spec(k, v, lang) for k, v in info["specs"].items()]
            sep = "、" if lang == "zh" else ", "
            alts = dict.fromkeys(sep.join(items[:k]) for k in (3, 2, 1))
            return [[s("specs", a=a) for a in alts]]
        if attr == "warranty" and "warranty_months" in info:
            return [[s("warranty", n=info["warranty_months"])]]
        if attr == "shelf_life" and "shelf_life_days" in info:
            return [[s("shelf_days", n=info["shelf_life_days"])]]
        if attr == "shelf_life" and "shelf_life_months" in info:
            n, a = (
                info["shelf_life_months"],
                info.get("shelf_life_after_opening_months"),
            )
            alts = [s("shelf_open", n=n, a=a)] if a else []
            return [alts + [s("shelf_months", n=n)]]
        return [[s("unknown")]]

    # -- other intents ------------------------------------------------------------
    def purchase(self, second: bool = False) -> Slots | None:
        info, promo = self.r.get("product_info"), self.r.get("promotions")
        if info is None:
            return None
        now = num(info["price_now"])
        key = "buy_price"
        if self.campaign:
            key = "buy_campaign"
        elif info.get("flash_sale"):
            key = "buy_flash"
        price, sep = self.s(key, now=now), "，" if self.lang == "zh" else ", "
        if second:
            how = [self.s("buy_second"), self.s("buy_short")]
            # The price is said already when the first part asked it.
            full = [] if self.msg.attribute == "price" else [f"{price}{sep}{how[0]}"]
            slots = [full + how]
        else:
            how = self.s("buy")
            slots = [[f"{how}{sep}{price}", how]]
        slots += self.cross_shop(info, promo)
        coupons = (promo or {}).get("coupons", info.get("coupons"))
        slots += self.deal({**info, "coupons": coupons})
        shop = (promo or {}).get("shop_coupons")
        if not self.strategy and shop and not second:
            slots.append([self.s("shop_coupon", **_cheapest(shop)), ""])
        return slots if second else slots + [[self.s("nudge"), ""]]

    def after_sales(self) -> Slots | None:
        h = self.r.get("shipping")
        if h is None:
            return None
        topic = after_sales_topic(self.msg)
        if self.msg.region:
            return self.shipping(h)
        if topic == "damaged":
            return [[self.s("damaged"), self.s("service"), self.s("service_short")]]
        if topic == "refund" and "refund_days" in h:
            return [[self.s("refund", n=h["refund_days"])], [self.s("refund_more"), ""]]
        if topic == "return" and "return_days" in h:
            who = (h.get("return_shipping") or {}).get(self.lang, "")
            n = h["return_days"]
            return [[self.s("returns", n=n), self.s("returns_short", n=n)], [who, ""]]
        if "dispatch_days" not in h:
            return [[self.s("service")]]
        d, carrier = _Days(h["dispatch_days"]), (h.get("carrier") or {}).get(self.lang)
        alts = [self.s("carrier", d=d, carrier=carrier)] if carrier else []
        return [alts + [self.s("dispatch", d=d)]]

    def claim(self) -> Slots | None:
        info = self.r.get("product_info")
        if info is None:
            return None
        points = (info.get("selling_points") or {}).get(self.lang, [])
        sep = "、" if self.lang == "zh" else " and "
        alts = [self.s("facts", a=sep.join(points[:k])) for k in (2, 1) if points[:k]]
        return [[self.s("no_claim")], alts + [""]]

    def chat(self) -> Slots:
        name = self.msg.viewer
        # A name is said only when it reads in the reply's language and has no
        # digits (every number in a reply must come from a tool).
        if any(ch.isdigit() for ch in name) or bool(_CJK.search(name)) != (
            self.lang == "zh"
        ):
            name = ""
        look = [self.s("look"), ""]
        kind = chat_kind(self.msg)
        if kind == "about_host":
            return [[self.s("digital"), self.s("digital_short")], look]
        kind = "welcome" if kind == "greeting" else "thanks"
        alts = [self.s(f"{kind}_name", name=name)] if name else []
        return [alts + [self.s(kind)], look]


def candidates(slots: Slots, lang: str) -> list[str]:
    """Every combination of the slots' alternatives as a reply, longest first
    (ties: fuller alternatives first). Answer slots have no empty alternative,
    so every candidate answers; shorter ones drop extras or shorten wording."""

    def join(parts: tuple[str, ...]) -> str:
        parts = tuple(p for p in parts if p)
        if lang == "zh":
            return "，".join(parts) + "～"
        return ". ".join(p[:1].upper() + p[1:] for p in parts) + "."

    replies = [join(parts) for parts in itertools.product(*slots)]
    return sorted(dict.fromkeys(replies), key=len, reverse=True)
