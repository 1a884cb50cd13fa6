"""OPD prompts: readable by `hat train opd`, seeded, apart from the base data."""

from experiments.world.prompts import KINDS, prompt_at, write_prompts
from hat_jax.harness import read_jsonl
from hat_jax.train.opd import read_prompts


def test_prompts_read_back_and_are_deterministic(world_files, tmp_path):
    prompts = read_prompts(world_files["prompts"])
    assert len(prompts) == 120
    assert all(len(p) == 1 and p[0]["role"] == "user" for p in prompts)
    again = tmp_path / "again.jsonl"
    counts = write_prompts(again, n=120, seed=0)
    assert again.read_bytes() == world_files["prompts"].read_bytes()
    assert list(counts) == list(KINDS) and all(v > 15 for v in counts.values())
    texts = [p[0]["content"] for p in prompts]
    assert len(set(texts)) > 110
    assert texts[3] == prompt_at(0, 3)[1] != prompt_at(1, 3)[1]


def test_prompts_are_disjoint_from_base_user_messages(world_files):
    base = {
        m["content"]
        for t in read_jsonl(world_files["base"])
        for m in t.messages
        if m["role"] == "user"
    }
    texts = {p[0]["content"] for p in read_prompts(world_files["prompts"])}
    assert not texts & base
