"""Datasets: deterministic cases and files, disjoint splits, the tfds builder."""

import json

import grain
import pytest

from hat_jax.harness import load_harness
from sim import datasets
from sim.catalog import STREAM_SECONDS
from sim.datasets import (
    DT,
    assert_disjoint,
    generate,
    make_cases,
    read_dataset,
    report,
    write_dataset,
)
from sim.tfds_builder import build, load_split


@pytest.fixture(scope="module")
def v1():
    return load_harness("taolive_v1")


def _write(harness, path, split="train", seed=0, n=24, **kw):
    cases = make_cases(split, seed, n)
    return write_dataset(generate(harness, cases, **kw), path)


def test_same_seed_gives_byte_identical_files(v1, tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    assert _write(v1, a, faults=0.3, seed=1) == 24
    # Another agent-loop batching gives the same bytes too.
    _write(v1, b, faults=0.3, seed=1, batch_size=5)
    assert a.read_bytes() == b.read_bytes()
    lines = a.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["timings"] == {} for line in lines)
    _write(v1, c, seed=1)  # another dataset seed: other rooms
    assert c.read_bytes() != a.read_bytes()


def test_cases_are_deterministic_and_prefix_stable():
    small, large = make_cases("dev", 3, 10), make_cases("dev", 3, 30)
    assert small == large[:10]
    assert make_cases("dev", 3, 30) == large
    assert len({c.case_id for c in large}) == 30
    assert make_cases("dev", 4, 10) != small


def test_cases_do_not_depend_on_the_room_chunking(monkeypatch):
    cases = make_cases("dev", 3, 30, messages_per_room=2)
    monkeypatch.setattr(datasets, "ROOM_CHUNK", 4)
    assert make_cases("dev", 3, 30, messages_per_room=2) == cases


def test_cases_come_from_the_room_dynamics():
    cases = make_cases("train", 0, 64, messages_per_room=4)
    rooms = {c.snapshot.room_id for c in cases}
    assert len(rooms) == 16
    clocks = [c.snapshot.clock for c in cases]
    assert all(0 < t <= STREAM_SECONDS for t in clocks)
    assert all(t / DT == int(t / DT) for t in clocks)  # arrival steps
    assert len(set(clocks)) > 50  # spread over the stream
    for c in cases:
        snap, cat = c.snapshot, c.snapshot.catalog
        assert 1 <= snap.featured_link <= len(cat.products)
        assert all(0 <= snap.stock[p.link_id] <= p.stock for p in cat.products)
        for link, price in snap.active_flash.items():
            sale = next(s for s in cat.flash_sales if s.link_id == link)
            assert sale.start <= snap.clock < sale.end and price == sale.price
    # The stream moved: something sold, and the host changed the featured link.
    sold = [
        p.stock - c.snapshot.stock[p.link_id]
        for c in cases
        for p in c.snapshot.catalog.products
    ]
    assert max(sold) > 0
    assert len({c.snapshot.featured_link for c in cases}) > 1


def test_mixes_are_room_parameters():
    cases = make_cases("test", 0, 16, intent_mix={"after_sales": 1}, lang_mix={"en": 1})
    assert {(c.message.intent, c.message.lang) for c in cases} == {
        ("after_sales", "en")
    }


def test_splits_share_no_catalog(v1, tmp_path):
    paths = []
    for split in ("train", "dev", "test"):
        paths.append(tmp_path / f"{split}.jsonl")
        _write(v1, paths[-1], split=split, n=16)
    counts = assert_disjoint(*paths)
    assert all(n >= 2 for n in counts.values())
    for path, split in zip(paths, ("train", "dev", "test")):
        for t in read_dataset(path):
            assert t.meta["catalog_id"].startswith(f"{split}-")
            assert t.meta["room_id"].startswith(f"{split}-")
            assert all(
                s.startswith(t.meta["catalog_id"]) for s in t.meta["catalog"]["skus"]
            )
    with pytest.raises(AssertionError, match="share"):
        assert_disjoint(paths[0], paths[0])


def test_oracle_trajectories_are_ok_even_with_faults(v1, tmp_path):
    path = tmp_path / "faults.jsonl"
    _write(v1, path, n=40, faults=0.3)
    r = report(path)
    assert r["status"] == {"ok": 40} and r["lines"] == 40
    assert sum(r["faults"].values()) > 0
    v2 = load_harness("taolive_v2")
    trajs = generate(v2, make_cases("dev", 0, 20))
    assert {t.status for t in trajs} == {"ok"}
    assert any(c.name == "query_item" for t in trajs for c in t.tool_calls)


def test_tfds_builder_round_trip(v1, tmp_path):
    manual = tmp_path / "jsonl"
    manual.mkdir()
    for seed, split in enumerate(("train", "dev", "test")):
        _write(v1, manual / f"{split}.jsonl", split=split, seed=seed, n=20)
    builder = build(manual, tmp_path / "tfds")
    assert {s: i.num_examples for s, i in builder.info.splits.items()} == {
        "train": 20,
        "dev": 20,
        "test": 20,
    }
    for split in ("train", "dev", "test"):
        lines = (manual / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        source = load_split(tmp_path / "tfds", split)
        ds = grain.MapDataset.source(source)
        assert len(ds) == len(lines)
        for i, line in enumerate(lines):
            ex = ds[i]
            assert ex["trajectory"].decode() == line
            meta = json.loads(line)["meta"]
            assert ex["intent"].decode() == meta["message"]["intent"]
            assert ex["lang"].decode() == meta["message"]["lang"]
            assert ex["status"].decode() == "ok"
            assert ex["harness_id"].decode() == "taolive@1.0"
        shuffled = [ex["case"].decode() for ex in ds.shuffle(seed=0)]
        assert sorted(shuffled) == sorted(json.loads(x)["meta"]["case"] for x in lines)
