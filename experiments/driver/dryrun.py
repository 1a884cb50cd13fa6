"""``--dry-run`` of `hat sweep` / `hat run`: the plan, and why each step would run.

Nothing is run and nothing is written (no folder, no lock, no compile cache):
the runs are planned (`pipeline.plan`, which hashes the config and the code
each kind declares) and each step of them is looked up under ROOT. A step is

    cached      its folder holds ``done.json``
    resume      its folder exists without one (an interrupted attempt; a
                training step names its newest checkpoint and its steps)
    run         no folder has its hash; the reason compares it with the
                finished folder of the same step name that matches it best
                (``done.json``'s ``key``: what its hash was made of)::

                  not run before            no finished folder of that name
                  inputs changed (B)        a step it reads has a new hash
                  config changed (n, seed)  its own spec differs in those keys
                  resolved config changed   its fingerprint (e.g. a default in
                                            a stage's config file) differs
                  kind version 1 -> 2       the step function changed
                  code changed in a.py, ... the files its kind runs

followed by the ETA the driver estimates (the steps' ``est_s``, a resumed
training step's scaled to the steps it has left).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.driver import attempts, codehash, pipeline
from experiments.driver.progress import Progress, clock, resume_point

PARTS = ("params", "inputs", "fingerprint", "version", "code")
SHOWN_FILES = 4  # changed files named before "+N more"


def _spent_text(seconds: float, n: int, untimed: bool) -> str:
    """E.g. "0:38:12 over 2 timed attempts, earlier ones untimed"."""
    text = f"{clock(seconds)} over {n} timed attempt" + ("" if n == 1 else "s")
    return text + (", earlier ones untimed" if untimed else "")


@dataclass
class Planned:
    """One distinct step of the plan: its status, why, and the runs using it."""

    step: pipeline.Step
    status: str  # "cached" | "resume" | "run"
    why: str
    runs: list[str] = field(default_factory=list)


def _done(folder: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((folder / pipeline.DONE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _earlier(step: pipeline.Step, root: Path) -> list[dict[str, Any]]:
    """The finished folders of ``step``'s name and kind, other than its own."""
    folder = root / pipeline.STEPS_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"{step.name}-*")):
        if path == step.path or path.name.rsplit("-", 1)[0] != step.name:
            continue
        record = _done(path)
        if record is not None and record.get("kind") == step.kind:
            out.append(record)
    return out


def _score(record: dict[str, Any], step: pipeline.Step) -> tuple[int, str]:
    key = record.get("key")
    same = -1
    if isinstance(key, dict):
        same = sum(key.get(k) == step.parts.get(k) for k in PARTS)
    return same, str(record.get("finished", ""))  # ties: the newest


def _few(paths: list[str]) -> str:
    more = len(paths) - SHOWN_FILES
    return ", ".join(paths[:SHOWN_FILES]) + (f" (+{more} more)" if more > 0 else "")


def _differing(a: Any, b: Any) -> list[str]:
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    skip = {"kind", *pipeline.UNHASHED}
    return sorted(
        k for k in a.keys() | b.keys() if k not in skip and a.get(k) != b.get(k)
    )


def why_run(step: pipeline.Step, root: Path) -> str:
    """Why ``step`` (not done, no folder) would compute (module docstring)."""
    earlier = _earlier(step, root)
    if not earlier:
        return f"not run before (no finished {step.name!r} step)"
    best = max(earlier, key=lambda r: _score(r, step))
    key = best.get("key")
    if not isinstance(key, dict):
        return (
            f"no finished step with this key (its {step.name!r} folders "
            "predate recorded keys)"
        )
    new = step.parts
    reasons = []
    old_in, new_in = key.get("inputs") or {}, new.get("inputs") or {}
    inputs = sorted(
        d for d in old_in.keys() | new_in.keys() if old_in.get(d) != new_in.get(d)
    )
    if inputs:
        reasons.append(f"inputs changed ({', '.join(inputs)})")
    if key.get("params") != new.get("params"):
        keys = _differing(best.get("spec"), step.spec)
        reasons.append("config changed" + (f" ({', '.join(keys)})" if keys else ""))
    elif key.get("fingerprint") != new.get("fingerprint") and not inputs:
        reasons.append("resolved config changed")
    if key.get("version") != new.get("version"):
        reasons.append(f"kind version {key.get('version')} -> {new.get('version')}")
    if key.get("code") != new.get("code"):
        code = best.get("code") if isinstance(best.get("code"), dict) else {}
        old_files = code.get("files") if isinstance(code.get("files"), dict) else {}
        paths = codehash.changed(old_files, step.code)
        reasons.append("code changed" + (f" in {_few(paths)}" if paths else ""))
    return "; ".join(reasons) or "no finished step with this key"


def plan_of(runs, root: str | Path) -> list[Planned]:
    """Each distinct step of ``runs`` (in order of first use) with its status."""
    root = Path(root)
    found: dict[Path, Planned] = {}
    for r in runs:
        for s in r.steps:
            if s.path not in found:
                if s.done:
                    found[s.path] = Planned(s, "cached", "")
                elif s.path.exists():
                    notes = []
                    if point := resume_point(s.path):
                        notes.append(f"checkpoint at step {point[0]:,} of {point[1]:,}")
                    if so_far := attempts.spent(s.path):
                        notes.append(_spent_text(*so_far))
                    why = "an unfinished attempt"
                    why += f" ({'; '.join(notes)})" if notes else ""
                    found[s.path] = Planned(s, "resume", why)
                else:
                    found[s.path] = Planned(s, "run", why_run(s, root))
            if r.name not in found[s.path].runs:
                found[s.path].runs.append(r.name)
    return list(found.values())


def print_plan(
    runs, root: str | Path, *, prog: str, finished=(), stream=None
) -> list[Planned]:
    """Prints the plan of ``runs`` under ``root``; returns it (`plan_of`).

    Args:
      runs: the runs (`runs.Run`) the command would run.
      root: the output root (read only).
      prog: the command's name, for the header.
      finished: names of runs the command would skip as finished.
      stream: where to print (default stdout).
    """
    stream = stream or sys.stdout
    planned = plan_of(runs, root)
    todo = [p for p in planned if p.status != "cached"]
    say = lambda text: print(text, file=stream)  # noqa: E731
    say(
        f"{prog} --dry-run: {len(runs)} runs, {len(planned)} steps under {root} "
        "(nothing is run or written)"
    )
    wn = max([len(p.step.name) for p in planned] + [4])
    wk = max([len(p.step.kind) for p in planned] + [4])
    say(f"  {'step':<{wn}}  {'kind':<{wk}}  {'hash':<12}  status")
    for p in planned:
        status = p.status + (f": {p.why}" if p.why else "")
        say(
            f"  {p.step.name:<{wn}}  {p.step.kind:<{wk}}  {p.step.hash:<12}  "
            f"{status}  [{', '.join(p.runs)}]"
        )
    say("runs:")
    for r in runs:
        n = sum(p.status != "cached" and r.name in p.runs for p in planned)
        state = (
            "finished earlier; skipped"
            if r.name in finished
            else (f"{n} of {len(r.steps)} steps to compute")
        )
        say(f"  {r.name}: {state}")
    eta = Progress([p.step for p in planned], n_runs=len(runs), stream=stream).eta()
    say(f"to compute: {len(todo)} of {len(planned)} steps, ETA {clock(eta)} (est_s)")
    return planned
