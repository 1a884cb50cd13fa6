"""The simulator's datasets as a ``tensorflow_datasets`` builder (no TensorFlow).

``hat_trajectories`` turns the JSONL files of ``hat sim generate`` (one per
split, named ``train.jsonl``, ``dev.jsonl``, ``test.jsonl`` in the manual dir;
missing splits are skipped) into ArrayRecord files, read back with
``tfds.data_source`` and grain. Each example holds the trajectory's JSON line,
exactly as in the file, and a few fields to filter on: case, intent, lang,
harness_id, status. Examples keep the file's order (shuffle with grain).

Example:
  from sim.tfds_builder import build, load_split
  build("data/jsonl", "data/tfds")
  source = load_split("data/tfds", "train")
  ds = grain.MapDataset.source(source).shuffle(seed=0)
  traj = Trajectory.from_json(ds[0]["trajectory"].decode())

TensorFlow is not imported: ``tfds.load`` and ``as_dataset`` need it, ArrayRecord
with ``data_source`` does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import tensorflow_datasets as tfds
from etils import epath

from sim.types import SPLITS

NAME = "hat_trajectories"
FILE_FORMAT = "array_record"
TEXT_FIELDS = ("case", "intent", "lang", "harness_id", "status")


def split_file(split: str) -> str:
    """The JSONL file name a split is read from, inside the manual dir."""
    return f"{split}.jsonl"


def example(line: str) -> dict[str, str]:
    """A dataset line as a builder example."""
    d = json.loads(line)
    meta = d.get("meta") or {}
    message = meta.get("message") or {}
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
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                if line.strip():
                    yield i, example(line.rstrip("\n"))


def build(manual_dir: str | Path, data_dir: str | Path) -> HatTrajectories:
    """Prepares ``hat_trajectories`` under ``data_dir`` from the JSONL files in
    ``manual_dir``; returns the builder (``builder.info.splits`` has the sizes)."""
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
