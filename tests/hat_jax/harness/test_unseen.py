"""unseen_identifiers: what a training view asks for that its context lacks."""

from hat_jax.harness.unseen import unseen_identifiers, used_identifiers

SYSTEM = {
    "role": "system",
    "content": "Tools: get_item(item_no: int). Skills: item_help (reply).",
}


def _call(name, args, **extra):
    return {"role": "assistant", "content": "",
            "tool_calls": [{"name": name, "arguments": args}], **extra}  # fmt: skip


def test_names_in_the_system_prompt_are_seen():
    msgs = [
        SYSTEM,
        {"role": "user", "content": "item 3?"},
        _call("load_skill", {"name": "item_help"}),
        {"role": "tool", "content": "Answer; end with #Brisk."},
        _call("get_item", {"item_no": 3}),
        {"role": "tool", "content": '{"price": 9}'},
        {"role": "assistant", "content": "Item 3 is 9 yuan. #Brisk"},
    ]
    assert unseen_identifiers(msgs) == []


def test_the_same_view_without_its_system_prompt_asks_from_memory():
    msgs = [
        {"role": "user", "content": "item 3?"},
        _call("get_item", {"item_no": 3}),
        {"role": "tool", "content": '{"price": 9}'},
        {"role": "assistant", "content": "9 yuan #Brisk"},
        _call("load_skill", {"name": "item_help"}),
    ]
    assert unseen_identifiers(msgs) == [
        (1, "tool", "get_item"),
        (1, "param", "item_no"),
        (3, "tag", "#Brisk"),
        (4, "skill", "item_help"),
    ]


def test_a_name_inside_a_longer_name_is_not_seen():
    sys = {"role": "system", "content": "get_item_v2(item_no_x: int); #Brisker"}
    msgs = [sys, _call("get_item", {"item_no": 1}),
            {"role": "assistant", "content": "ok #Brisk"}]  # fmt: skip
    got = unseen_identifiers(msgs)
    assert got == [(1, "tool", "get_item"), (1, "param", "item_no"),
                   (2, "tag", "#Brisk")]  # fmt: skip


def test_nested_argument_keys_and_rejected_messages():
    args = {"query": {"item_no": 2}}
    msgs = [SYSTEM, _call("get_item", args)]
    assert unseen_identifiers(msgs) == [(1, "param", "query")]
    msgs.append({"role": "user", "content": "rejected", "hook_feedback": True})
    assert unseen_identifiers(msgs) == [(1, "param", "query")]
    assert unseen_identifiers(msgs, train_rejected=False) == []
    assert ("param", "item_no") in used_identifiers(_call("get_item", args))
