"""Plausible live-room tools that no gold trajectory needs.

Each does something a live-commerce backend really offers, but none answers a
viewer's product, price, stock, deal or after-sales question better than the
harness's own tools, so adding them never changes the right call.
"""

from __future__ import annotations

_INT = {"type": "integer", "minimum": 1}

DISTRACTORS: tuple[dict, ...] = (
    {
        "name": "get_live_room_stats",
        "description": "Current viewer count, likes and new followers of this room.",
        "parameters": {"type": "object", "properties": {}},
    },
    {
        "name": "get_anchor_schedule",
        "description": "The host's upcoming live-stream schedule.",
        "parameters": {
            "type": "object",
            "properties": {
                "days": {**_INT, "maximum": 14, "description": "How many days ahead."}
            },
        },
    },
    {
        "name": "query_order_status",
        "description": "Status of one order by its order number (staff console only).",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "description": "The order number."}
            },
            "required": ["order_id"],
        },
    },
    {
        "name": "get_viewer_profile",
        "description": "Membership level and follow status of a viewer by nickname.",
        "parameters": {
            "type": "object",
            "properties": {"nickname": {"type": "string"}},
            "required": ["nickname"],
        },
    },
    {
        "name": "get_review_summary",
        "description": "Average rating and common themes of buyer reviews for a link.",
        "parameters": {
            "type": "object",
            "properties": {
                "link_id": {**_INT, "description": "The link number."},
                "max_reviews": {**_INT, "maximum": 50},
            },
            "required": ["link_id"],
        },
    },
    {
        "name": "get_brand_story",
        "description": "A short background story of a brand sold in this shop.",
        "parameters": {
            "type": "object",
            "properties": {"brand": {"type": "string"}},
            "required": ["brand"],
        },
    },
    {
        "name": "translate_text",
        "description": "Translate a short text into another language.",
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "target_lang": {"type": "string", "enum": ["zh", "en", "ja", "ko"]},
            },
            "required": ["text", "target_lang"],
        },
    },
    {
        "name": "track_parcel",
        "description": "Carrier tracking events for a parcel tracking number.",
        "parameters": {
            "type": "object",
            "properties": {"tracking_no": {"type": "string"}},
            "required": ["tracking_no"],
        },
    },
    {
        "name": "get_gift_ranking",
        "description": "Top viewers by virtual gifts sent in this stream today.",
        "parameters": {
            "type": "object",
            "properties": {"top_n": {**_INT, "maximum": 20}},
        },
    },
    {
        "name": "get_stream_replay",
        "description": "A replay link for a past segment of this stream.",
        "parameters": {
            "type": "object",
            "properties": {
                "minutes_ago": {**_INT, "description": "Segment start, minutes back."}
            },
            "required": ["minutes_ago"],
        },
    },
)
