"""Decision tokens: spans in both call formats, kinds aligned with the ids."""

import numpy as np
import pytest

from hat_jax.harness import Trajectory
from hat_jax.harness.decisions import KINDS, decision_kinds, decision_spans
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.text.chat import render_assistant
from hat_jax.train.build import load_tokenizer

CALLS = [
    {"name": "get_x", "arguments": {"link_id": 3, "item": {"sku": "red L"}}},
    {"name": "load_skill", "arguments": {"name": "item_qa"}},
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("smollm2-135m-instruct")


def spans_by_kind(text):
    out = {k: [] for k in KINDS}
    for s, e, k in decision_spans(text):
        out[KINDS[k - 1]].append(text[s:e])
    return out


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes"])
def test_spans_name_the_decisions_and_skip_reasoning(fmt):
    msg = {"role": "assistant", "content": "", "tool_calls": CALLS}
    msg["reasoning"] = "link 3 costs 99"  # numbers in reasoning are not decisions
    got = spans_by_kind(render_assistant(msg, fmt))
    assert got["tool"] == ["get_x"] and got["skill"] == ["item_qa"]
    assert got["number"] == []
    args = "".join(got["argument"])
    assert "3" in args and "red L" in args and "load_skill" not in args
    reply = render_assistant(
        {"role": "assistant", "content": "3号链接现在99.5元～"}, fmt
    )
    assert spans_by_kind(reply)["number"] == ["3", "99.5"]


def test_kinds_line_up_with_the_training_ids(tokenizer):
    traj = Trajectory(
        "h@1",
        "3号多少钱",
        [
            {"role": "system", "content": "You sell things. Link 7 is on screen."},
            {"role": "user", "content": "3号多少钱"},
            {"role": "assistant", "content": "", "tool_calls": CALLS},
            {"role": "tool", "content": '{"price": 99}'},
            {"role": "tool", "content": "skill text 12"},
            {"role": "assistant", "content": "3号链接现在99元～"},
        ],
        reply="3号链接现在99元～",
        status="ok",
    )
    ids, mask = trajectory_to_tokens(traj, tokenizer)
    kinds = decision_kinds(traj, tokenizer)
    assert kinds.shape == ids.shape and kinds.dtype == np.int8
    assert mask[kinds > 0].all()  # decisions are assistant tokens only
    text = {k: tokenizer.decode(ids[kinds == i + 1]) for i, k in enumerate(KINDS)}
    assert text["tool"] == "get_x" and text["skill"] == "item_qa"
    assert "3" in text["argument"] and "red" in text["argument"]
    assert text["number"].replace(" ", "") == "399"  # 3 and 99 of the reply
    # the system prompt's and the tool results' numbers are context, not decisions
    assert not kinds[~mask].any()


def test_intent_is_the_reasonings_reading_of_the_message():
    msg = {"role": "assistant", "content": "", "tool_calls": CALLS[:1]}
    msg["reasoning"] = (
        "The viewer's message is a product question (price) about link 3: call get_x."
    )
    got = spans_by_kind(render_assistant(msg, "qwen_xml"))
    assert got["intent"] == ["product question (price) about link 3"]
    # outside reasoning the same words are reply text, not an intent
    reply = {"role": "assistant", "content": "This message is a chit chat: hi"}
    assert spans_by_kind(render_assistant(reply, "qwen_xml"))["intent"] == []


def test_span_starts_marks_the_first_token_of_each_span():
    from hat_jax.train.decision_probe import span_starts

    rng = np.random.default_rng(0)
    mask = rng.random((4, 40)) < 0.4
    want = np.zeros_like(mask)
    for r in range(4):  # brute force
        for t in range(40):
            want[r, t] = mask[r, t] and (t == 0 or not mask[r, t - 1])
    assert (np.asarray(span_starts(mask)) == want).all()


def test_exact_spans_count_a_value_right_only_with_all_its_tokens():
    from hat_jax.harness.decisions import KINDS
    from hat_jax.train.decision_probe import exact_spans

    rng = np.random.default_rng(1)
    kinds = rng.choice([0, 0, 4, 6, 6, 7], size=(5, 30)).astype(np.int8)
    correct = rng.random((5, 30)) < 0.8
    runs: dict[int, list[bool]] = {}
    for r in range(5):  # brute force: walk each row, a run ends where the kind changes
        t = 0
        while t < 30:
            u = t
            while u + 1 < 30 and kinds[r, u + 1] == kinds[r, t]:
                u += 1
            if kinds[r, t]:
                runs.setdefault(int(kinds[r, t]), []).append(
                    correct[r, t : u + 1].all()
                )
            t = u + 1
    want = {f"train/decision_exact/{KINDS[k - 1]}": np.mean(v) for k, v in runs.items()}
    got = exact_spans(correct, kinds)
    assert got.keys() == want.keys() and all(np.isclose(got[k], want[k]) for k in want)
    # a three-digit price with its middle digit wrong: 2 of 3 tokens, 0 of 1 value
    one = exact_spans(np.array([[True, True, False, True]]), np.array([[0, 6, 6, 6]]))
    assert one == {"train/decision_exact/fact": 0.0}


def test_intent_kind_lines_up_with_the_ids_of_a_gold(tokenizer):
    reasoning = "The viewer's message is a chit chat: call get_x first."
    traj = Trajectory(
        "h@1",
        "hi",
        [
            {"role": "system", "content": "You sell things."},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": CALLS[:1],
                "reasoning": reasoning,
            },
            {"role": "tool", "content": '{"price": 99}'},
            {"role": "assistant", "content": "hello"},
        ],
        reply="hello",
        status="ok",
    )
    ids, _ = trajectory_to_tokens(traj, tokenizer)
    kinds = decision_kinds(traj, tokenizer)
    intent = KINDS.index("intent") + 1
    assert tokenizer.decode(ids[kinds == intent]).strip() == "chit chat"


