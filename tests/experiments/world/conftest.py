"""Small world files shared by the world tests: sim, base data, prompts, tokenizer."""

import pytest

from experiments.sim_cmd import main as sim_main
from experiments.world.base_data import write_base_data
from experiments.world.prompts import write_prompts
from experiments.world.tokenizer import train_tokenizer

N_SIM, N_BASE, N_PROMPTS = 16, 240, 120


@pytest.fixture(scope="session")
def world_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("world")
    sim = root / "sim.jsonl"
    argv = ["generate", "--harness", "taolive_v1", "--n", str(N_SIM), "--seed", "3"]
    assert sim_main([*argv, "--split", "train", "--out", str(sim)]) == 0
    base, prompts = root / "base.jsonl", root / "prompts.jsonl"
    write_base_data(base, n=N_BASE, seed=0)
    write_prompts(prompts, n=N_PROMPTS, seed=0)
    return {"root": root, "sim": sim, "base": base, "prompts": prompts}


@pytest.fixture(scope="session")
def world_tokenizer(world_files):
    files = [world_files[k] for k in ("sim", "base", "prompts")]
    out = world_files["root"] / "tokenizer"
    return train_tokenizer(files, vocab_size=2048, out=out), out
