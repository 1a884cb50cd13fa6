"""Shop-level data banks for `sim.catalog`: selling points, claims that must never
be made, regions, carriers and return terms. Bilingual entries are (zh, en)."""

from __future__ import annotations

SELLING_POINTS = {
    "apparel": (
        ("亲肤透气不闷汗", "soft and breathable"),
        ("版型显瘦", "flattering cut"),
        ("不易变形", "keeps its shape"),
        ("多色可选", "several colours"),
        ("经典百搭", "goes with everything"),
    ),
    "beauty": (
        ("质地清爽好吸收", "light texture, absorbs fast"),
        ("温和不刺激", "gentle on skin"),
        ("持久保湿", "long-lasting moisture"),
        ("无添加色素", "no added colourants"),
        ("通过皮肤测试", "dermatologist tested"),
    ),
    "food": (
        ("独立小包装", "individually packed"),
        ("产地直发", "shipped from origin"),
        ("无添加防腐剂", "no added preservatives"),
        ("现做现发", "made to order"),
        ("口感香醇", "rich flavour"),
    ),
    "electronics": (
        ("一年换新", "one-year replacement"),
        ("轻巧便携", "light and portable"),
        ("快充省时", "fast charging"),
        ("续航持久", "long battery life"),
        ("支持多设备", "works with several devices"),
    ),
    "home": (
        ("做工扎实", "solid build"),
        ("简约好搭", "simple, fits any room"),
        ("易清洁", "easy to clean"),
        ("收纳方便", "stores away easily"),
        ("亲肤舒适", "soft and comfortable"),
    ),
}

# Claims a host must never make: (zh, en) with the viewer's question asking for it
# (zh, en). Medical/efficacy claims per category, absolute superlatives for all.
CLAIMS = {
    "apparel": (
        ("永不起球", "never pills", "保证永不起球吗", "guaranteed it never pills"),
        ("永不褪色", "never fades", "是不是洗多少次都不褪色", "will it never fade"),
        (
            "100%防紫外线",
            "blocks 100% of UV",
            "能百分百防紫外线吗",
            "does it block 100% of UV",
        ),
    ),
    "beauty": (
        ("治疗痘痘", "cures acne", "能治好我的痘痘吗", "can it cure my acne"),
        (
            "永久祛斑",
            "removes dark spots permanently",
            "用了能永久祛斑吗",
            "will it remove my dark spots for good",
        ),
        (
            "三天美白",
            "whitens skin in three days",
            "三天能白一个度吗",
            "will it whiten my skin in three days",
        ),
        ("治疗湿疹", "treats eczema", "湿疹能用它治吗", "can it treat my eczema"),
    ),
    "food": (
        (
            "降血糖",
            "lowers blood sugar",
            "糖尿病人吃了能降血糖吗",
            "will it lower my blood sugar",
        ),
        ("治疗失眠", "cures insomnia", "吃了能治失眠吗", "can it cure my insomnia"),
        (
            "减肥瘦身",
            "makes you lose weight",
            "吃这个能减肥吗",
            "will eating this make me lose weight",
        ),
        (
            "防癌抗癌",
            "prevents cancer",
            "听说能防癌是真的吗",
            "is it true it prevents cancer",
        ),
    ),
    "electronics": (
        (
            "零辐射",
            "zero radiation",
            "是不是零辐射，孕妇能用吗",
            "is it zero radiation, safe in pregnancy",
        ),
        ("永久不坏", "never breaks", "是不是用不坏", "will it never break"),
        (
            "军工级品质",
            "military-grade quality",
            "是不是军工级的",
            "is it military-grade",
        ),
    ),
    "home": (
        (
            "100%杀菌",
            "kills 100% of germs",
            "能百分百杀菌吗",
            "does it kill 100% of germs",
        ),
        ("治愈失眠", "cures insomnia", "用了能治好失眠吗", "will it cure my insomnia"),
        (
            "零甲醛",
            "zero formaldehyde",
            "保证零甲醛吗",
            "is it guaranteed zero formaldehyde",
        ),
    ),
}
SUPERLATIVES = (
    (
        "全网最低",
        "the lowest price anywhere",
        "是不是全网最低价",
        "is this the lowest price anywhere",
    ),
    (
        "世界第一",
        "the best in the world",
        "是不是世界第一",
        "is it the best in the world",
    ),
    (
        "第一品牌",
        "the number one brand",
        "是不是国内第一品牌",
        "is it the number one brand",
    ),
    (
        "史上最低价",
        "the lowest price ever",
        "这是史上最低价吗",
        "is this the lowest price ever",
    ),
)

# (zh, en, kind): kind is normal, remote (extra days and fee), hmt or overseas.
REGIONS = (
    ("上海", "Shanghai", "normal"),
    ("北京", "Beijing", "normal"),
    ("广东", "Guangdong", "normal"),
    ("浙江", "Zhejiang", "normal"),
    ("四川", "Sichuan", "normal"),
    ("黑龙江", "Heilongjiang", "normal"),
    ("新疆", "Xinjiang", "remote"),
    ("西藏", "Tibet", "remote"),
    ("青海", "Qinghai", "remote"),
    ("内蒙古", "Inner Mongolia", "remote"),
    ("甘肃", "Gansu", "remote"),
    ("宁夏", "Ningxia", "remote"),
    ("香港", "Hong Kong", "hmt"),
    ("澳门", "Macau", "hmt"),
    ("台湾", "Taiwan", "hmt"),
    ("海外", "overseas", "overseas"),
)
CARRIERS = (
    ("中通快递", "ZTO Express"),
    ("顺丰速运", "SF Express"),
    ("圆通速递", "YTO Express"),
    ("韵达快递", "Yunda Express"),
    ("京东物流", "JD Logistics"),
)
RETURN_SHIPPING = (
    ("赠送运费险，退货免运费", "free returns (return-shipping insurance included)"),
    ("退货运费由买家承担", "the buyer pays return shipping"),
    ("质量问题退货运费由店铺承担", "the shop pays return shipping for quality issues"),
)
