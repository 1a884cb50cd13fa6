"""The world BPE with numbers cut in groups of up to three digits (digits="groups")."""

import re

import pytest

from experiments.world.tokenizer import (
    NUMBER_GROUPS,
    SPLIT_PATTERN,
    split_pattern,
    train_tokenizer,
    world_texts,
)
from experiments.world.world_cmd import main as world_main
from hat_jax.harness import read_jsonl
from hat_jax.harness.tokens import trajectory_to_tokens
from hat_jax.train.build import load_tokenizer

NUMBERS = ("0", "7", "05", "329", "1089", "1329.05", "20261204", "满500减40", "¥19")


@pytest.fixture(scope="module")
def groups_tokenizer(world_files, tmp_path_factory):
    files = [world_files[k] for k in ("sim", "base", "prompts")]
    out = tmp_path_factory.mktemp("tok") / "groups"
    train_tokenizer(files, vocab_size=2048, out=out, digits="groups")
    return load_tokenizer(str(out)), out


def _digit_tokens(tok, text):
    pieces = [tok.backend.id_to_token(i) for i in tok.encode(text)]
    return [p for p in pieces if p.isdigit()]


def test_every_group_is_one_token(groups_tokenizer):
    tok, _ = groups_tokenizer
    assert len(NUMBER_GROUPS) == 1110 and len(set(NUMBER_GROUPS)) == 1110
    for g in NUMBER_GROUPS:
        ids = tok.encode(g)
        assert len(ids) == 1 and tok.backend.id_to_token(ids[0]) == g, g


@pytest.mark.parametrize("text", NUMBERS)
def test_numbers_split_left_to_right_in_groups_of_three(groups_tokenizer, text):
    tok, _ = groups_tokenizer
    want = [g for run in re.findall(r"\d+", text) for g in re.findall(r"\d{1,3}", run)]
    assert _digit_tokens(tok, text) == want
    assert tok.decode(tok.encode(text)) == text


def test_single_digits_stay_the_default(world_tokenizer):
    tok = load_tokenizer(str(world_tokenizer[1]))
    assert _digit_tokens(tok, "price 1329.05") == list("132905")
    assert split_pattern() == SPLIT_PATTERN != split_pattern("groups")


def test_vocabulary_budget_and_round_trips(world_files, groups_tokenizer):
    tok, _ = groups_tokenizer
    assert tok.vocab_size <= 2048
    sim = read_jsonl(world_files["sim"])
    for traj in sim:  # segment-wise ids equal the whole text's ids
        trajectory_to_tokens(traj, tok, check=True)
    for text in list(world_texts([world_files["sim"], world_files["base"]]))[::9]:
        assert tok.decode(tok.encode(text)) == text


def test_training_is_deterministic(world_files, groups_tokenizer, tmp_path):
    files = [world_files[k] for k in ("sim", "base", "prompts")]
    train_tokenizer(files, vocab_size=2048, out=tmp_path / "b", digits="groups")
    first = (groups_tokenizer[1] / "tokenizer.json").read_bytes()
    assert (tmp_path / "b" / "tokenizer.json").read_bytes() == first


def test_bad_choices_are_refused(world_files, tmp_path):
    with pytest.raises(ValueError, match="digits must be one of"):
        split_pattern("pairs")
    with pytest.raises(ValueError, match="no room for the 1100 number groups"):
        train_tokenizer(
            [world_files["prompts"]],
            vocab_size=600,
            out=tmp_path / "t",
            digits="groups",
        )


def test_cli_flag(world_files, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["tokenizer", str(world_files["prompts"]), "--vocab-size", "1500"]
    assert world_main([*argv, "--digits", "groups", "--out", str(out)]) == 0
    assert "-token BPE" in capsys.readouterr().out
    tok = load_tokenizer(str(out))
    assert _digit_tokens(tok, "link 1089") == ["108", "9"]
