"""A sweep root's runs as typed rows: config meta, run status, eval summaries.

The layout (written by the sweep driver)::

    ROOT/sweep.json                 {"config", "arg", "scale", "runs": [name, ...]}
    ROOT/<run>/config.json          resolved config, with "meta" (name, row, group,
                                    sft, opd, rl, leave_out, scale) and
                                    "step_folders" {step: folder, relative to ROOT}
    ROOT/<run>/run.json             {"status", "seconds", "stages": {stage: {"path",
                                    "seconds"}}}; stage paths are absolute or
                                    relative to ROOT
    ROOT/<run>/eval/summary.json    `hat eval run`'s summary
    ROOT/<run>/eval/<suite>/records.jsonl
    <stage workdir>/metrics.jsonl
    ROOT/_steps/<step>-<hash>/done.json   {"step", "kind", "seconds", "finished",
                                    "spec", "info"} (paper.tables.steps)

Only runs whose status is "done" are loaded; the others are listed in
``Sweep.skipped`` with the reason. A missing suite, metric or file reads as
None, which the tables show as "–".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hat_jax.eval.records import read_records
from hat_jax.jsonl import field, read_json
from hat_jax.printable import shown
from hat_jax.train.metrics import read_metrics
from paper.checks import (
    check_config,
    check_metric_rows,
    check_records,
    check_run_info,
    check_stat,
    check_summary,
    check_sweep,
    label,
)

DONE = "done"
NONE = type(None)
# Meta field -> the JSON types config.json's meta may give it
META_KINDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "row": (str,),
    "group": (str,),
    "sft": (str, NONE),
    "opd": (bool,),
    "rl": (bool,),
    "leave_out": (str, NONE),
    "scale": (str, NONE),
}
# How each scale runs, for table captions.
SCALE_PLATFORM = {
    "micro": "CPU",
    "tiny": "CPU",
    "small": "one GPU",
    "small_cpu": "2 CPU cores, a reduced budget",
    "compact_long": "2 CPU cores",
    "paper": "GPU/TPU cluster",
}


@dataclasses.dataclass(frozen=True)
class Stat:
    """A mean (fraction or difference of fractions) with its 95 % interval."""

    mean: float | None
    lo: float | None = None
    hi: float | None = None
    n: int = 0

    @classmethod
    def from_summary(
        cls, d: Any, where: str = "summary", name: str = "stat"
    ) -> Stat | None:
        """From a summary's ``{"mean" | "value", "ci", "n"}`` (None if absent or
        its mean is null).

        Raises:
          DataError: ``where: field 'NAME.ci' must be ...`` for another shape.
        """
        if d is None:
            return None
        check_stat(d, where, name)
        mean = d.get("mean", d.get("value"))
        if mean is None:
            return None
        lo, hi = (float(x) for x in d["ci"]) if d.get("ci") else (None, None)
        return cls(float(mean), lo, hi, int(d.get("n") or 0))

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0 (False without one)."""
        return self.lo is not None and (self.lo > 0 or self.hi < 0)


@dataclasses.dataclass(frozen=True)
class Meta:
    """What a run is (``config.json``'s ``meta``)."""

    name: str
    row: str
    group: str = "main"
    sft: str | None = None
    opd: bool = False
    rl: bool = False
    leave_out: str | None = None
    scale: str | None = None

    @classmethod
    def from_config(cls, name: str, config: dict, where: str = "config.json") -> Meta:
        """From ``config["meta"]`` (the run's folder name where it has none).

        Raises:
          DataError: ``where: field 'meta.KEY' must be ...``.
        """
        meta = field(config, "meta", where, (dict, NONE), default=None) or {}
        m = {}
        for key, kinds in META_KINDS.items():
            if key in meta:
                m[key] = field(meta, key, where, kinds, label=f"meta.{key}")
        m.setdefault("name", name)
        m.setdefault("row", m["name"])
        return cls(**m)

    @property
    def pipeline(self) -> tuple[str | None, bool, bool]:
        """(sft, opd, rl): which stages ran."""
        return self.sft, bool(self.opd), bool(self.rl)


