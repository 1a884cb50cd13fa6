"""The sweep files `hat paper` reads, checked before any table uses them.

Every file of a sweep root comes from a run that may have been edited, cut
short or written by another version of the driver, so each is checked for the
shapes the tables read: a wrong one is a ``DataError`` naming the file and the
field (``ROOT/hat/run.json: field 'stages.sft.path' must be a string or null,
got integer 5``), never a traceback from deep inside a table. Field names in
messages come from the files, so they are shown with control characters
escaped and cut to ``NAME_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hat_jax.jsonl import DataError, field, json_type
from hat_jax.printable import shown

NONE = type(None)
NAME_CHARS = 40  # characters of a file-supplied key shown in a message
# metric -> the score weighting it per case (IFEval's instruction-level accuracy)
WEIGHTS = {
    "instruction_level_strict": "n_instructions",
    "instruction_level_loose": "n_instructions",
}
TAG_KINDS = (str, int, float, bool, NONE)  # tags are grouped and compared


def label(*parts: Any) -> str:
    """A dotted field name for a message, each part printable and short."""
    out = []
    for p in parts:
        s = shown(p)
        out.append(s if len(s) <= NAME_CHARS else s[: NAME_CHARS - 3] + "...")
    return ".".join(out)


def expect_object(value: Any, where: str, what: str) -> dict:
    """``value`` if it is a JSON object, else ``where: expected WHAT``."""
    if not isinstance(value, dict):
        raise DataError(f"{where}: expected {what}, got {json_type(value)}")
    return value


def to_float(value: Any, where: str, name: str) -> float | None:
    """A JSON number as a float (NaN kept: a missing score), None for null;
    anything else, or a number too large for a float, is a DataError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(
            f"{where}: field '{name}' must be a number or null, got {json_type(value)}"
        )
    try:
        return float(value)
    except OverflowError:
        raise DataError(f"{where}: field '{name}' is out of range") from None


def number(obj: dict, key: str, where: str, name: str) -> float | None:
    """``obj[key]`` by ``to_float`` (absent: None)."""
    return to_float(obj.get(key), where, name)


def count(obj: dict, key: str, where: str, name: str) -> int | None:
    """``obj[key]``: a non-negative integer or null (absent: None)."""
    value = field(obj, key, where, (int, NONE), default=None, label=name)
    if value is not None and value < 0:
        raise DataError(f"{where}: field '{name}' must be >= 0, got {value}")
    return value


def objects(obj: dict, key: str, where: str, name: str) -> dict[str, dict]:
    """``obj[key]``: an object (null or absent: {}) whose values are objects."""
    table = field(obj, key, where, (dict, NONE), default=None, label=name) or {}
    for k in table:
        field(table, k, where, dict, label=label(name, k))
    return table


def strings(obj: dict, key: str, where: str, name: str) -> dict[str, str]:
    """``obj[key]``: an object (null or absent: {}) whose values are strings."""
    table = field(obj, key, where, (dict, NONE), default=None, label=name) or {}
    for k in table:
        field(table, k, where, str, label=label(name, k))
    return table


def check_sweep(info: Any, path: Path) -> dict:
    """``sweep.json``: ``{"runs": [names], "config", "scale", ...}``."""
    where = shown(path)
    expect_object(info, where, "a JSON object {'runs': [names], ...}")
    field(info, "runs", where, (list, NONE), default=None)
    for key in ("config", "scale"):
        field(info, key, where, (str, NONE), default=None)
    return info


def check_run_info(info: Any, path: Path) -> dict:
    """``run.json``: ``{"status", "seconds", "stages": {stage: {"path"}}}``."""
    where = shown(path)
    expect_object(info, where, "a JSON object {'status', 'stages', ...}")
    field(info, "status", where, str, default="unknown")
    number(info, "seconds", where, "seconds")
    for stage, s in objects(info, "stages", where, "stages").items():
        field(
            s,
            "path",
            where,
            (str, NONE),
            default=None,
            label=label("stages", stage, "path"),
        )
    return info


def check_config(config: Any, path: Path) -> dict:
    """``config.json``: an object whose ``step_folders`` map steps to folders
    and whose ``steps`` map steps to their specs (``meta``: ``Meta``)."""
    where = shown(path)
    expect_object(config, where, "a JSON object (the run's resolved config)")
    strings(config, "step_folders", where, "step_folders")
    objects(config, "steps", where, "steps")
    return config


