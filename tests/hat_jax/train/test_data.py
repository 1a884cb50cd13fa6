"""Packing: masks on assistant tokens only, segments, positions, resumable order."""

import numpy as np
import pytest

from hat_jax.harness.tokens import read_jsonl
from hat_jax.harness.trajectory import Trajectory
from hat_jax.jsonl import DataError
from hat_jax.text.chat import render_chat_segments
from hat_jax.train.data import (
    Example,
    PackedBatches,
    call_budget_stats,
    last_span,
    message_lengths,
    pack_rows,
    prompt_free_copies,
    select_trajectories,
    tokenize,
)


def test_masked_tokens_are_exactly_the_assistant_tokens(sim_jsonl, tokenizer):
    trajs = read_jsonl(sim_jsonl)
    examples, stats = tokenize(trajs, tokenizer, seq_len=2048)
    assert stats["dropped"] == 0 and stats["examples"] == len(trajs)
    rows = pack_rows(examples, range(len(examples)), 2048, tokenizer.pad_id)
    seen = 0
    for r in range(len(rows["inputs"])):
        seg = rows["segment_ids"][r]
        for s in range(1, seg.max() + 1):
            at = seg == s
            traj = trajs[seen]
            seen += 1
            # Positions restart at 0; inputs + the last target rebuild the ids.
            assert (rows["positions"][r][at] == np.arange(at.sum())).all()
            taught = rows["targets"][r][at][rows["loss_mask"][r][at]]
            segments = render_chat_segments(
                traj.messages, tools=None, add_generation_prompt=False
            )
            want = "".join(text for text, produced in segments if produced)
            assert tokenizer.decode(taught) == want
            assert "<tool_call>" in want  # tool calls are taught too
        pad = seg == 0
        assert not rows["loss_mask"][r][pad].any()
    assert seen == len(trajs)


def test_pack_next_fit_and_padding():
    from hat_jax.train.data import Example

    def ex(n):
        a = np.arange(n, dtype=np.int32) + 10
        return Example(a, a + 1, np.ones(n, bool))

    rows = pack_rows([ex(3), ex(4), ex(2), ex(6)], [0, 1, 2, 3], 8, pad_id=0)
    assert rows["segment_ids"].tolist() == [
        [1, 1, 1, 2, 2, 2, 2, 0],
        [1, 1, 2, 2, 2, 2, 2, 2],
    ]
    assert rows["positions"][0].tolist() == [0, 1, 2, 0, 1, 2, 3, 0]
    assert rows["inputs"][0, -1] == 0 and not rows["loss_mask"][0, -1]


def test_order_is_seeded_and_resumable(memo_jsonl, tokenizer):
    examples, _ = tokenize(read_jsonl(memo_jsonl), tokenizer, seq_len=128)

    def make():
        return PackedBatches(examples, batch_size=4, seq_len=128, seed=3)

    a, b = make(), make()
    first = [next(a) for _ in range(7)]  # crosses epoch boundaries
    assert all(
        all((x[k] == y[k]).all() for k in x)
        for x, y in zip(first, [next(b) for _ in range(7)])
    )
    assert a.epoch >= 1
    # Different epochs are shuffled differently.
    n = a.batches_per_epoch()
    assert any((first[i]["inputs"] != first[i + n]["inputs"]).any() for i in range(n))
    # Restoring a position continues exactly where the original left off.
    c = make()
    c.restore(a.position())
    assert all((next(a)[k] == next(c)[k]).all() for k in first[0])


def test_fixed_harness_keeps_only_unaugmented():
    def traj(meta):
        return Trajectory("h", "q", [{"role": "user", "content": "q"}], meta=meta)

    gold = traj({})
    failed = traj({"hsa": {"spec": "rename_tools", "problems": ["x"]}})
    aug = traj({"hsa": {"spec": "rename_tools", "harness_id": "h2", "mapping": {}}})
    assert select_trajectories([gold, failed, aug], fixed_harness=True) == [
        gold,
        failed,
    ]
    assert len(select_trajectories([gold, failed, aug], fixed_harness=False)) == 3


def test_decision_weight_lands_on_the_decision_tokens(sim_jsonl, tokenizer):
    trajs = read_jsonl(sim_jsonl)
    plain, s1 = tokenize(trajs, tokenizer, seq_len=2048)
    heavy, s4 = tokenize(trajs, tokenizer, seq_len=2048, decision_weight=4.0)
    assert s1["loss_tokens"] == s4["loss_tokens"]  # a count, not a weight sum
    for traj, a, b in zip(trajs, plain, heavy):
        assert a.loss_mask.dtype == bool and b.loss_mask.dtype == np.float32
        assert ((b.loss_mask > 0) == a.loss_mask).all()  # same trained tokens
        assert set(np.unique(b.loss_mask).tolist()) <= {0.0, 1.0, 4.0}
        # The up-weighted text holds every called tool's name, every argument
        # value and every loaded skill's name, read from the trajectory itself.
        heavy_text = tokenizer.decode(b.targets[b.loss_mask == 4.0])
        calls = [c for m in traj.messages for c in m.get("tool_calls") or ()]
        assert calls
        for call in calls:
            name, args = call["name"], call.get("arguments") or {}
            if name == "load_skill":
                assert args["name"] in heavy_text
                continue
            assert name in heavy_text
            for v in args.values():
                assert str(v) in heavy_text
    rows = pack_rows(heavy, range(len(heavy)), 2048, tokenizer.pad_id)
    assert rows["loss_mask"].dtype == np.float32
    assert (rows["loss_mask"][rows["segment_ids"] == 0] == 0).all()


