"""Data banks for `sim.catalog`: brands, product types and their facts.

Every bilingual entry is a `(zh, en)` pair. Brand names are invented; each split
draws from its own pool, so no product (and so no catalog) is ever shared between
train, dev and test.
"""

from __future__ import annotations

# fmt: off
BRANDS = {
    "train": {
        "apparel": ("Yunshang", "Mianmian", "Qingyi", "Lanfeng", "Urbanleaf",
                    "Softday", "Beimu", "Northpine"),
        "beauty": ("Lumiya", "Shuiguang", "Florane", "Yanxi", "Dewlab", "Roselle",
                   "Qingfu", "Mistique"),
        "food": ("Xiangman", "Tianyuan", "Goldfield", "Haoweidao", "Nutfarm",
                 "Shanye", "Maizi", "Honeyvale"),
        "electronics": ("Voltix", "Zhiyin", "Pulsewave", "Lingdong", "Nexacore",
                        "Sonora", "Kuaichong", "Brightbit"),
        "home": ("Jiayi", "Cozynest", "Muzhi", "Linenhouse", "Anju", "Woodloft",
                 "Qingshe", "Calmroom"),
    },
    "dev": {
        "apparel": ("Fengxu", "Cottonway", "Ranyi", "Stitchly", "Baiyue", "Linmo",
                    "Dawnthread", "Kuanyi"),
        "beauty": ("Aquelle", "Xuerun", "Petalis", "Mingyan", "Glowra", "Sutian",
                   "Velisse", "Huayan"),
        "food": ("Guoxiang", "Orchardia", "Mianzhi", "Hearthmill", "Caomei",
                 "Shuangxi", "Grainly", "Yuweixuan"),
        "electronics": ("Ampero", "Shengke", "Ionix", "Xinling", "Corevolt",
                        "Echolane", "Chuanyin", "Quanta Pods"),
        "home": ("Nuanwu", "Hearthly", "Songmu", "Duvetta", "Xiju", "Oakmere",
                 "Ruyu", "Stillwater"),
    },
    "test": {
        "apparel": ("Jinmian", "Loomstone", "Yiran", "Tailorin", "Suyi", "Weave & Co",
                    "Chenxiu", "Fablecloth"),
        "beauty": ("Serenova", "Bingzhi", "Aurelle", "Ningyan", "Purelea", "Xiangfu",
                   "Cosmila", "Yunjing"),
        "food": ("Liangtian", "Harvestwell", "Gufeng", "Crumbly", "Xianzhi",
                 "Meadowbee", "Nongjia", "Savorine"),
        "electronics": ("Tekora", "Leidian", "Wavix", "Chaopin", "Fluxon",
                        "Auralink", "Suxiang", "Voltaire Lab"),
        "home": ("Jingju", "Nestwell", "Taomu", "Pillowy", "Anxin", "Birchline",
                 "Xianju", "Hushome"),
    },
}

# Title tags per category (zh, en), prepended to the type name.
TAGS = {
    "apparel": (("2025秋冬新款", "2025 fall/winter"), ("男女同款", "unisex"),
                ("宽松百搭", "relaxed-fit"), ("", "")),
    "beauty": (("升级版", "upgraded"), ("大容量", "value-size"), ("", "")),
    "food": (("家庭装", "family pack"), ("直播专享", "live-room exclusive"), ("", "")),
    "electronics": (("2025新款", "2025 edition"), ("", "")),
    "home": (("北欧风", "Nordic-style"), ("", "")),
}

