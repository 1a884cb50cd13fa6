"""Trajectory -> tokens -> loss mask: only the assistant's own tokens are trained on."""

import json

import numpy as np
import pytest

from hat_jax import assets
from hat_jax.harness.tokens import read_jsonl, trajectory_to_tokens, write_jsonl
from hat_jax.harness.trajectory import HookEvent, ToolExchange, Trajectory
from hat_jax.text.chat import IM_END, render_assistant, render_chat

SYSTEM = "You are Xiaotao, the host of this live room. Room: spring sale, link 3 live."
USER = "3号链接的连衣裙多少钱？有M码吗"
TOOL_RESULT = '{"link_id": 3, "title": "碎花连衣裙", "price": 199, "stock": {"M": 12}}'
SKILL_BODY = "# item_qa\nAnswer with the price and stock from tools only."
FEEDBACK = "The harness rejected your last message; it was not sent.\n- reply: too long"
ASSISTANT = [
    {
        "role": "assistant",
        "content": "",
        "reasoning": "The viewer asks about link 3; look it up.",
        "tool_calls": [
            {"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}},
            {"name": "load_skill", "arguments": {"name": "item_qa"}},
        ],
    },
    {
        "role": "assistant",
        "content": "宝宝们，3号碎花连衣裙现在199元，M码还有12件，库存充足，赶紧拍！！",
        "reasoning": "Price 199, M in stock.",
    },
    {"role": "assistant", "content": "3号连衣裙199元，M码有货～"},
]


def make_trajectory() -> Trajectory:
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
        ASSISTANT[0],
        {"role": "tool", "name": "get_product_info_by_link_id", "content": TOOL_RESULT},
        {"role": "tool", "name": "load_skill", "content": SKILL_BODY},
        ASSISTANT[1],
        {"role": "user", "content": FEEDBACK, "hook_feedback": True},
        ASSISTANT[2],
    ]
    return Trajectory(
        harness_id="taolive_v1@1",
        user_message=USER,
        messages=messages,
        tool_calls=[
            ToolExchange("get_product_info_by_link_id", {"link_id": 3}, TOOL_RESULT),
            ToolExchange("load_skill", {"name": "item_qa"}, SKILL_BODY),
        ],
        hook_events=[HookEvent("reply_format", "reply", False, "too long", 0)],
        reply=ASSISTANT[2]["content"],
        timings={"total": 0.5},
        meta={"room": "r1"},
    )


@pytest.fixture(scope="module", params=["qwen3_6", "smollm2"])
def tokenizer(request):
    if request.param == "qwen3_6":
        from hat_jax.text.qwen_tokenizer import load_qwen3_6_tokenizer

        return load_qwen3_6_tokenizer()
    from gguf import GGUFReader

    from hat_jax.checkpoints.gguf import gguf_tokenizer

    path = assets.path("smollm2-135m-instruct")
    return gguf_tokenizer(GGUFReader(str(path)))


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each contiguous True run."""
    edges = np.diff(np.concatenate([[0], mask.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes"])
def test_mask_covers_exactly_the_assistant_bodies(tokenizer, fmt):
    traj = make_trajectory()
    ids, mask = trajectory_to_tokens(traj, tokenizer, fmt=fmt, check=True)
    assert ids.dtype == np.int32 and mask.dtype == bool and ids.shape == mask.shape
    full = render_chat(traj.messages, fmt=fmt, add_generation_prompt=False)
    assert ids.tolist() == tokenizer.encode(full)  # segment-wise == whole text
    assert tokenizer.decode(ids) == full

    spans = runs(mask)
    assert len(spans) == len(ASSISTANT)
    for (a, b), msg in zip(spans, ASSISTANT):
        body = tokenizer.decode(ids[a:b])
        assert body == render_assistant(msg, fmt) + IM_END
    # tool calls are trained on, in the harness's format
    first = tokenizer.decode(ids[spans[0][0] : spans[0][1]])
    assert "get_product_info_by_link_id" in first and "load_skill" in first
    assert first.count("<tool_call>") == 2
    assert "<think>" in first

    trained = tokenizer.decode(ids[mask])
    context = tokenizer.decode(ids[~mask])
    for text in (SYSTEM, USER, TOOL_RESULT, SKILL_BODY, FEEDBACK):
        assert text not in trained
        assert text in context
    for header in ("<|im_start|>system", "<|im_start|>user", "<|im_start|>assistant"):
        assert header not in trained
    assert trained.count(IM_END) == len(ASSISTANT)


def test_context_turn_ends_are_not_trained(tokenizer):
    traj = make_trajectory()
    ids, mask = trajectory_to_tokens(traj, tokenizer)
    im_end = tokenizer.encode(IM_END)
    assert len(im_end) == 1
    ends = np.flatnonzero(ids == im_end[0])
    # system, user, the merged tool-response turn, feedback: 4 context turns
    assert (~mask[ends]).sum() == 4 and mask[ends].sum() == len(ASSISTANT)
    # the newline after each assistant <|im_end|> is context
    for e in ends[mask[ends]]:
        if e + 1 < len(ids):
            assert not mask[e + 1]


def test_jsonl_round_trip_and_line_errors(tmp_path):
    trajs = [make_trajectory(), make_trajectory()]
    trajs[1].status, trajs[1].reply = "failed", None
    path = tmp_path / "t.jsonl"
    assert write_jsonl(trajs, path) == 2
    back = read_jsonl(path)
    assert [t.to_dict() for t in back] == [t.to_dict() for t in trajs]
    assert back[0].tool_calls[0] == trajs[0].tool_calls[0]

    good = path.read_text().splitlines()
    cases = {
        "{not json": "invalid JSON",
        "[1, 2]": "expected a JSON object",
        json.dumps({"harness_id": "x"}): "not a trajectory",
        json.dumps({**json.loads(good[0]), "bogus": 1}): "not a trajectory",
        json.dumps(
            {**json.loads(good[0]), "messages": [{"x": 1}]}
        ): r"field 'messages\[0\]\.role' is missing",
    }
    for line, what in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(good[0] + "\n\n" + line + "\n")
        with pytest.raises(ValueError, match=rf"bad\.jsonl:3: {what}"):
            read_jsonl(bad)
