"""Finding an eval's per-case records and reading them for people to browse.

``hat eval show`` and ``hat eval compare`` name a RUN, which :func:`open_run`
resolves to the folder ``hat eval run --out`` wrote (``summary.json`` and
``SUITE/records.jsonl``). RUN may be:

- that folder itself;
- a folder holding it as ``eval/``: a sweep run (``ROOT/<run>/eval`` links to
  its eval step) or any other folder laid out that way;
- one suite's folder (``OUT/t2``) or its ``records.jsonl``.

Anything else is refused with what was found there, e.g. a training workdir's
``eval/STEP.json`` (RL held-out means, not per-case records) or a sweep root.

Records are data from whoever ran the eval: :func:`read_records` checks each
line's shape as far as the browser uses it, and that no case id comes twice,
raising ``path:line: ...`` (a ``DataError``) instead of failing later with a
traceback. A line cut short at
the end (a run still writing) is left out, as ``hat_jax.eval.records`` does.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from hat_jax.eval.records import RUN_FILE, Record
from hat_jax.jsonl import DataError, field, open_regular, parse_line, read_json
from hat_jax.printable import shown

RECORDS = "records.jsonl"
SUMMARY = "summary.json"
HEADLINE = "success"
# metric -> the score weighting it per case; what experiments/suites/ifeval.py
# and paper/checks.py use (weights are not metrics of their own)
WEIGHTS = {
    "instruction_level_strict": "n_instructions",
    "instruction_level_loose": "n_instructions",
    "valid_tools": "n_calls",  # experiments/suites/apps.py
}
_SCALAR = (str, int, float, bool, type(None))


def quoted(name: object) -> str:
    """``'name'`` for messages, control characters escaped."""
    return f"'{shown(name)}'"


_TEXT = (str, type(None))


def _number(scores: dict, key: str, where: str, label: str) -> None:
    value = field(scores, key, where, float, label=label)
    if isinstance(value, bool):
        raise DataError(f"{where}: field '{label}' must be a number, got boolean")


def _objects(obj: dict, key: str, where: str, label: str) -> list:
    """``obj[key]``: a list of objects (default empty)."""
    items = field(obj, key, where, (list, type(None)), default=None, label=label)
    for i, item in enumerate(items or ()):
        if not isinstance(item, dict):
            raise DataError(f"{where}: field '{label}[{i}]' must be an object")
    return items or []


def check_record(r: dict, where: str) -> Record:
    """A record with the fields the browser reads checked (module docstring);
    absent optional fields get their empty value."""
    for key in ("suite", "harness"):
        field(r, key, where, _TEXT, default=None)
    for key, kinds in (("tags", _SCALAR), ("rationales", _TEXT)):
        obj = r.setdefault(key, field(r, key, where, dict, default={}))
        for k in obj:
            field(obj, k, where, kinds, label=f"{key}.{shown(k)}")
    scores = r.setdefault("scores", field(r, "scores", where, dict, default={}))
    for k in scores:
        _number(scores, k, where, f"scores.{shown(k)}")
    r.setdefault("input", field(r, "input", where, dict, default={}))
    t = r.setdefault("trajectory", field(r, "trajectory", where, dict, default={}))
    for key in ("reply", "status", "user_message"):
        field(t, key, where, _TEXT, default=None, label=f"trajectory.{key}")
    for key in ("meta", "timings"):
        field(
            t, key, where, (dict, type(None)), default=None, label=f"trajectory.{key}"
        )
    for key in ("tool_calls", "hook_events"):
        _objects(t, key, where, f"trajectory.{key}")
    for i, m in enumerate(_objects(t, "messages", where, "trajectory.messages")):
        at = f"trajectory.messages[{i}]"
        field(m, "role", where, str, label=f"{at}.role")
        for key in ("content", "reasoning", "reasoning_content", "name"):
            field(m, key, where, _TEXT, default=None, label=f"{at}.{key}")
        _objects(m, "tool_calls", where, f"{at}.tool_calls")
    return r


def read_records(path: Path) -> list[Record]:
    """The checked records of one file, in order (module docstring).

    Raises:
      DataError: ``path:line: ...`` for the first line that is not a record.
    """
    with open_regular(path) as f:  # a fifo or a device is refused unread
        data = f.read()
    end = data.rfind(b"\n") + 1  # a torn last line is a run still writing
    out, seen = [], {}
    for n, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        where = f"{shown(path)}:{n}"
        r = parse_line(line, where, allow_nan=True)  # NaN: a judge without a vote
        if not isinstance(r, dict) or not isinstance(r.get("id"), str):
            raise DataError(f"{where}: not a record (a JSON object with a string id)")
        if r["id"] in seen:
            raise DataError(
                f"{where}: case id {quoted(r['id'])} again (first on line "
                f"{seen[r['id']]}); pairing needs each case once"
            )
        seen[r["id"]] = n
        out.append(check_record(r, where))
    return out


@dataclasses.dataclass
class EvalRun:
    """One eval's records, suite by suite.

    Attributes:
      name: RUN as the user gave it (for messages and headers).
      path: the eval folder.
      files: suite -> its records file, in the summary's order (then by name).
      summary: ``summary.json`` (empty without one).
    """

    name: str
    path: Path
    files: dict[str, Path]
    summary: dict[str, Any]
    _records: dict[str, list[Record]] = dataclasses.field(default_factory=dict)

    def records(self, suite: str) -> list[Record]:
        if suite not in self._records:
            self._records[suite] = read_records(self.files[suite])
        return self._records[suite]

    def suites(self, wanted: str | None = None) -> list[str]:
        """The suites named in ``wanted`` (comma-separated; all when None)."""
        if not wanted:
            return list(self.files)
        names = list(dict.fromkeys(s.strip() for s in wanted.split(",") if s.strip()))
        if not names:
            raise ValueError("--suite names no suite")
        missing = [quoted(s) for s in names if s not in self.files]
        if missing:
            have = ", ".join(map(shown, self.files)) or "none"
            raise ValueError(
                f"{shown(self.name)} has no suite {', '.join(missing)} "
                f"(its suites: {have})"
            )
        return names

    def group_tags(self, suite: str) -> list[str]:
        """The tags the summary broke the suite down by (its ``by`` keys)."""
        s = (self.summary.get("suites") or {}).get(suite)
        by = s.get("by") if isinstance(s, dict) else None
        return [str(k) for k in by] if isinstance(by, dict) else []

    @property
    def source(self) -> str:
        """What was evaluated: the summary's ``run.source``, else run.json's."""
        run = self.summary.get("run")
        if isinstance(run, dict) and run.get("source"):
            return shown(run["source"])
        path = self.path / RUN_FILE
        if path.is_file():
            try:
                cfg = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError):
                return "?"
            if isinstance(cfg, dict):
                for key in ("model", "endpoint", "policy"):
                    if cfg.get(key):
                        return shown(
                            f"{key}:{cfg[key]}" if key == "policy" else cfg[key]
                        )
        return "?"


def _suite_files(folder: Path) -> dict[str, Path]:
    return {
        p.name: p / RECORDS
        for p in sorted(folder.iterdir())
        if p.is_dir() and (p / RECORDS).is_file()
    }


def _read_summary(folder: Path) -> dict[str, Any]:
    path = folder / SUMMARY
    if not path.is_file():
        return {}
    summary = read_json(path)
    if not isinstance(summary, dict):
        raise DataError(f"{shown(path)}: expected a JSON object (an eval summary)")
    return summary


def _eval_run(name: str, folder: Path) -> EvalRun:
    files = _suite_files(folder)
    summary = _read_summary(folder)
    order = [s for s in summary.get("suites") or {} if s in files]
    files = {s: files[s] for s in [*order, *sorted(set(files) - set(order))]}
    return EvalRun(name, folder, files, summary)


def _is_eval(folder: Path) -> bool:
    return folder.is_dir() and (
        (folder / SUMMARY).is_file() or bool(_suite_files(folder))
    )


def open_run(run: str | Path) -> EvalRun:
    """The eval that RUN names (module docstring).

    Raises:
      ValueError: RUN is no eval, saying what it is instead.
    """
    name, path = str(run), Path(run)
    if path.is_file() or (path / RECORDS).is_file():
        records = path if path.is_file() else path / RECORDS
        folder = records.parent
        return EvalRun(name, folder.parent, {folder.name: records}, {})
    if not path.exists():
        raise ValueError(f"{shown(name)}: no such file or folder")
    if _is_eval(path):
        return _eval_run(name, path)
    sub = path / "eval"
    if _is_eval(sub):
        return _eval_run(name, sub)
    where = shown(path)
    if sub.is_symlink() and not sub.exists():
        raise ValueError(
            f"{where}/eval links to {shown(sub.readlink())}, which does not exist "
            "(the run's eval step has not run yet)"
        )
    if sub.is_dir() and any(sub.glob("*.json")):
        raise ValueError(
            f"{where}/eval holds training-time eval means (STEP.json), not per-case "
            f"records; evaluate it: hat eval run --model {where} --out DIR"
        )
    if path.is_dir():
        runs = sorted(
            p.name
            for p in path.iterdir()
            if (p / "eval").exists() or (p / "eval").is_symlink()
        )
        if runs:
            more = ", ..." if len(runs) > 5 else ""
            raise ValueError(
                f"{where} is a sweep root; name one of its runs, e.g. "
                f"{', '.join(quoted(r) for r in runs[:5])}{more}"
            )
    raise ValueError(
        f"{where}: no eval records here (expected {SUMMARY} or SUITE/{RECORDS}, "
        "as `hat eval run --out` writes, or a run folder with eval/ inside)"
    )


def headline(records: list[Record]) -> str | None:
    """The score a suite is judged by: success, else its first score that is
    not a weight (IFEval: prompt_level_strict); None without scores."""
    names = list(dict.fromkeys(k for r in records for k in r["scores"]))
    if HEADLINE in names:
        return HEADLINE
    weights = set(WEIGHTS.values())
    return next((n for n in names if n not in weights), None)


def metric_names(records: list[Record]) -> list[str]:
    """Every score name in the records, weights left out, in first-seen order."""
    weights = set(WEIGHTS.values())
    names = dict.fromkeys(k for r in records for k in r["scores"])
    return [n for n in names if n not in weights]