COLOURS = (
    ("黑色", "black"), ("白色", "white"), ("米白", "ivory"), ("雾霾蓝", "haze blue"),
    ("燕麦色", "oatmeal"), ("卡其", "khaki"), ("酒红", "burgundy"), ("藏青", "navy"),
    ("浅灰", "light grey"), ("牛仔蓝", "denim blue"), ("奶茶色", "milk-tea beige"),
    ("橄榄绿", "olive green"),
)
SIZES = ("S", "M", "L", "XL")
# Recommended build per size: (height_cm, weight_kg) ranges.
SIZE_FIT = {
    "S": ("150-158", "40-50"), "M": ("158-165", "50-58"),
    "L": ("165-172", "58-66"), "XL": ("172-180", "66-75"),
}
# Chart columns per garment cut: name -> (value at S, step per size).
CUTS = {
    "top": {"chest_cm": (92, 4), "length_cm": (64, 2), "shoulder_cm": (40, 1.5)},
    "bottom": {"waist_cm": (64, 4), "hip_cm": (92, 4), "length_cm": (98, 2)},
    "dress": {"chest_cm": (84, 4), "waist_cm": (66, 4), "length_cm": (110, 2)},
}
APPAREL_CARE = (
    ("30°C以下机洗，不可漂白", "machine wash below 30°C, do not bleach"),
    ("建议手洗，平铺晾干", "hand wash recommended, dry flat"),
    ("可机洗，反面晾晒", "machine washable, dry inside out"),
)
# (zh, en, min price, max price, cut, materials)
APPAREL = (
    ("圆领纯棉T恤", "crew-neck cotton T-shirt", 49, 159, "top",
     (("100%棉", "100% cotton"), ("95%棉 5%氨纶", "95% cotton 5% spandex"))),
    ("连帽卫衣", "hoodie", 99, 299, "top",
     (("80%棉 20%聚酯纤维", "80% cotton 20% polyester"),
      ("60%棉 40%聚酯纤维", "60% cotton 40% polyester"))),
    ("直筒牛仔裤", "straight-leg jeans", 129, 399, "bottom",
     (("98%棉 2%氨纶", "98% cotton 2% spandex"), ("100%棉", "100% cotton"))),
    ("羊毛针织开衫", "wool-blend cardigan", 199, 599, "top",
     (("70%羊毛 30%锦纶", "70% wool 30% nylon"),
      ("50%羊毛 50%腈纶", "50% wool 50% acrylic"))),
    ("轻薄羽绒服", "lightweight down jacket", 299, 899, "top",
     (("面料100%锦纶，填充90%白鸭绒", "shell 100% nylon, fill 90% white duck down"),)),
    ("碎花连衣裙", "floral midi dress", 159, 459, "dress",
     (("100%聚酯纤维", "100% polyester"), ("100%粘纤", "100% viscose"))),
    ("高腰阔腿裤", "high-waist wide-leg trousers", 99, 299, "bottom",
     (("68%粘纤 29%锦纶 3%氨纶", "68% viscose 29% nylon 3% spandex"),)),
    ("冰丝防晒衣", "UV-protection jacket", 79, 199, "top",
     (("88%锦纶 12%氨纶", "88% nylon 12% spandex"),)),
)

SKIN_TYPES = (("干性", "dry"), ("油性", "oily"), ("混合性", "combination"),
              ("中性", "normal"), ("敏感肌", "sensitive"))
ALCOHOL = ("乙醇", "alcohol")
FRAGRANCE = ("香精", "fragrance")
BEAUTY_PACKS = (("单瓶装", "single bottle"), ("两瓶装", "twin pack"),
                ("旅行装", "travel size"), ("正装+小样", "full size + sample"))
# (zh, en, min price, max price, volumes ml, key ingredients)
BEAUTY = (
    ("玻尿酸保湿精华", "hyaluronic acid hydrating serum", 89, 399, (30, 50),
     (("透明质酸钠", "sodium hyaluronate"), ("泛醇", "panthenol"),
      ("积雪草提取物", "centella asiatica extract"))),
    ("氨基酸洁面乳", "amino-acid facial cleanser", 39, 129, (100, 120),
     (("月桂酰谷氨酸钠", "sodium lauroyl glutamate"), ("甘油", "glycerin"),
      ("尿囊素", "allantoin"))),
    ("烟酰胺亮肤身体乳", "niacinamide brightening body lotion", 59, 169, (200, 250),
     (("烟酰胺", "niacinamide"), ("乳木果油", "shea butter"), ("甘油", "glycerin"))),
    ("清爽防晒乳 SPF50+", "lightweight sunscreen SPF50+", 79, 259, (40, 50),
     (("二氧化钛", "titanium dioxide"), ("氧化锌", "zinc oxide"),
      ("维生素E", "tocopherol"))),
    ("修护面霜", "barrier repair cream", 129, 499, (50,),
     (("神经酰胺NP", "ceramide NP"), ("角鲨烷", "squalane"),
      ("胆甾醇", "cholesterol"))),
    ("补水爽肤水", "hydrating toner", 59, 229, (150, 200),
     (("甘油", "glycerin"), ("透明质酸钠", "sodium hyaluronate"),
      ("马齿苋提取物", "purslane extract"))),
    ("温和卸妆油", "gentle cleansing oil", 69, 259, (150, 200),
     (("霍霍巴籽油", "jojoba seed oil"), ("角鲨烷", "squalane"),
      ("聚甘油-10二油酸酯", "polyglyceryl-10 dioleate"))),
    ("睡眠面膜", "overnight sleeping mask", 59, 199, (70, 100),
     (("透明质酸钠", "sodium hyaluronate"), ("神经酰胺NP", "ceramide NP"),
      ("燕麦仁提取物", "oat kernel extract"))),
)