def check_stat(d: Any, where: str, name: str) -> None:
    """A summary statistic: ``{"mean" | "value": number, "ci": [lo, hi], "n"}``."""
    if not isinstance(d, dict):
        raise DataError(
            f"{where}: field '{name}' must be an object, got {json_type(d)}"
        )
    key = "mean" if "mean" in d else "value"
    number(d, key, where, f"{name}.{key}")
    ci = field(d, "ci", where, (list, NONE), default=None, label=f"{name}.ci")
    if ci is not None:
        if len(ci) != 2:
            raise DataError(
                f"{where}: field '{name}.ci' must be [low, high], got {len(ci)} values"
            )
        for i in (0, 1):
            if to_float(ci[i], where, f"{name}.ci[{i}]") is None:
                raise DataError(f"{where}: field '{name}.ci[{i}]' must be a number")
    count(d, "n", where, f"{name}.n")


def check_summary(summary: Any, path: Path) -> dict:
    """``eval/summary.json``: ``{"suites": {suite: {"n", "metrics": {metric:
    stat}, "by": {tag: {value: {"n", metric: stat}}}, "extra"}}}``."""
    where = shown(path)
    expect_object(summary, where, "a JSON object {'suites': {...}}")
    for suite, s in objects(summary, "suites", where, "suites").items():
        name = label("suites", suite)
        count(s, "n", where, f"{name}.n")
        metrics = field(
            s, "metrics", where, (dict, NONE), default=None, label=f"{name}.metrics"
        )
        for metric, stat in (metrics or {}).items():
            check_stat(stat, where, label("suites", suite, "metrics", metric))
        for tag, groups in objects(s, "by", where, f"{name}.by").items():
            for value in groups:
                group = field(
                    groups, value, where, dict, label=label(name, "by", tag, value)
                )
                for key, stat in group.items():
                    at = label("suites", suite, "by", tag, value, key)
                    if key == "n":
                        count(group, "n", where, at)
                    else:
                        check_stat(stat, where, at)
    return summary


def check_records(records: Iterable[dict], path: Path) -> list[dict]:
    """Eval records as the tables read them: ``scores`` numbers (NaN: no
    valid vote), ``tags`` scalars, a weighted score with its weight."""
    out = []
    for i, r in enumerate(records, 1):
        where = f"{shown(path)}: record {i} (id '{label(r['id'])}')"
        scores = field(r, "scores", where, dict)
        for k in scores:
            name = label("scores", k)
            if number(scores, k, where, name) is None:
                raise DataError(f"{where}: field '{name}' must be a number, got null")
        for metric, weight in WEIGHTS.items():
            if metric in scores and weight not in scores:
                raise DataError(
                    f"{where}: score '{metric}' without its weight '{weight}'"
                )
        tags = field(r, "tags", where, dict, default={})
        for k in tags:
            field(tags, k, where, TAG_KINDS, label=label("tags", k))
        r.setdefault("tags", tags)
        out.append(r)
    return out


def check_metric_rows(rows: list[dict], path: Path) -> list[dict]:
    """``metrics.jsonl`` rows (``hat_jax.train.metrics``): ``step`` an integer,
    every other value a number or null."""
    for i, row in enumerate(rows, 1):
        where = f"{shown(path)}: row {i}"
        field(row, "step", where, (int, NONE), default=None)
        for k in row:
            if k != "step":
                number(row, k, where, label(k))
    return rows


def _duration(obj: dict, key: str, where: str) -> float | None:
    """``obj[key]``: seconds, a finite number >= 0 (absent or null: None)."""
    value = number(obj, key, where, key)
    if value is not None and not 0.0 <= value < float("inf"):
        raise DataError(f"{where}: field '{key}' must be seconds >= 0, got {value}")
    return value


def check_done(done: Any, path: Path) -> dict:
    """A step's ``done.json``: ``{"step", "kind", "seconds", "finished",
    "spec", "info": {"steps"}}``, and from drivers that time every attempt
    (`experiments.driver.attempts`) ``"attempts"``, ``"seconds_all"`` and
    ``"untimed_before"``."""
    where = shown(path)
    expect_object(done, where, "a JSON object {'seconds', 'finished', ...}")
    field(done, "seconds", where, float)
    last, total = (_duration(done, k, where) for k in ("seconds", "seconds_all"))
    if total is not None and last is not None and total < last:
        raise DataError(
            f"{where}: field 'seconds_all' ({total}) is below 'seconds' ({last}): "
            "all attempts cannot take less than the last one"
        )
    if count(done, "attempts", where, "attempts") == 0:
        raise DataError(f"{where}: field 'attempts' must be >= 1, got 0")
    field(done, "untimed_before", where, (bool, NONE), default=None)
    for key in ("step", "kind", "finished"):
        field(done, key, where, (str, NONE), default=None)
    field(done, "spec", where, (dict, NONE), default=None)
    info = field(done, "info", where, (dict, NONE), default=None) or {}
    count(info, "steps", where, "info.steps")
    return done
