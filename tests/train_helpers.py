"""Helpers the SFT / OPD / RL tests share (the fixtures are in
tests/hat_jax/train/conftest.py): hand-built trajectories, a word-level tokenizer
and `KEY=VALUE` overrides for fast CPU runs. A module of its own, imported as
`tests.train_helpers`, so that a test file never imports some other folder's
`conftest` when several test folders run together."""

from __future__ import annotations

from pathlib import Path

from hat_jax.harness.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[1]
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
