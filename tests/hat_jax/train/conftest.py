"""Tiny SFT fixtures: a saved tokenizer, hand-built and simulated trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from hat_jax.harness.tokens import write_jsonl
from hat_jax.harness.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[3]
CONFIG = str(ROOT / "experiments" / "configs" / "sft_tiny.py")
SYSTEM = "You are Xiaotao, a live-stream host."


def memo_trajectories(n: int = 20) -> list[Trajectory]:
    """`n` question -> answer chats to memorise (one distinct fact each)."""
    out = []
    for i in range(n):
        q = f"What is the code of item {i}?"
        a = f"Item {i} has code {(i * 7919) % 1000:03d}."
        out.append(
            Trajectory(
                harness_id="memo",
                user_message=q,
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": q},
                    {"role": "assistant", "content": a},
                ],
                meta={"i": i},
            )
        )
    return out


def word_tokenizer(trajs, folder) -> int:
    """Saves a word-level tokenizer covering `trajs` to `folder`; returns its size.

    A vocabulary of ~100 words keeps the memorisation and resume runs fast (the
    logits are [B, T, V]); the trainer does not care which tokenizer it gets.
    """
    import tokenizers
    from tokenizers import models, pre_tokenizers

    from hat_jax.text.chat import render_chat_segments
    from hat_jax.text.tokenizer import Tokenizer

    specials = ["[PAD]", "[UNK]", "<|im_start|>", "<|im_end|>"]
    pre = pre_tokenizers.Whitespace()
    words = set()
    for t in trajs:
        for text, _ in render_chat_segments(t.messages, add_generation_prompt=False):
            for sp in specials:
                text = text.replace(sp, " ")
            words.update(w for w, _ in pre.pre_tokenize_str(text))
    vocab = {w: i for i, w in enumerate(specials + sorted(words))}
    backend = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre
    backend.add_special_tokens(
        [tokenizers.AddedToken(t, special=True) for t in specials]
    )
    tok = Tokenizer(backend, eos_token="<|im_end|>", pad_token="[PAD]")
    tok.save(folder)
    return tok.vocab_size


@pytest.fixture(scope="session")
def memo_tokenizer(tmp_path_factory):
    """(folder, vocab size) of the word-level tokenizer of the memorisation set."""
    d = tmp_path_factory.mktemp("word_tokenizer")
    return d, word_tokenizer(memo_trajectories(), d)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """SmolLM2's tokenizer saved as tokenizer.json (loads faster than the GGUF)."""
    from hat_jax.train.build import load_tokenizer

    d = tmp_path_factory.mktemp("tokenizer")
    load_tokenizer("smollm2-135m-instruct").save(d)
    return d


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


def opd_overrides(prompts, memo_tokenizer, **kw) -> list[str]:
    """`KEY=VALUE` overrides for a fast CPU run of opd_tiny on `prompts`."""
    folder, vocab = memo_tokenizer
    base = {
        "data.train": str(prompts),
        "data.max_prompt_tokens": 48,
        "tokenizer": str(folder),
        "model.vocab_size": vocab,
        "model.hidden_size": 32,
        "model.intermediate_size": 64,
        "model.head_dim": 8,
        "model.num_hidden_layers": 1,
        "train.save_every": 1000,
    }
    base.update(kw)
    return [f"{k}={v}" for k, v in base.items()]


def tiny_overrides(data, tokenizer_dir, vocab=49152, **kw) -> list[str]:
    """`KEY=VALUE` overrides for a fast CPU run of sft_tiny."""
    base = {
        "data.train": str(data),
        "tokenizer": str(tokenizer_dir),
        "model.vocab_size": vocab,
        "model.hidden_size": 32,
        "model.intermediate_size": 64,
        "model.head_dim": 8,
        "train.log_every": 1,
    }
    base.update(kw)
    return [f"{k}={v}" for k, v in base.items()]
