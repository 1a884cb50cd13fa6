"""A tokenizer folder from elsewhere: a tokenizer.json that is not one, a token id
past int32, a fifo, a tokenizer_config.json of the wrong shape, each refused as
`path: ...` by `load_tokenizer` (no bare Rust `Exception`, no hang)."""

import json
import os
import shutil

import pytest

from experiments.world.prompts import write_prompts
from experiments.world.tokenizer import train_tokenizer
from hat_jax.text.tokenizer import MAX_ID
from hat_jax.train.build import load_tokenizer


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("tok")
    write_prompts(root / "p.jsonl", n=20, seed=0)
    train_tokenizer([root / "p.jsonl"], vocab_size=300, out=root / "tok")
    return root / "tok"


@pytest.fixture
def folder(trained, tmp_path):
    return shutil.copytree(trained, tmp_path / "tok")


def _edit(folder, edit) -> None:
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_the_trained_folder_loads(folder):
    assert load_tokenizer(str(folder)).vocab_size <= 300


@pytest.mark.parametrize("token_id", [MAX_ID + 1, 2**32 + 104, -1])
def test_a_token_id_out_of_range_is_named(folder, token_id):
    _edit(folder, lambda d: d["model"]["vocab"].update({"zzq": token_id}))
    with pytest.raises(ValueError) as e:
        load_tokenizer(str(folder))
    assert str(e.value).startswith(f"{folder / 'tokenizer.json'}: ")
    assert str(token_id) in str(e.value)


@pytest.mark.parametrize(
    "text, message",
    [("{", "not a readable tokenizer (EOF while parsing"),
     ("[1]", "not a readable tokenizer (invalid type: sequence"),
     ('{"model": 5}', "not a readable tokenizer")],
)  # fmt: skip
def test_a_tokenizer_json_that_is_not_one_is_named(folder, text, message):
    (folder / "tokenizer.json").write_text(text)
    with pytest.raises(ValueError) as e:
        load_tokenizer(str(folder))
    assert f"{folder / 'tokenizer.json'}: {message}" in str(e.value)


def test_a_fifo_tokenizer_json_is_refused_not_read(folder):
    (folder / "tokenizer.json").unlink()
    os.mkfifo(folder / "tokenizer.json")
    with pytest.raises(ValueError, match="tokenizer.json: not a regular file"):
        load_tokenizer(str(folder))  # reading it would block for ever


@pytest.mark.parametrize(
    "conf, message",
    [("{", "tokenizer_config.json:1: invalid JSON"),
     ("[]", "tokenizer_config.json: expected a JSON object, got list"),
     ('{"eos_token": 5}', "tokenizer_config.json: eos_token must be a string"),
     ('{"pad_token": {"content": []}}', "pad_token must be a string"),
     ('{"chat_template": 3}', "chat_template must be a string or a list")],
)  # fmt: skip
def test_a_bad_tokenizer_config_is_named(folder, conf, message):
    (folder / "tokenizer_config.json").write_text(conf)
    with pytest.raises(ValueError) as e:
        load_tokenizer(str(folder))
    assert str(e.value).startswith(str(folder)) and message in str(e.value)