@dataclasses.dataclass
class Run:
    """One finished run of a sweep."""

    name: str
    path: Path
    root: Path
    meta: Meta
    config: dict
    info: dict
    summary: dict | None
    _records: dict = dataclasses.field(default_factory=dict, repr=False)

    def suite(self, name: str) -> dict | None:
        return ((self.summary or {}).get("suites") or {}).get(name)

    def stat(self, suite: str, metric: str) -> Stat | None:
        """A suite metric's mean and CI."""
        s = self.suite(suite) or {}
        return Stat.from_summary((s.get("metrics") or {}).get(metric))

    def by(self, suite: str, tag: str, value: str, metric: str) -> Stat | None:
        """A metric over the cases whose ``tag`` is ``value`` (``by`` block)."""
        s = self.suite(suite) or {}
        group = ((s.get("by") or {}).get(tag) or {}).get(value) or {}
        return Stat.from_summary(group.get(metric))

    def extra_stat(self, suite: str, *keys: str) -> Stat | None:
        """A statistic inside a suite's ``extra`` block (None where absent)."""
        where = shown(self.path / "eval" / "summary.json")
        name = label("suites", suite, "extra", *keys)
        return Stat.from_summary(self.extra(suite, *keys), where, name)

    def extra(self, suite: str, *keys: str) -> Any:
        """A value inside a suite's ``extra`` block (None where absent)."""
        node: Any = (self.suite(suite) or {}).get("extra")
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        return node

    def records(self, suite: str) -> list[dict] | None:
        """The suite's per-case records (None without a records file)."""
        if suite not in self._records:
            path = self.path / "eval" / suite / "records.jsonl"
            recs = check_records(read_records(path), path) if path.exists() else None
            self._records[suite] = recs
        return self._records[suite]

    def stages(self) -> dict[str, Path]:
        """Stage name -> its workdir."""
        out = {}
        for stage, s in (self.info.get("stages") or {}).items():
            if isinstance(s, dict) and s.get("path"):
                p = Path(s["path"])
                out[stage] = p if p.is_absolute() else self.root / p
        return out

    def step_folders(self) -> dict[str, Path]:
        """Step name -> its folder, in pipeline order (config.json's
        ``step_folders``; without them, the stage workdirs)."""
        folders = self.config.get("step_folders") or {}
        if not folders:
            return self.stages()
        paths = {name: Path(p) for name, p in folders.items()}
        return {n: p if p.is_absolute() else self.root / p for n, p in paths.items()}

    def stage_metrics(self, stage: str) -> list[dict]:
        """The rows of a stage's ``metrics.jsonl`` (empty when absent)."""
        path = self.stages().get(stage)
        if path is None or not (path / "metrics.jsonl").exists():
            return []
        path = path / "metrics.jsonl"
        return check_metric_rows(read_metrics(path), path)


@dataclasses.dataclass
class Sweep:
    """A sweep root: its ``sweep.json``, finished runs and skipped ones."""

    root: Path
    info: dict
    runs: list[Run]
    skipped: list[tuple[str, str]]

    def find(self, **want: Any) -> Run | None:
        """The first run whose meta has every given value."""
        for r in self.runs:
            if all(getattr(r.meta, k) == v for k, v in want.items()):
                return r
        return None

    def pipeline(self, sft: str | None, opd: bool, rl: bool) -> Run | None:
        """The main-group run of a pipeline (no dimension left out)."""
        for r in self.runs:
            if r.meta.leave_out is None and r.meta.pipeline == (sft, opd, rl):
                if r.meta.group == "main":
                    return r
        return None

    @property
    def scale(self) -> str:
        scales = [r.meta.scale for r in self.runs if r.meta.scale]
        return self.info.get("scale") or (scales[0] if scales else "unknown")

    def scale_note(self) -> str:
        """E.g. "tiny scale: 2-layer qwen3 model (hidden 64), CPU"."""
        facts = next((f for r in self.runs if (f := model_facts(r.config))), "")
        tail = ", ".join(x for x in (facts, SCALE_PLATFORM.get(self.scale)) if x)
        return f"{self.scale} scale" + (f": {tail}" if tail else "")


