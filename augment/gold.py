"""A few hand-written gold trajectories for the builtin harnesses (tests, demos).

They are produced by the real agent loop (``run_turns``) with a scripted policy
and a static tool backend, so they are exactly what the loop records: system
prompt, reasoning, tool calls, tool results, hook events. The simulator's oracle
replaces them for training data; these stay small on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hat_jax.harness.backend import StaticBackend
from hat_jax.harness.loop import TurnRequest, run_turns
from hat_jax.harness.policy import ScriptedPolicy
from hat_jax.harness.spec import LOAD_SKILL, Harness
from hat_jax.harness.trajectory import Trajectory
from hat_jax.text.chat import render_assistant
from hat_jax.text.toolcall import ToolCall

ROOM = {"on_screen": "3号链接 纯棉宽松T恤", "host": "小桃"}
PRODUCTS = {
    1: {"link_id": 1, "title": "基础款圆领T恤", "price": 59, "material": "100%纯棉"},
    2: {"link_id": 2, "title": "Linen summer shirt", "price": 89, "material": "linen"},
    3: {
        "link_id": 3,
        "title": "纯棉宽松T恤",
        "price": 199,
        "campaign_price": 179,
        "material": "新疆长绒棉",
    },
    5: {"link_id": 5, "title": "高腰阔腿牛仔裤", "price": 259, "campaign_price": 239},
}
SHIPPING = {
    "region": "新疆",
    "dispatch_hours": 48,
    "carrier": "中通",
    "returns": "7天无理由退货",
}


def _promotions(args: dict[str, Any]) -> dict[str, Any]:
    link = args.get("link_id")
    if link == 2:
        return {"promotions": [{"type": "coupon", "amount": 10, "threshold": 0}]}
    if link == 5:
        return {
            "promotions": [{"type": "full_reduction", "threshold": 199, "amount": 20}]
        }
    return {"promotions": [{"type": "shop_coupon", "threshold": 299, "amount": 30}]}


def _product_tool(h: Harness) -> str:
    return "query_item" if h.tool("query_item") else "get_product_info_by_link_id"


def _product(h: Harness, link: int, fields: list[str]) -> ToolCall:
    if h.tool("query_item"):
        return ToolCall("query_item", {"item": {"link_id": link, "fields": fields}})
    return ToolCall("get_product_info_by_link_id", {"link_id": link})


def _load(name: str) -> ToolCall:
    return ToolCall(LOAD_SKILL, {"name": name})


def _say(h: Harness, calls=(), content="", think=None) -> str:
    msg = {"role": "assistant", "content": content, "tool_calls": list(calls)}
    if think:
        msg["reasoning"] = think
    return render_assistant(msg, h.tool_call_format)


def _cases(h: Harness) -> dict[str, tuple[str, list[str]]]:
    """Case name -> (viewer message, scripted assistant outputs)."""
    v2 = h.skill("campaign_double12") is not None
    pt = _product_tool(h)
    deal = [ToolCall("get_promotions", {"link_id": 3})] if v2 else []
    price_skills = [_load("item_qa")] + ([_load("campaign_double12")] if v2 else [])
    price_reply = (
        "3号链接活动价179元哦，喜欢可以直接拍～"
        if v2
        else "3号链接现在199元哦，喜欢可以直接拍～"
    )
    return {
        "price": (
            "3号链接多少钱",
            [
                _say(
                    h,
                    [_product(h, 3, ["price", "campaign_price"]), *deal],
                    think=f"Price of link 3: call {pt} first.",
                ),
                _say(h, price_skills, think="Load item_qa before answering."),
                _say(h, content=price_reply),
            ],
        ),
        "after_sales": (
            "发货到新疆要多久？能退吗",
            [
                _say(
                    h,
                    [ToolCall("get_shipping_policy", {"region": "新疆"})],
                    think="Shipping question: get_shipping_policy with the region.",
                ),
                _say(h, [_load("after_sales")]),
                _say(
                    h, content="新疆地区48小时内发货，中通快递，支持7天无理由退货哦。"
                ),
            ],
        ),
        "chit_chat": (
            "主播好可爱！",
            [
                _say(h, [_load("chit_chat")], think="A compliment: chit_chat."),
                _say(
                    h,
                    content="谢谢宝宝夸奖～我是店里的数字主播，喜欢的话看看屏幕上这件哦",
                ),
            ],
        ),
        "stock_deal": (
            "5号链接M码还有吗？有优惠吗",
            [
                _say(
                    h,
                    [
                        _product(h, 5, ["price"]),
                        ToolCall("check_stock", {"link_id": 5, "sku": "M"}),
                    ],
                ),
                _say(h, [ToolCall("get_promotions", {"link_id": 5})]),
                _say(
                    h,
                    [_load("item_qa"), _load("promotion_push")],
                    think="Stock from check_stock; the deal needs promotion_push.",
                ),
                _say(h, content="5号链接M码还剩12件，现在满199减20，喜欢就冲～"),
            ],
        ),
        "purchase_en": (
            "how do I buy link 2?",
            [
                _say(
                    h,
                    [
                        _product(h, 2, ["price"]),
                        ToolCall("get_promotions", {"link_id": 2}),
                    ],
                ),
                _say(h, [_load("purchase_guide")]),
                _say(
                    h,
                    content=(
                        "Tap the cart below and pick link 2: it's ¥89 now, and you can "
                        "claim a ¥10 coupon first."
                    ),
                ),
            ],
        ),
        "retry": (
            "1号链接是纯棉的吗",
            [
                _say(h, [_product(h, 1, ["material"])]),
                _say(h, [_load("item_qa")]),
                _say(h, content="1号是100%纯棉，全网最低价哦～"),
                _say(h, content="1号链接是100%纯棉的哦，穿着很透气～"),
            ],
        ),
    }


def _fault_cases(h: Harness) -> dict[str, tuple[str, list[str]]]:
    """Cases with a tool timeout and a rejected call (kept retry traces)."""
    ship = ToolCall("get_shipping_policy", {"region": "新疆"})
    return {
        "tool_fault": (
            "新疆多久能发货？",
            [
                _say(h, [ship]),
                _say(h, [ship], think="The policy lookup timed out; try once more."),
                _say(h, [_load("after_sales")]),
                _say(h, content="新疆地区48小时内发货，中通快递哦。"),
            ],
        ),
        "rejected_call": (
            "5号链接还有货吗",
            [
                _say(h, [ToolCall("check_stock", {"link_id": "5号"})]),
                _say(h, [ToolCall("check_stock", {"link_id": 5})]),
                _say(h, [_load("item_qa")]),
                _say(h, content="5号链接还有12件哦，喜欢就冲～"),
            ],
        ),
    }


def _backend(faults=None) -> StaticBackend:
    def product(args: dict[str, Any]) -> Any:
        link = args.get("item", args).get("link_id")
        return PRODUCTS.get(link, {"error": f"no link {link}"})

    results: dict[str, Callable | Any] = {
        "get_product_info_by_link_id": product,
        "query_item": product,
        "check_stock": lambda a: {
            "link_id": a["link_id"],
            "sku": a.get("sku"),
            "stock": 12,
        },
        "get_promotions": _promotions,
        "get_shipping_policy": SHIPPING,
    }
    return StaticBackend(results, faults)


def _run(harness: Harness, cases, backend: StaticBackend) -> dict[str, Trajectory]:
    script = {msg: outs for msg, outs in cases.values()}
    requests = [
        TurnRequest(msg, room_context=ROOM, meta={"room_context": ROOM, "case": name})
        for name, (msg, _) in cases.items()
    ]
    trajs = run_turns(harness, requests, ScriptedPolicy(script), backend, seed=0)
    return dict(zip(cases, trajs))


def gold_trajectories(harness: Harness) -> dict[str, Trajectory]:
    """Case name -> gold trajectory under ``harness`` (a builtin harness).

    Cases: price, after_sales, chit_chat, stock_deal (a strategy skill too),
    purchase_en, retry (a reply rejected by a hook, then fixed), tool_fault (a
    timeout, then the call again) and rejected_call (a schema error, then fixed).
    """
    out = _run(harness, _cases(harness), _backend())
    faults = _backend({"get_shipping_policy": ["timeout", None]})
    return {**out, **_run(harness, _fault_cases(harness), faults)}
