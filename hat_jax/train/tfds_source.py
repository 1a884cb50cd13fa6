"""`data.train=tfds:DIR`: trajectories from a tfds ArrayRecord dataset, via grain.

`hat sim generate --format tfds --out DIR` writes the rows of its JSONL as a
`tensorflow_datasets` ArrayRecord dataset (`sim/tfds_builder.py`): each example's
`trajectory` feature is the JSON line, byte for byte. This module opens such a
folder with `tfds.builder_from_directory(DIR).as_data_source(split)` (random
access; no TensorFlow, no builder code imported: tfds reads `dataset_info.json`
and `features.json`) and reads it through a grain pipeline,
`grain.MapDataset.source(source).map_with_index(parse)`, in index order. The
result is the same list of trajectories `read_jsonl` gives for the JSONL, so
tokenising, packing and the `(seed, epoch)` shuffle of `hat_jax.train.data` are
shared and the batches (and a resumed run's batches) are identical.

Specs:
  tfds:DIR         the dataset's only split
  tfds:DIR:SPLIT   one split of a dataset holding several

`DIR` is the folder holding `dataset_info.json`, or a tfds `data_dir` holding
exactly one `NAME/VERSION/` dataset (what `sim.tfds_builder.build` prepares).

Errors are `DataError`s naming the spec, and the row (`tfds:DIR:row I`, I from
0) for a row that is not a trajectory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hat_jax.harness.trajectory import Trajectory
from hat_jax.jsonl import DataError, parse_line

__all__ = ["FEATURE", "PREFIX", "is_tfds_spec", "open_split", "read_tfds"]

PREFIX = "tfds:"
FEATURE = "trajectory"  # the JSON line of each row
INFO = "dataset_info.json"
MAKE = "write one with `hat sim generate --format tfds --out DIR`"
_SPLIT = re.compile(r"[A-Za-z0-9_]+")


def is_tfds_spec(spec: Any) -> bool:
    """True for a `tfds:...` data spec (anything else is a JSONL path)."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def parse_spec(spec: str) -> tuple[Path, str | None]:
    """(folder, split or None) of `tfds:DIR[:SPLIT]`.

    A trailing `:NAME` is a split unless `DIR:NAME` is itself a folder.
    """
    rest = spec[len(PREFIX) :]
    if not rest:
        raise DataError(
            f"{spec}: no folder given (expected tfds:DIR or tfds:DIR:SPLIT)"
        )
    head, sep, tail = rest.rpartition(":")
    if sep and head and _SPLIT.fullmatch(tail) and not Path(rest).is_dir():
        return Path(head).expanduser(), tail
    return Path(rest).expanduser(), None


def dataset_dir(folder: Path, spec: str) -> Path:
    """The folder holding `dataset_info.json`: `folder`, or its only
    `NAME/VERSION/` dataset."""
    if (folder / INFO).is_file():
        return folder
    if not folder.exists():
        raise DataError(f"{spec}: no such folder ({MAKE})")
    if not folder.is_dir():
        raise DataError(f"{spec}: not a folder (a tfds dataset is one; {MAKE})")
    found = sorted(p.parent for p in folder.glob(f"*/*/{INFO}"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise DataError(f"{spec}: not a tfds dataset folder (no {INFO}; {MAKE})")
    names = ", ".join(str(p.relative_to(folder)) for p in found)
    raise DataError(f"{spec}: holds {len(found)} datasets ({names}); name one")


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def open_split(spec: str):
    """(random-access source, label) of one split; `label` (the spec) prefixes
    row names.

    Raises:
      DataError: naming `spec`, for a folder that is no readable ArrayRecord
        dataset with a `trajectory` feature, or an unknown / ambiguous split.
    """
    import tensorflow_datasets as tfds

    folder, split = parse_spec(spec)
    where = dataset_dir(folder, spec)
    try:
        builder = tfds.builder_from_directory(str(where))
    except Exception as e:  # noqa: BLE001 - OSError, protobuf ParseError, ...: say which
        raise DataError(f"{spec}: not a readable tfds dataset ({_why(e)})") from None
    info = builder.info
    splits = sorted(info.splits.keys())
    if split is None:
        if len(splits) != 1:
            raise DataError(
                f"{spec}: holds splits {', '.join(splits) or 'none'}; name one as "
                f"tfds:DIR:SPLIT"
            )
        split = splits[0]
    elif split not in splits:
        raise DataError(
            f"{spec}: no split {split!r} (the dataset holds {', '.join(splits)})"
        )
    features = getattr(info.features, "keys", lambda: ())()
    if FEATURE not in features:
        raise DataError(
            f"{spec}: no '{FEATURE}' feature (it has {', '.join(sorted(features))}); "
            f"not a trajectory dataset ({MAKE})"
        )
    if str(getattr(info.file_format, "value", info.file_format)) != "array_record":
        raise DataError(
            f"{spec}: stored as {info.file_format}, not array_record (random "
            "access without TensorFlow needs ArrayRecord)"
        )
    try:
        source = builder.as_data_source(split=split)
    except Exception as e:  # noqa: BLE001 - tfds / array_record errors: say which
        raise DataError(f"{spec}: cannot open split {split!r} ({_why(e)})") from None
    return source, spec


def read_tfds(spec: str) -> list[Trajectory]:
    """The trajectories of a `tfds:` spec, in row order, each with `where` set
    to `SPEC:row I`.

    Raises:
      DataError: a bad folder or split (`open_split`), a row that is not UTF-8
        JSON or not a trajectory (`SPEC:row I: ...`), unreadable ArrayRecord
        files, or an empty split.
    """
    import grain

    source, label = open_split(spec)

    def parse(i: int, row: dict[str, Any]) -> Trajectory:
        where = f"{label}:row {i}"
        return Trajectory.from_dict(parse_line(row[FEATURE], where), where)

    ds = grain.MapDataset.source(source).map_with_index(parse)
    try:
        out = [ds[i] for i in range(len(ds))]
    except DataError:
        raise
    except (RuntimeError, OSError, ValueError) as e:  # array_record read failures
        raise DataError(
            f"{label}: cannot read the dataset's rows ({_why(e)})"
        ) from None
    if not out:
        raise DataError(f"{label}: no trajectories")
    return out