def _walk(node: Any) -> Iterator[Any]:
    """Every value inside ``node`` (itself first), depth first in order,
    without recursion (a config may nest deeply)."""
    stack = [node]
    while stack:
        v = stack.pop()
        yield v
        if isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))


def _find_model(node: Any) -> dict | None:
    """The first model block (a dict with ``num_hidden_layers``) in ``node``."""
    return next(
        (v for v in _walk(node) if isinstance(v, dict) and "num_hidden_layers" in v),
        None,
    )


def _model_overrides(node: Any) -> dict:
    """``model.KEY=VALUE`` override strings anywhere in a config (the first of
    each key wins), as {KEY: VALUE}."""
    out: dict[str, str] = {}
    for v in _walk(node):
        if isinstance(v, str) and v.startswith("model.") and "=" in v:
            key, value = v[len("model.") :].split("=", 1)
            out.setdefault(key, value)
    return out


def model_facts(config: dict) -> str:
    """E.g. "2-layer qwen3 model (hidden 64)", from the first model block in a
    config, or else from its ``model.*=`` overrides (the sweep driver's steps)."""
    m = _find_model(config) or _model_overrides(config)
    if "num_hidden_layers" not in m:
        return ""
    kind = m.get("model_type") or ""
    text = f"{m['num_hidden_layers']}-layer {kind} model".replace("  ", " ")
    if m.get("hidden_size"):
        text += f" (hidden {m['hidden_size']})"
    return text


def _read_json(path: Path) -> dict | None:
    return read_json(path) if path.exists() else None


def load_run(root: Path, name: str, done_only: bool = True) -> tuple[Run | None, str]:
    """A run (with ``done_only``, a done one), or None and why it is skipped."""
    path = root / name
    info = _read_json(path / "run.json")
    if info is None:
        return None, "no run.json"
    check_run_info(info, path / "run.json")
    status = info.get("status", "unknown")
    if status != DONE and done_only:
        return None, f"status {shown(status)}"
    config = _read_json(path / "config.json")
    config = {} if config is None else check_config(config, path / "config.json")
    summary = _read_json(path / "eval" / "summary.json")
    if summary is not None:
        check_summary(summary, path / "eval" / "summary.json")
    meta = Meta.from_config(name, config, shown(path / "config.json"))
    return Run(name, path, root, meta, config, info, summary), ""


def load_sweep(root: str | Path) -> Sweep:
    """Loads a sweep root (its run list from ``sweep.json``, else every folder
    holding a ``run.json``)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{shown(root)}: no such sweep root")
    info = _read_json(root / "sweep.json")
    info = {} if info is None else check_sweep(info, root / "sweep.json")
    names = info.get("runs") or sorted(
        p.name for p in root.iterdir() if (p / "run.json").exists()
    )
    if not names:  # tables of nothing would look like a result
        raise ValueError(
            f"{shown(root)}: not a sweep root (no sweep.json listing runs, no run "
            "folder with a run.json)"
        )
    inside = root.resolve()
    for name in names:  # a run is a folder of the root, never a path elsewhere
        ok = isinstance(name, str) and name not in ("", ".", "..")
        ok = ok and Path(name).name == name
        if not ok or inside not in (root / name).resolve().parents:
            raise ValueError(
                f"{shown(root)}: run {shown(repr(name))} is not a folder inside the "
                "sweep root"
            )
    runs, skipped = [], []
    for name in names:
        run, why = load_run(root, name)
        if run is None:
            skipped.append((name, why))
        else:
            runs.append(run)
    return Sweep(root, info, runs, skipped)
