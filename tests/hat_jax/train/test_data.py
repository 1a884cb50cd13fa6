"""Packing: masks on assistant tokens only, segments, positions, resumable order."""

import numpy as np

from hat_jax.harness.tokens import read_jsonl
from hat_jax.harness.trajectory import Trajectory
from hat_jax.text.chat import render_chat_segments
from hat_jax.train.data import PackedBatches, pack_rows, select_trajectories, tokenize


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