def test_fact_spans_are_the_oracle_s_named_numbers():
    """On oracle golds, the fact / fact_key spans of the reply's reasoning are
    exactly ``sim.oracle.named_numbers`` of its reply and the tool results."""
    from hat_jax.harness import load_harness
    from sim.datasets import generate, make_cases
    from sim.oracle import named_numbers

    harness = load_harness("taolive_v1").in_format("compact")
    golds = generate(harness, make_cases("dev", 5, 24), compact_results=True)
    checked = 0
    for traj in golds:
        results = [m["content"] for m in traj.messages if m["role"] == "tool"]
        last = traj.messages[-1]
        want = named_numbers(last["content"], results)
        got = spans_by_kind(render_assistant(last, "qwen_xml"))
        assert [f"{k} {v}" for k, v in zip(got["fact_key"], got["fact"])] == want
        checked += bool(want)
    assert checked >= 8  # most replies quote a number from a result


def test_lang_spans_are_the_viewer_language_in_every_gold_reasoning():
    """The oracle names the reply language in its first reasoning and before the
    reply; the `lang` spans are that name, the viewer message's language, and the
    intent span stops before it."""
    from hat_jax.harness import load_harness
    from sim.datasets import generate, make_cases
    from sim.oracle import language_name

    harness = load_harness("taolive_v1").in_format("compact")
    cases = make_cases("dev", 5, 24)
    golds = generate(harness, cases, compact_results=True)
    langs = set()
    for case, traj in zip(cases, golds):
        want = language_name(case.message.lang)
        langs.add(want)
        said = [m for m in traj.messages if m["role"] == "assistant"]
        first = spans_by_kind(render_assistant(said[0], "qwen_xml"))
        last = spans_by_kind(render_assistant(said[-1], "qwen_xml"))
        assert first["lang"] == [want] and last["lang"] == [want]
        assert not any(want in i or "," in i for i in first["intent"])
    assert langs == {"Chinese", "English"}  # both languages seen


def test_plan_spans_name_what_each_gold_reply_says():
    """Before its reply the oracle names what the reply says (a decline for a
    forbidden claim, the asked attribute, the after-sales topic); the `plan`
    span is that text, and replies of different intents get different plans."""
    from hat_jax.harness import load_harness
    from sim.datasets import generate, make_cases
    from sim.oracle import reply_plan

    harness = load_harness("taolive_v1").in_format("compact")
    cases = make_cases("dev", 5, 48)
    golds = generate(harness, cases, compact_results=True, reply_plan=True)
    plain = generate(harness, cases[:8], compact_results=True)  # off by default
    assert not any(
        "Reply:" in (m.get("reasoning") or "") for t in plain for m in t.messages
    )
    plans = {}
    for case, traj in zip(cases, golds):
        last = traj.messages[-1]
        got = spans_by_kind(render_assistant(last, "qwen_xml"))["plan"]
        assert got == [reply_plan(case.message)]
        plans.setdefault(case.message.intent, set()).add(got[0])
    assert "decline the claim, give selling points" in plans["forbidden_claim"]
    assert any(p.startswith("answer the ") for p in plans["product_question"])
    assert len(set().union(*plans.values())) >= 8  # not one plan for every reply
