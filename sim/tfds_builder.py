"""The simulator's datasets as a ``tensorflow_datasets`` builder (no TensorFlow).

``hat_trajectories`` turns the JSONL files of ``hat sim generate`` (one per
split, named ``train.jsonl``, ``dev.jsonl``, ``test.jsonl`` in the manual dir;
missing splits are skipped) into ArrayRecord files, read back with
``tfds.data_source`` / ``tfds.builder_from_directory`` and grain. Each example
holds the trajectory's JSON line, exactly as in the file (the same bytes, less
the newline), and a few fields to filter on: case, intent, lang, harness_id,
status. Examples keep the file's order (shuffle with grain, or let SFT shuffle).

``write_tfds`` is what ``hat sim generate --format tfds --out DIR`` calls: it
writes one split as a dataset folder ``DIR`` (``dataset_info.json``,
``features.json``, the ArrayRecord shard) that SFT reads as
``data.train=tfds:DIR`` (``hat_jax.train.tfds_source``). The folder is built
beside ``DIR`` under a hidden temporary name and renamed into place only when
complete, so a killed write never leaves a ``DIR`` that reads as a dataset.

Example:
  from sim.tfds_builder import build, load_split
  build("data/jsonl", "data/tfds")
  source = load_split("data/tfds", "train")
  ds = grain.MapDataset.source(source).shuffle(seed=0)
  traj = Trajectory.from_json(ds[0]["trajectory"].decode())

TensorFlow is not imported: ``tfds.load`` and ``as_dataset`` need it, ArrayRecord
with ``data_source`` does not (measured with tensorflow-datasets 4.9.10,
array_record 0.8.6, grain 0.2.18 and no TensorFlow installed).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path

import tensorflow_datasets as tfds
from etils import epath

from hat_jax.harness import Trajectory
from hat_jax.jsonl import DataError, parse_line
from sim.datasets import write_dataset
from sim.types import SPLITS

NAME = "hat_trajectories"
FILE_FORMAT = "array_record"
TEXT_FIELDS = ("case", "intent", "lang", "harness_id", "status")
INFO = "dataset_info.json"


def split_file(split: str) -> str:
    """The JSONL file name a split is read from, inside the manual dir."""
    return f"{split}.jsonl"


def example(line: str, where: str = "line") -> dict[str, str]:
    """A dataset line as a builder example.

    Raises:
      DataError: ``where: ...`` when the line is not a JSON object.
    """
    d = parse_line(line, where)
    if not isinstance(d, dict):
        raise DataError(f"{where}: expected a JSON object")
    meta = d.get("meta") if isinstance(d.get("meta"), dict) else {}
    message = meta.get("message") if isinstance(meta.get("message"), dict) else {}
    return {
        "trajectory": line,
        "case": str(meta.get("case") or ""),
        "intent": str(message.get("intent") or ""),
        "lang": str(message.get("lang") or ""),
        "harness_id": str(d.get("harness_id") or ""),
        "status": str(d.get("status") or ""),
    }


class HatTrajectories(tfds.core.GeneratorBasedBuilder):
    """Gold trajectories from the live-room simulator (``hat sim generate``)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Gold trajectories as JSON lines plus scalar fields."}
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        "Write train.jsonl, dev.jsonl and test.jsonl with `hat sim generate "
        "--split SPLIT --out DIR/SPLIT.jsonl` and pass DIR as the manual dir."
    )

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls) -> epath.Path:
        # tfds' own lookup needs the `importlib_resources` backport for a module
        # inside a package; the file is right here.
        return epath.Path(__file__)

    def _info(self) -> tfds.core.DatasetInfo:
        text = tfds.features.Text()
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {"trajectory": text, **{k: text for k in TEXT_FIELDS}}
            ),
            disable_shuffling=True,
        )

    def _split_generators(self, dl_manager):
        manual = Path(dl_manager.manual_dir)
        found = {s: manual / split_file(s) for s in SPLITS}
        found = {s: p for s, p in found.items() if p.exists()}
        if not found:
            raise FileNotFoundError(f"no {{train,dev,test}}.jsonl in {manual}")
        return {s: self._generate_examples(p) for s, p in found.items()}

    def _generate_examples(self, path: Path):
        # Bytes, split on b"\n" only: the stored text is the line as written.
        with open(path, "rb") as f:
            for i, raw in enumerate(f):
                if raw.strip():
                    where = f"{path}:{i + 1}"
                    try:
                        line = raw.rstrip(b"\n").decode("utf-8")
                    except UnicodeDecodeError:
                        raise DataError(f"{where}: not UTF-8") from None
                    yield i, example(line, where)