def test_prompt_free_copies_are_the_trajectory_without_its_prompt(sim_jsonl):
    trajs = read_jsonl(sim_jsonl)
    out = prompt_free_copies(trajs, head=3, no_system=2)
    assert len(out) == 5 * len(trajs)
    for traj in trajs:
        mine = [t for t in out if t.where == traj.where]
        heads = [t for t in mine if t.meta["view"] == "head"]
        whole = [t for t in mine if t.meta["view"] == "no_system"]
        assert len(heads) == 3 and len(whole) == 2
        # Everything up to the first assistant message: the viewer message and
        # any hook note that came before the first call.
        first = [m["role"] for m in traj.messages].index("assistant")
        assert heads[0].messages == traj.messages[1 : first + 1]
        assert heads[0].messages[0]["role"] == "user"
        assert whole[0].messages == traj.messages[1:]  # the system message dropped
        assert traj.messages[0]["role"] == "system" and "view" not in traj.meta
    assert prompt_free_copies(trajs) == []
    with pytest.raises(ValueError, match="copies must be >= 0"):
        prompt_free_copies(trajs, head=-1)
    with pytest.raises(ValueError, match="copies must be >= 0"):
        prompt_free_copies(trajs, reply=-1)


def test_reply_copies_train_only_the_reply_next_to_its_evidence(sim_jsonl, tokenizer):
    trajs = read_jsonl(sim_jsonl)
    views = prompt_free_copies(trajs, reply=2)
    lookups = [
        t
        for t in trajs
        if any(m["role"] == "tool" and m["name"] != "load_skill" for m in t.messages)
    ]
    assert 0 < len(lookups) < len(trajs)  # the fixture has small talk too
    assert len(views) == 2 * len(lookups)
    examples, _ = tokenize(views, tokenizer, seq_len=2048)
    for traj, view, ex in zip(lookups, views[::2], examples[::2]):
        assert view.where == traj.where and view.meta["view"] == "reply"
        msgs = view.messages
        # Same viewer message, same lookups and results in order, same reply;
        # no system prompt, no skill load, no skill body.
        assert msgs[0] == traj.messages[1] and msgs[-1] == traj.messages[-1]
        want = [
            m
            for m in traj.messages[1:]
            if m["role"] in ("user", "tool") and m.get("name") != "load_skill"
        ]
        assert [m for m in msgs if m["role"] in ("user", "tool")] == want
        for m in msgs:
            names = [c["name"] for c in m.get("tool_calls") or []]
            assert "load_skill" not in names and m["role"] != "system"
        # Only the final reply is trained.
        segments = render_chat_segments(msgs, tools=None, add_generation_prompt=False)
        reply = [text for text, produced in segments if produced][-1]
        taught = ex.targets[ex.loss_mask.astype(bool)]
        assert tokenizer.decode(taught) == reply
        full, _ = tokenize([traj], tokenizer, seq_len=2048)
        assert full[0].loss_mask.sum() > ex.loss_mask.sum()


def test_last_span_keeps_the_last_run():
    rng = np.random.default_rng(0)
    for _ in range(200):
        mask = rng.random(rng.integers(1, 30)) < 0.5
        out = last_span(mask)
        on = [i for i, v in enumerate(mask) if v]
        start = on[-1] if on else len(mask)
        while start > 0 and mask[start - 1]:
            start -= 1
        want = [bool(v) and i >= start for i, v in enumerate(mask)]
        assert out.tolist() == want
    weights = np.asarray([0.0, 2.0, 1.0, 0.0, 5.0, 1.0], np.float32)
    assert last_span(weights).tolist() == [0, 0, 0, 0, 5, 1]


def _runs_by_hand(mask) -> list[int]:
    out, n = [], 0
    for m in list(mask) + [0]:
        if m:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return out


def test_message_lengths_are_the_runs_of_trained_tokens():
    mask = np.array([0, 1, 1, 0, 0, 1, 0, 1, 1, 1], bool)
    assert message_lengths(mask).tolist() == [2, 1, 3] == _runs_by_hand(mask)
    assert message_lengths(np.zeros(4, bool)).tolist() == []


def test_golds_longer_than_the_call_budget_are_refused(sim_jsonl, tokenizer):
    examples, _ = tokenize(read_jsonl(sim_jsonl), tokenizer, seq_len=4096)
    runs = sorted(n for e in examples for n in _runs_by_hand(e.loss_mask))
    longest = runs[-1]
    assert call_budget_stats(examples, 0, "x.jsonl") == {"longest_message": longest}
    fits = call_budget_stats(examples, longest, "x.jsonl")
    assert fits == {"longest_message": longest, "over_call_budget": 0}
    budget = runs[len(runs) // 2]  # about half of the messages are longer
    over = sum(n > budget for n in runs)
    with pytest.raises(DataError, match=rf"x.jsonl: {over} of {len(runs)} gold"):
        call_budget_stats(examples, budget, "x.jsonl")


def test_up_to_one_percent_over_the_budget_is_counted_not_refused():
    def ex(n):  # one assistant message of n tokens after a 3-token prompt
        mask = np.r_[np.zeros(3, bool), np.ones(n, bool)]
        ids = np.arange(n + 3, dtype=np.int32)
        return Example(ids, ids + 1, mask)

    short = [ex(5)] * 198
    stats = call_budget_stats([*short, ex(50), ex(60)], 10, "x.jsonl")  # 1.0 %
    assert stats == {"longest_message": 60, "over_call_budget": 2}
    with pytest.raises(DataError, match="3 of 201 gold"):  # 1.5 %
        call_budget_stats([*short, ex(50), ex(60), ex(11)], 10, "x.jsonl")
