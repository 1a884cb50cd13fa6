"""`data.train=tfds:DIR`: the ArrayRecord dataset of `hat sim generate --format
tfds`, read through tfds' data source and grain, trains on exactly the batches
of the same rows as JSONL (order, packing, resume, losses)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from hat_jax.cli.main import main as hat_main
from hat_jax.harness.tokens import read_jsonl
from hat_jax.jsonl import DataError
from hat_jax.train.build import load_tokenizer
from hat_jax.train.data import BATCH_KEYS, PackedBatches, load_trajectories, tokenize
from hat_jax.train.metrics import read_metrics
from tests.train_helpers import (
    CONFIG,
    memo_trajectories,
    tiny_overrides,
    word_tokenizer,
)

SIM = ["--harness", "taolive_v1", "--n", "8", "--seed", "1", "--split", "train"]
SEQ, BATCH, SEED = 4096, 1, 5  # two examples a row, four batches an epoch


@pytest.fixture(scope="module")
def sim_pair(tmp_path_factory):
    """(JSONL, tfds folder, tokenizer) of one `hat sim generate` call each."""
    d = tmp_path_factory.mktemp("sim_pair")
    for flags, out in (((), d / "a.jsonl"), (("--format", "tfds"), d / "ds")):
        assert hat_main(["sim", "generate", *SIM, *flags, "--out", str(out)]) == 0
    word_tokenizer(read_jsonl(d / "a.jsonl"), d / "tok")
    return d / "a.jsonl", d / "ds", load_tokenizer(str(d / "tok"))


def _batches(spec, tok) -> PackedBatches:
    examples, _ = tokenize(load_trajectories(spec), tok, seq_len=SEQ)
    return PackedBatches(
        examples, batch_size=BATCH, seq_len=SEQ, seed=SEED, pad_id=tok.pad_id
    )


def _same(a, b) -> None:
    for k in BATCH_KEYS:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def test_rows_read_back_equal(sim_pair):
    jsonl, ds, _ = sim_pair
    a, b = read_jsonl(jsonl), load_trajectories(f"tfds:{ds}")
    assert a == b and len(b) == 8
    assert [t.where for t in b[:2]] == [f"tfds:{ds}:row 0", f"tfds:{ds}:row 1"]
    assert load_trajectories(str(jsonl)) == a  # a JSONL path goes through too


def test_packed_batches_equal_for_two_epochs(sim_pair):
    jsonl, ds, tok = sim_pair
    a, b = _batches(str(jsonl), tok), _batches(f"tfds:{ds}", tok)
    n = a.batches_per_epoch()
    assert n == b.batches_per_epoch() >= 3
    seen = []
    while a.epoch < 2:  # each epoch packs anew, so its count may differ
        x, y = next(a), next(b)
        _same(x, y)
        seen.append(x["inputs"].tobytes())
    assert a.position() == b.position() and len(seen) > n
    assert seen[:n] != seen[n : 2 * n]  # the second epoch is shuffled anew


@pytest.mark.parametrize("k", [2, 5])
def test_resume_from_a_position_gives_the_same_batches(sim_pair, k):
    jsonl, ds, tok = sim_pair
    straight = _batches(str(jsonl), tok)
    for _ in range(k):
        next(straight)
    first = _batches(f"tfds:{ds}", tok)
    for _ in range(k):
        next(first)
    pos = json.loads(json.dumps(first.position()))  # as a checkpoint keeps it
    resumed = _batches(f"tfds:{ds}", tok)
    resumed.restore(pos)
    for _ in range(6):  # crosses an epoch boundary
        _same(next(straight), next(resumed))


def test_hat_train_sft_on_tfds_matches_jsonl_loss_for_loss(
    memo_jsonl, memo_tokenizer, tmp_path
):
    from sim.tfds_builder import write_tfds

    ds = tmp_path / "memo_ds"
    write_tfds(memo_trajectories(), ds)
    folder, vocab = memo_tokenizer
    losses = []
    for name, data in (("jsonl", memo_jsonl), ("tfds", f"tfds:{ds}")):
        over = tiny_overrides(data, folder, vocab, **{"model.num_hidden_layers": 1})
        argv = ["train", "sft", f"--config={CONFIG}:steps=4,seq_len=64,batch_size=4"]
        argv += ["--no-progress", "--workdir", str(tmp_path / name)]
        assert hat_main([*argv, *(f"--config.{o}" for o in over)]) == 0
        rows = read_metrics(tmp_path / name / "metrics.jsonl")
        losses.append([r["train/loss"] for r in rows if "train/loss" in r])
    assert len(losses[0]) == 4 and losses[0] == losses[1]  # bit for bit


@pytest.fixture
def bad_dataset(sim_pair, tmp_path):
    """A dataset (tfds data_dir layout) whose row 1 is JSON but no trajectory."""
    from sim.tfds_builder import build

    jsonl, _, _ = sim_pair
    manual = tmp_path / "manual"
    manual.mkdir()
    good = jsonl.read_text(encoding="utf-8").splitlines()[0]
    (manual / "train.jsonl").write_text(f'{good}\n{{"harness_id": "x"}}\n')
    build(manual, tmp_path / "data")
    return tmp_path / "data"


def test_a_row_that_is_no_trajectory_is_named(bad_dataset):
    with pytest.raises(DataError, match=r"^tfds:\S+/data:row 1: not a trajectory"):
        load_trajectories(f"tfds:{bad_dataset}")


def test_splits_are_named_when_a_dataset_has_several(sim_pair, tmp_path):
    from sim.tfds_builder import build

    jsonl, _, _ = sim_pair
    manual = tmp_path / "m"
    manual.mkdir()
    for split in ("train", "dev"):
        shutil.copy(jsonl, manual / f"{split}.jsonl")
    build(manual, tmp_path / "d")
    with pytest.raises(DataError, match="holds splits dev, train; name one"):
        load_trajectories(f"tfds:{tmp_path / 'd'}")
    assert load_trajectories(f"tfds:{tmp_path / 'd'}:dev") == read_jsonl(jsonl)
    with pytest.raises(DataError, match="no split 'test' .the dataset holds dev, t"):
        load_trajectories(f"tfds:{tmp_path / 'd'}:test")


@pytest.mark.parametrize(
    "make, message",
    [
        (None, "no such folder"),
        (lambda p: p.write_text("{}\n"), "not a folder"),
        (lambda p: p.mkdir(), "not a tfds dataset folder .no dataset_info.json"),
        (
            lambda p: (p.mkdir(), (p / "dataset_info.json").write_text("{")),
            "not a readable tfds dataset .ParseError",
        ),
    ],
)
def test_a_path_that_is_no_dataset_is_named(tmp_path, make, message):
    p = tmp_path / "x"
    if make:
        make(p)
    with pytest.raises(DataError, match=f"^tfds:{tmp_path}/x: {message}"):
        load_trajectories(f"tfds:{p}")


def test_a_dataset_without_its_shard_is_named(sim_pair, tmp_path):
    _, ds, _ = sim_pair
    shutil.copytree(ds, tmp_path / "ds")
    for shard in (tmp_path / "ds").glob("*.array_record-*"):
        shard.unlink()
    with pytest.raises(DataError, match="cannot read the dataset's rows"):
        load_trajectories(f"tfds:{tmp_path / 'ds'}")


def test_hat_train_sft_names_a_bad_tfds_path_without_a_traceback(
    memo_tokenizer, tmp_path, capsys
):
    folder, vocab = memo_tokenizer
    over = tiny_overrides(f"tfds:{tmp_path}/nope", folder, vocab)
    argv = ["train", "sft", f"--config={CONFIG}", "--workdir", str(tmp_path / "w")]
    assert hat_main([*argv, *(f"--config.{o}" for o in over)]) == 1
    err = capsys.readouterr().err
    assert f"hat train: error: tfds:{tmp_path}/nope: no such folder" in err
    assert "Traceback" not in err