STORAGE = {"room": ("常温阴凉干燥处保存", "store in a cool, dry place"),
           "chilled": ("0-4°C冷藏", "keep refrigerated at 0-4°C"),
           "frozen": ("-18°C冷冻保存", "keep frozen at -18°C")}
# (zh, en, min price, max price, net weights g, shelf life days, storage, fresh,
#  ingredients, allergens, origins, variants)
FOOD = (
    ("每日坚果混合装", "daily mixed nuts", 49, 139, (750, 1050), 180, "room", False,
     (("腰果", "cashews"), ("巴旦木", "almonds"), ("核桃仁", "walnuts"),
      ("蔓越莓干", "dried cranberries")),
     (("坚果", "tree nuts"),), (("新疆", "Xinjiang"), ("云南", "Yunnan")),
     (("30袋装", "30 packs"), ("15袋装", "15 packs"))),
    ("手撕牛肉干", "shredded beef jerky", 39, 119, (250, 500), 270, "room", False,
     (("牛肉", "beef"), ("白砂糖", "sugar"), ("酿造酱油", "soy sauce"),
      ("食用盐", "salt"), ("香辛料", "spices")),
     (("大豆", "soy"), ("小麦", "wheat")), (("内蒙古", "Inner Mongolia"),),
     (("原味", "original"), ("香辣味", "spicy"))),
    ("云南小粒咖啡豆", "Yunnan arabica coffee beans", 59, 169, (454, 908), 365,
     "room", False, (("阿拉比卡咖啡豆", "arabica coffee beans"),), (),
     (("云南", "Yunnan"),), (("中度烘焙", "medium roast"), ("深度烘焙", "dark roast"))),
    ("低糖全麦面包", "low-sugar whole-wheat bread", 29, 69, (800, 1000), 15, "room",
     False, (("全麦粉", "whole-wheat flour"), ("鸡蛋", "eggs"), ("牛奶", "milk"),
             ("酵母", "yeast")),
     (("小麦", "wheat"), ("鸡蛋", "eggs"), ("牛奶", "milk")), (("浙江", "Zhejiang"),),
     (("原味", "original"), ("黑麦", "rye"))),
    ("冷冻黑虎虾", "frozen black tiger prawns", 89, 259, (500, 1000), 365, "frozen",
     True, (("黑虎虾", "black tiger prawns"), ("食用盐", "salt")),
     (("甲壳类", "crustaceans"),), (("广西", "Guangxi"), ("越南进口", "Vietnam")),
     (("20-25只/斤", "20-25 per 500 g"), ("15-20只/斤", "15-20 per 500 g"))),
    ("五常稻花香大米", "Wuchang fragrant rice", 49, 129, (2500, 5000), 365, "room",
     False, (("粳米", "japonica rice"),), (), (("黑龙江", "Heilongjiang"),),
     (("5斤装", "2.5 kg bag"), ("10斤装", "5 kg bag"))),
    ("阳光玫瑰葡萄", "Shine Muscat grapes", 39, 129, (1000, 2000), 7, "chilled",
     True, (("阳光玫瑰葡萄", "Shine Muscat grapes"),), (),
     (("云南", "Yunnan"), ("浙江", "Zhejiang")),
     (("2斤装", "1 kg box"), ("4斤装", "2 kg box"))),
    ("柳州螺蛳粉", "Liuzhou river-snail rice noodles", 29, 79, (300, 400), 180,
     "room", False, (("米粉", "rice noodles"), ("螺蛳汤料", "river-snail broth"),
                     ("酸笋", "pickled bamboo shoots"), ("花生", "peanuts")),
     (("花生", "peanuts"), ("大豆", "soy"), ("小麦", "wheat")),
     (("广西", "Guangxi"),), (("3袋装", "3 packs"), ("5袋装", "5 packs"))),
    ("百花蜂蜜", "wildflower honey", 49, 159, (500, 1000), 730, "room", False,
     (("蜂蜜", "honey"),), (), (("陕西", "Shaanxi"), ("新西兰进口", "New Zealand")),
     (("单瓶", "1 jar"), ("两瓶", "2 jars"))),
)

DEVICE_COLOURS = (("曜石黑", "obsidian black"), ("云母白", "mica white"),
                  ("远峰蓝", "sierra blue"), ("薄荷绿", "mint green"))
