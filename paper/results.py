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
from pathlib import Path
from typing import Any

from hat_jax.eval.records import read_records
from hat_jax.jsonl import read_json
from hat_jax.train.metrics import read_metrics

DONE = "done"
# How each scale runs (DESIGN.md), for table captions.
SCALE_PLATFORM = {
    "micro": "CPU",
    "tiny": "CPU",
    "small": "one GPU",
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
    def from_summary(cls, d: Any) -> Stat | None:
        """From a summary's ``{"mean" | "value", "ci", "n"}`` (None if absent)."""
        if not isinstance(d, dict):
            return None
        mean = d.get("mean", d.get("value"))
        if mean is None:
            return None
        lo, hi = d.get("ci") or (None, None)
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
    def from_config(cls, name: str, config: dict) -> Meta:
        m = dict(config.get("meta") or {})
        fields = {f.name for f in dataclasses.fields(cls)}
        m = {k: v for k, v in m.items() if k in fields}
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
            self._records[suite] = read_records(path) if path.exists() else None
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
        return read_metrics(path / "metrics.jsonl")


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


def _find_model(node: Any) -> dict | None:
    if isinstance(node, dict):
        if "num_hidden_layers" in node:
            return node
        for v in node.values():
            found = _find_model(v)
            if found is not None:
                return found
    return None


def _model_overrides(node: Any, out: dict) -> dict:
    """``model.KEY=VALUE`` override strings anywhere in a config (the first of
    each key wins), as {KEY: VALUE}."""
    if isinstance(node, str) and node.startswith("model.") and "=" in node:
        key, value = node[len("model.") :].split("=", 1)
        out.setdefault(key, value)
    elif isinstance(node, dict):
        for v in node.values():
            _model_overrides(v, out)
    elif isinstance(node, (list, tuple)):
        for v in node:
            _model_overrides(v, out)
    return out


def model_facts(config: dict) -> str:
    """E.g. "2-layer qwen3 model (hidden 64)", from the first model block in a
    config, or else from its ``model.*=`` overrides (the sweep driver's steps)."""
    m = _find_model(config) or _model_overrides(config, {})
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
    status = info.get("status", "unknown")
    if status != DONE and done_only:
        return None, f"status {status}"
    config = _read_json(path / "config.json") or {}
    summary = _read_json(path / "eval" / "summary.json")
    meta = Meta.from_config(name, config)
    return Run(name, path, root, meta, config, info, summary), ""


def load_sweep(root: str | Path) -> Sweep:
    """Loads a sweep root (its run list from ``sweep.json``, else every folder
    holding a ``run.json``)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: no such sweep root")
    info = _read_json(root / "sweep.json") or {}
    if not isinstance(info, dict) or not isinstance(info.get("runs", []), list):
        raise ValueError(f"{root / 'sweep.json'}: expected {{'runs': [names]}}")
    names = info.get("runs") or sorted(
        p.name for p in root.iterdir() if (p / "run.json").exists()
    )
    inside = root.resolve()
    for name in names:  # a run is a folder of the root, never a path elsewhere
        ok = isinstance(name, str) and name not in ("", ".", "..")
        ok = ok and Path(name).name == name
        if not ok or inside not in (root / name).resolve().parents:
            raise ValueError(
                f"{root}: run {name!r} is not a folder inside the sweep root"
            )
    runs, skipped = [], []
    for name in names:
        run, why = load_run(root, name)
        if run is None:
            skipped.append((name, why))
        else:
            runs.append(run)
    return Sweep(root, info, runs, skipped)