def build(manual_dir: str | Path, data_dir: str | Path) -> HatTrajectories:
    """Prepares ``hat_trajectories`` under ``data_dir`` from the JSONL files in
    ``manual_dir``; returns the builder (``builder.info.splits`` has the sizes,
    ``builder.data_dir`` is the dataset folder)."""
    builder = HatTrajectories(data_dir=str(data_dir), file_format=FILE_FORMAT)
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(
            manual_dir=str(manual_dir), try_download_gcs=False
        )
    )
    return builder


def load_split(data_dir: str | Path, split: str):
    """A random-access source of one prepared split (``grain.MapDataset.source``
    takes it); Text fields come back as bytes."""
    return tfds.data_source(NAME, data_dir=str(data_dir), download=False)[split]


def is_dataset(path: str | Path) -> bool:
    """True for a folder ``write_tfds`` wrote (its ``dataset_info.json`` names
    ``hat_trajectories``)."""
    try:
        info = json.loads((Path(path) / INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("name") == NAME


def check_target(out: str | Path) -> None:
    """Refuses an ``--out`` that ``write_tfds`` must not replace: a file, or a
    folder holding anything but an earlier ``hat_trajectories`` dataset.

    Raises:
      ValueError: naming the path.
    """
    out = Path(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ValueError(f"--out {out} is not a folder (--format tfds writes one)")
    if out.is_dir() and any(out.iterdir()) and not is_dataset(out):
        raise ValueError(
            f"--out {out} is a folder that holds something other than a "
            f"{NAME} dataset; refusing to replace it"
        )


def write_tfds(
    trajs: Iterable[Trajectory], out: str | Path, *, split: str = "train"
) -> int:
    """Writes ``trajs`` as split ``split`` of a dataset folder ``out``; returns
    the number of rows.

    Each row's ``trajectory`` text is the line ``write_dataset`` writes for it,
    so ``tfds:out`` reads back exactly the JSONL's trajectories. The folder is
    built in ``.NAME.tmp-XXXXXXXX`` beside ``out`` and renamed to ``out`` once
    complete; an existing ``out`` (empty, or an earlier dataset) is replaced
    only then. On an error ``out`` is untouched and the temporary folder gone.

    Raises:
      ValueError: ``out`` is a file or a foreign folder (``check_target``).
      DataError: a trajectory that does not encode (nothing is written).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    out = Path(out)
    check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{secrets.token_hex(4)}")
    tmp.mkdir()
    try:
        (tmp / "manual").mkdir()
        n = write_dataset(trajs, tmp / "manual" / split_file(split))
        tfds.display_progress_bar(False)
        try:  # tfds prints where it prepares (the temporary folder): not for users
            with contextlib.redirect_stdout(io.StringIO()):
                built = Path(build(tmp / "manual", tmp / "data").data_dir)
        finally:
            tfds.display_progress_bar(True)
        _replace(built, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return n


def _replace(built: Path, out: Path) -> None:
    """Renames the complete folder ``built`` to ``out``; an old ``out`` is moved
    aside first and deleted after, so ``out`` is always whole or absent."""
    if not out.exists():
        os.rename(built, out)
        return
    old = out.with_name(f".{out.name}.old-{secrets.token_hex(4)}")
    os.rename(out, old)
    os.rename(built, out)
    shutil.rmtree(old, ignore_errors=True)