# (zh, en, min price, max price, {spec: choices}, warranty months choices)
ELECTRONICS = (
    ("降噪蓝牙耳机", "noise-cancelling Bluetooth earbuds", 199, 899,
     {"bluetooth": ("5.3", "5.4"), "battery_hours": (24, 30, 36, 40),
      "noise_cancelling_db": (35, 42, 48), "water_resistance": ("IPX4", "IPX5")},
     (12,)),
    ("快充充电宝", "fast-charging power bank", 99, 299,
     {"capacity_mah": (10000, 20000), "max_output_w": (22.5, 30, 65),
      "weight_g": (220, 320, 410), "ports": ("2×USB-C + 1×USB-A", "1×USB-C + 2×USB-A")},
     (12, 18)),
    ("智能手表", "smartwatch", 399, 1599,
     {"screen_inch": (1.43, 1.6, 1.85), "battery_days": (7, 10, 14),
      "water_resistance": ("5ATM",), "weight_g": (32, 38, 45)}, (12, 24)),
    ("便携榨汁杯", "portable blender cup", 79, 199,
     {"capacity_ml": (300, 350, 400), "battery_mah": (1500, 2000),
      "blends_per_charge": (12, 15, 20)}, (12,)),
    ("三模机械键盘", "tri-mode mechanical keyboard", 199, 699,
     {"keys": (75, 87, 98), "connection": ("2.4G / Bluetooth / USB-C",),
      "battery_mah": (4000, 8000), "hot_swappable": ("yes", "no")}, (12, 24)),
    ("高速吹风机", "high-speed hair dryer", 299, 1299,
     {"power_w": (1400, 1600), "motor_rpm": (110000, 130000),
      "weight_g": (320, 390), "heat_settings": (3, 4)}, (24,)),
    ("磁吸无线充电器", "magnetic wireless charger", 69, 259,
     {"max_output_w": (15, 25), "input": ("USB-C 9V/3A",), "cable_m": (1, 1.5)},
     (12, 18)),
)

# (zh, en, min price, max price, (l, w, h) cm, weight kg, materials, care, variants)
HOME = (
    ("记忆棉枕头", "memory-foam pillow", 79, 299, (60, 40, 12), 1.3,
     (("慢回弹记忆棉，外套100%棉", "slow-rebound memory foam, 100% cotton cover"),),
     ("枕套可机洗，枕芯不可水洗", "cover machine washable; do not wash the core"),
     (("标准款", "standard"), ("加高款", "high-loft"))),
    ("全棉四件套", "4-piece cotton bedding set", 199, 699, (220, 240, 5), 2.6,
     (("100%长绒棉", "100% long-staple cotton"), ("60支天丝", "60s Tencel lyocell")),
     ("30°C以下轻柔机洗", "gentle machine wash below 30°C"),
     (("1.5m床", "1.5 m bed"), ("1.8m床", "1.8 m bed"))),
    ("釉下彩陶瓷餐具套装", "underglaze ceramic dinnerware set", 99, 399,
     (45, 30, 20), 4.5, (("釉下彩陶瓷", "underglaze ceramic"),),
     ("可用洗碗机和微波炉", "dishwasher and microwave safe"),
     (("10件套", "10-piece"), ("16件套", "16-piece"))),
    ("不锈钢保温杯", "stainless-steel vacuum flask", 59, 199, (7, 7, 24), 0.35,
     (("316不锈钢内胆", "316 stainless-steel liner"),),
     ("请勿放入洗碗机", "not dishwasher safe"),
     (("奶油白", "cream white"), ("雾霾蓝", "haze blue"), ("樱花粉", "sakura pink"))),
    ("可折叠收纳箱", "foldable storage box", 39, 129, (50, 35, 30), 1.1,
     (("PP塑料", "PP plastic"),), ("湿布擦拭即可", "wipe clean with a damp cloth"),
     (("大号", "large"), ("中号", "medium"))),
    ("实木床头柜", "solid-wood bedside table", 299, 899, (45, 38, 52), 9.0,
     (("北美白橡木", "North American white oak"),),
     ("避免暴晒，用干布擦拭", "keep out of direct sun, wipe with a dry cloth"),
     (("原木色", "natural wood"), ("胡桃色", "walnut"))),
    ("珊瑚绒毛毯", "coral-fleece blanket", 69, 229, (200, 150, 1), 1.2,
     (("100%聚酯纤维", "100% polyester"),),
     ("可机洗，低温烘干", "machine wash, tumble dry low"),
     (("奶油黄", "butter yellow"), ("浅灰", "light grey"), ("米白", "ivory"))),
)

# fmt: on
