"""Tiny SFT fixtures: hand-built and simulated trajectories (the saved SmolLM2
tokenizer, `tokenizer_dir`, is the root conftest's)."""

from __future__ import annotations

import pytest

from hat_jax.harness.tokens import write_jsonl
from tests.train_helpers import SYSTEM, memo_trajectories, word_tokenizer


@pytest.fixture(scope="session")
def memo_tokenizer(tmp_path_factory):
    """(folder, vocab size) of the word-level tokenizer of the memorisation set."""
    d = tmp_path_factory.mktemp("word_tokenizer")
    return d, word_tokenizer(memo_trajectories(), d)


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from hat_jax.train.build import load_tokenizer

    return load_tokenizer(str(tokenizer_dir))


@pytest.fixture(scope="session")
def memo_jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("memo") / "memo.jsonl"
    write_jsonl(memo_trajectories(), path)
    return path


@pytest.fixture(scope="session")
def sim_jsonl(tmp_path_factory):
    """12 simulator trajectories (system prompt shortened to keep them small)."""
    from hat_jax.harness.loader import load_harness
    from sim.datasets import generate, make_cases

    trajs = generate(load_harness("taolive_v1"), make_cases("train", 0, 12), seed=0)
    for t in trajs:
        t.messages[0]["content"] = SYSTEM
    path = tmp_path_factory.mktemp("sim") / "sim.jsonl"
    write_jsonl(trajs, path)
    return path
