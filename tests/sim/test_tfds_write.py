"""`hat sim generate --format tfds`: the JSONL's rows as an ArrayRecord dataset,
written atomically, refused over anything but an earlier dataset."""

from __future__ import annotations

import pytest

import sim.tfds_builder as tb
from hat_jax.cli.main import main
from hat_jax.harness.tokens import read_jsonl
from hat_jax.train.data import load_trajectories

ARGS = ["--harness", "taolive_v1", "--n", "5", "--seed", "4", "--split", "dev"]


def _gen(out, *flags) -> int:
    return main(["sim", "generate", *ARGS, *flags, "--out", str(out)])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    assert _gen(d / "a.jsonl") == 0
    assert _gen(d / "ds", "--format", "tfds") == 0
    return d / "a.jsonl", d / "ds"


def test_same_arguments_give_the_same_rows(pair):
    jsonl, ds = pair
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(str(ds))
    assert list(builder.info.splits) == ["dev"]
    source = builder.as_data_source(split="dev")
    lines = jsonl.read_bytes().split(b"\n")[:-1]
    assert [source[i]["trajectory"] for i in range(len(source))] == lines
    got = load_trajectories(f"tfds:{ds}")
    assert got == read_jsonl(jsonl) and len(got) == 5
    assert got[3].where == f"tfds:{ds}:row 3"
    assert sorted(p.name for p in ds.parent.iterdir()) == ["a.jsonl", "ds"]


def test_rewrite_replaces_an_earlier_dataset_whole(pair, tmp_path, capsys):
    jsonl, _ = pair
    trajs = read_jsonl(jsonl)
    out = tmp_path / "ds"
    out.mkdir()  # an empty folder is fine too
    assert tb.write_tfds(trajs, out, split="test") == 5
    assert tb.write_tfds(trajs[:2], out, split="train") == 2
    assert load_trajectories(f"tfds:{out}") == trajs[:2]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no .tmp / .old left
    assert "prepared" not in capsys.readouterr().out  # tfds' own prints hidden


def test_a_failed_write_leaves_no_dataset_and_keeps_the_old(
    pair, tmp_path, monkeypatch
):
    jsonl, _ = pair
    trajs = read_jsonl(jsonl)
    out = tmp_path / "ds"
    real = tb.build

    def dies(manual, data_dir):
        real(manual, data_dir)  # the whole dataset is built, but not yet moved
        assert not out.exists() or tb.is_dataset(out)
        raise KeyboardInterrupt  # a kill between build and rename

    monkeypatch.setattr(tb, "build", dies)
    with pytest.raises(KeyboardInterrupt):
        tb.write_tfds(trajs, out)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(tb, "build", real)
    tb.write_tfds(trajs[:1], out)
    monkeypatch.setattr(tb, "build", dies)
    with pytest.raises(KeyboardInterrupt):
        tb.write_tfds(trajs, out)
    assert load_trajectories(f"tfds:{out}") == trajs[:1]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_a_leftover_temporary_folder_is_no_dataset(pair, tmp_path):
    _, ds = pair
    import shutil

    shutil.copytree(ds, tmp_path / ".ds.tmp-0000abcd")  # as a SIGKILL leaves it
    from hat_jax.jsonl import DataError

    with pytest.raises(DataError, match="no such folder"):
        load_trajectories(f"tfds:{tmp_path / 'ds'}")


@pytest.mark.parametrize("kind", ["file", "foreign"])
def test_out_that_is_not_a_dataset_folder_is_refused_before_simulating(
    tmp_path, capsys, kind
):
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("keep")
        want = "is not a folder"
    else:
        out.mkdir()
        (out / "notes.txt").write_text("keep")
        want = "holds something other than a hat_trajectories dataset"
    assert _gen(out, "--format", "tfds") == 1
    err = capsys.readouterr().err
    assert want in err and "Traceback" not in err
    assert "keep" in (
        out.read_text() if kind == "file" else (out / "notes.txt").read_text()
    )


def test_builder_names_a_bad_line(tmp_path):
    from hat_jax.jsonl import DataError

    manual = tmp_path / "m"
    manual.mkdir()
    (manual / "train.jsonl").write_text('{"a": 1}\n{"b": \n')
    with pytest.raises(DataError, match=r"train.jsonl:2: invalid JSON"):
        tb.build(manual, tmp_path / "data")
