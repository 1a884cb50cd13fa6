"""Base data: kinds and mix, determinism, and what the SFT loader makes of it."""

import numpy as np

from experiments.world.base_data import KINDS, base_example, write_base_data
from hat_jax.harness import read_jsonl
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.text.chat import render_assistant
from hat_jax.train.data import tokenize


def test_counts_mix_and_determinism(world_files, tmp_path):
    again = tmp_path / "again.jsonl"
    counts = write_base_data(again, n=240, seed=0)
    assert again.read_bytes() == world_files["base"].read_bytes()
    assert sum(counts.values()) == 240 and list(counts) == list(KINDS)
    for kind, (share, _) in KINDS.items():
        assert abs(counts[kind] / 240 - share) < 0.1, counts
    # Example i depends on (seed, i) only; another seed gives other data.
    first = read_jsonl(world_files["base"])[:5]
    assert [t.to_json() for t in first] == [
        base_example(0, i).to_json() for i in range(5)
    ]
    assert base_example(1, 0).to_json() != first[0].to_json()


def test_loss_mask_covers_assistant_turns_only(world_files, world_tokenizer):
    tok, _ = world_tokenizer
    trajs = read_jsonl(world_files["base"])
    zh = sum(any("\u4e00" <= ch <= "\u9fff" for ch in t.reply) for t in trajs)
    assert zh > 10  # some chit-chat is Chinese
    lengths = []
    for t in trajs[:60]:
        ids, mask = trajectory_to_tokens(t, tok, check=True)
        lengths.append(len(ids))
        want = [render_assistant(m) + "<|im_end|>" for m in t.messages]
        want = "".join(w for w, m in zip(want, t.messages) if m["role"] == "assistant")
        assert tok.decode(ids[mask]) == want
        assert want.endswith(t.reply + "<|im_end|>")
    assert np.mean(lengths) < 400 and max(lengths) < 900
    examples, stats = tokenize(trajs, tok, seq_len=1024)
    assert stats["dropped"] == 0 and stats["examples"] == len(trajs)
    assert 0 < stats["loss_tokens"] < stats["tokens"]
