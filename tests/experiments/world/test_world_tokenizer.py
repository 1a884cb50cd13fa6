"""The world BPE: exact round trips, single-id control tokens, exact loss masks."""

import json

import jinja2.sandbox
import numpy as np
import pytest

from experiments.world.tokenizer import (
    ADDED_TOKENS,
    CONTROL_TOKENS,
    train_tokenizer,
    world_texts,
)
from hat_jax import assets
from hat_jax.harness import read_jsonl
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.text.chat import render_chat
from hat_jax.text.tokenizer import TURN_END_TOKENS
from hat_jax.train.build import load_tokenizer

SAMPLES = (
    "姐妹们 我在西藏，运费多少？3号链接还有M码吗😍😍",
    "can I use a coupon on no. 3? ty🙏✨ — café naïve",
    "<|im_start|>user\n你好！<|im_end|>\n<|im_start|>assistant\n<think>\nok\n</think>",
    "tabs\tand  spaces\n\n\nand \r\n crlf 👨‍👩‍👧",
)


def test_roundtrip_and_added_tokens(world_files, world_tokenizer):
    tok, folder = world_tokenizer
    loaded = load_tokenizer(str(folder))
    assert loaded.vocab_size == tok.vocab_size <= 2048
    texts = list(world_texts([world_files[k] for k in ("sim", "base", "prompts")]))
    assert len(texts) == 16 + 240 + 120
    for text in [*SAMPLES, *texts[::7]]:
        assert loaded.decode(loaded.encode(text)) == text
    ids = {t: loaded.encode(t) for t in ADDED_TOKENS}
    assert all(len(v) == 1 for v in ids.values()), ids
    for t in ADDED_TOKENS:
        assert loaded.backend.id_to_token(ids[t][0]) == t
    # Control tokens vanish with skip_special_tokens; tags stay as text.
    text = "<|im_start|>assistant\n<tool_call>\nhi\n</tool_call><|im_end|>"
    assert loaded.decode(loaded.encode(text), skip_special_tokens=True) == (
        "assistant\n<tool_call>\nhi\n</tool_call>"
    )
    assert loaded.eos_token == "<|im_end|>" and loaded.pad_token == "<|endoftext|>"
    assert loaded.bos_token == "<|endoftext|>"
    want_stops = {loaded.token_to_id(t) for t in TURN_END_TOKENS}
    assert set(loaded.stop_ids) == want_stops and set(TURN_END_TOKENS) <= set(
        CONTROL_TOKENS
    )


def test_segment_ids_equal_whole_text_ids(world_files, world_tokenizer):
    tok = load_tokenizer(str(world_tokenizer[1]))
    for traj in [
        *read_jsonl(world_files["sim"]),
        *read_jsonl(world_files["base"])[:80],
    ]:
        trajectory_to_tokens(traj, tok, check=True)


def test_training_is_deterministic(world_files, world_tokenizer, tmp_path):
    files = [world_files[k] for k in ("sim", "base", "prompts")]
    train_tokenizer(files, vocab_size=2048, out=tmp_path / "again")
    first = (world_tokenizer[1] / "tokenizer.json").read_bytes()
    assert (tmp_path / "again" / "tokenizer.json").read_bytes() == first


def test_chat_template_matches_the_renderer(world_files, world_tokenizer):
    conf = json.loads((world_tokenizer[1] / "tokenizer_config.json").read_text())
    env = jinja2.sandbox.ImmutableSandboxedEnvironment()
    # transformers' tojson: json.dumps without HTML escaping.
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False)
    template = env.from_string(conf["chat_template"])
    trajs = [*read_jsonl(world_files["sim"])[:4], *read_jsonl(world_files["base"])[:30]]
    for t in trajs:
        msgs = t.to_dict()["messages"]
        for gen in (False, True):
            got = template.render(messages=msgs, add_generation_prompt=gen)
            assert got == render_chat(msgs, add_generation_prompt=gen)
    tools = next(t.meta["tools"] for t in trajs if "tools" in t.meta)
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    got = template.render(messages=msgs, tools=tools, add_generation_prompt=True)
    assert got == render_chat(msgs, tools=tools)


def test_bad_lines_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "hi"}\n\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:3: expected a JSON object"):
        list(world_texts([bad]))
    bad.write_text('{"prompt": "hi"}\n{"text": "x"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: expected a trajectory"):
        list(world_texts([bad]))
    bad.write_text("{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: invalid JSON"):
        list(world_texts([bad]))


@pytest.mark.skipif(
    not assets.is_fetched("smollm2-135m-instruct"), reason="SmolLM2 asset not fetched"
)
def test_compression_against_smollm2(world_files, world_tokenizer, capsys):
    ours = load_tokenizer(str(world_tokenizer[1]))
    smol = load_tokenizer("smollm2-135m-instruct")
    sim = read_jsonl(world_files["sim"])
    n_ours = np.mean([len(trajectory_to_tokens(t, ours)[0]) for t in sim])
    n_smol = np.mean([len(trajectory_to_tokens(t, smol)[0]) for t in sim])
    with capsys.disabled():
        print(
            f"\ntokens per sim trajectory: world BPE {n_ours:.0f}, SmolLM2 {n_smol:.0f}"
        )
    # Trained on this very text, 2k tokens hold their own against 49k general ones.
    assert n_ours < 1.3 * n_smol
