"""A pipeline: named steps whose outputs are keyed by what they compute.

A step is a dict with a ``kind`` (a registered step kind, `experiments.driver.
steps`) and its parameters. A string parameter that starts with ``@NAME`` (or
holds ``=@NAME`` inside, as in the override ``data.train=@sim/data.jsonl``)
refers to the folder of step ``NAME`` (``@NAME/FILE``: a file in it); that step
must finish first. Each step's folder is::

    ROOT/_steps/<name>-<hash>/      hash = sha256(kind, params with references
                                    replaced by the hashes they point at,
                                    the kind's version and fingerprint, the
                                    hash of the code the kind runs)

so runs that share a prefix (the data, the tokenizer, the base model) share its
folders and compute it once. As a step's hash holds its inputs' hashes, a
change to one step's code (`experiments.driver.codehash`) or config gives it
and every step after it new folders; the others are kept. A step is finished
when its ``done.json`` exists;
it is written last and atomically, with the step's wall time over all its
attempts (`experiments.driver.attempts`). An unfinished folder is handed to the step
again, and the step resumes in it (train stages from their checkpoints, eval
from its records). A lock file per step (``_steps/.locks/``) keeps parallel runs
from computing the same step twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.driver import attempts, codehash, registry
from hat_jax import provenance
from hat_jax.jsonl import write_text_atomic

STEPS_DIR = "_steps"
DONE = "done.json"
# Fields that describe a step without changing what it computes.
UNHASHED = ("est_s", "nodes")
_REF = re.compile(r"(^|=)@(\w+)")


@dataclass(frozen=True)
class Step:
    """One planned step: its name, spec, hash and folder."""

    name: str
    spec: dict[str, Any]
    deps: tuple[str, ...]
    hash: str
    path: Path
    # What the hash is made of, each part digested (done.json records it, and
    # a dry run compares it with earlier folders): {"params", "inputs": {dep:
    # hash}, "version", "fingerprint" (or None), "code" (or None)}.
    parts: dict[str, Any] = field(default_factory=dict, compare=False)
    # The kind's code files {relative path: file hash} (`codehash.code_files`).
    code: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def kind(self) -> str:
        return self.spec["kind"]

    @property
    def done(self) -> bool:
        return (self.path / DONE).exists()

    @property
    def est_s(self) -> float:
        return float(self.spec.get("est_s") or 1.0)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def references(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The step names ``spec`` refers to (``@NAME``), in order of appearance."""
    found = [m.group(2) for s in _strings(spec) for m in _REF.finditer(s)]
    return tuple(dict.fromkeys(found))


def substitute(value: Any, table: Mapping[str, str]) -> Any:
    """``value`` with each reference ``@NAME`` replaced by ``table[NAME]``."""
    if isinstance(value, str):
        return _REF.sub(lambda m: m.group(1) + table[m.group(2)], value)
    if isinstance(value, Mapping):
        return {k: substitute(v, table) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [substitute(v, table) for v in value]
    return value


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def plan(steps: Mapping[str, Mapping[str, Any]], root: str | Path) -> list[Step]:
    """Steps in dependency order, each with its hash and folder under ``root``.

    Raises:
      ValueError: an unknown kind, a reference to a missing step, or a cycle.
    """
    steps = {name: dict(spec) for name, spec in steps.items()}
    for name, spec in steps.items():
        registry.get(spec.get("kind", ""))  # fails early with the known kinds
        missing = [d for d in references(spec) if d not in steps]
        if missing:
            raise ValueError(f"step {name!r} refers to unknown steps {missing}")
    root = Path(root)
    planned: dict[str, Step] = {}
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in planned:
            return
        if name in visiting:
            raise ValueError(f"steps form a cycle through {name!r}")
        visiting.add(name)
        spec = steps[name]
        deps = references(spec)
        for d in deps:
            visit(d)
        visiting.discard(name)
        hashes = {d: "#" + planned[d].hash for d in deps}
        raw = {k: v for k, v in spec.items() if k not in UNHASHED}
        body = substitute(raw, hashes)
        kind = registry.get(spec["kind"])
        key: dict[str, Any] = {"body": body, "version": kind.version}
        parts: dict[str, Any] = {
            "params": _digest(raw),  # references by name: the step's own config
            "inputs": {d: planned[d].hash for d in deps},
            "version": kind.version,
            "fingerprint": None,
            "code": None,
        }
        if kind.fingerprint is not None:
            key["fingerprint"] = kind.fingerprint(body)
            parts["fingerprint"] = _digest(key["fingerprint"])
        code: dict[str, str] = {}
        entries = kind.code_entries(body)
        if entries:  # a kind without code keeps the hash it had before code
            code = codehash.code_files(entries)
            key["code"] = parts["code"] = codehash.code_hash(code)
        h = _digest(key)
        path = root / STEPS_DIR / f"{name}-{h}"
        planned[name] = Step(name, spec, deps, h, path, parts, code)

    for name in steps:
        visit(name)
    return list(planned.values())


def resolved(step: Step, planned: Mapping[str, Step]) -> dict[str, Any]:
    """The step's spec with each reference replaced by its folder's path."""
    paths = {d: str(planned[d].path.resolve()) for d in step.deps}
    return substitute(step.spec, paths)


def write_json(path: Path, obj: Any) -> None:
    """Writes JSON atomically (a fresh temporary file renamed over the target)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    locks = path.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / (path.name + ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class Outcome:
    """What running (or finding) a step gave."""

    step: Step
    seconds: float  # the compute time recorded in done.json
    cached: bool
    info: dict[str, Any]


def execute(
    step: Step,
    planned: Mapping[str, Step],
    *,
    progress: bool = True,
    before: Callable[[Step], None] | None = None,
) -> Outcome:
    """Runs ``step`` unless its ``done.json`` exists; returns its outcome.

    Args:
      step: the step (its dependencies must be done).
      planned: every step of the pipeline by name (for references).
      progress: let the step show its own progress bars.
      before: called just before the step computes (tests raise here).
    """
    with _locked(step.path):
        done = step.path / DONE
        if done.exists():
            record = json.loads(done.read_text())
            return Outcome(step, float(record["seconds"]), True, record["info"])
        if before is not None:
            before(step)
        params = resolved(step, planned)
        with attempts.Clock(step.path) as clock:
            t0 = time.perf_counter()
            try:
                info = registry.get(step.kind).run(params, step.path, progress=progress)
            finally:
                release_memory()
            seconds = time.perf_counter() - t0
        record = {
            "step": step.name,
            "kind": step.kind,
            "hash": step.hash,
            "seconds": seconds,  # this attempt; all attempts: clock.summary()
            **clock.summary(),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "spec": step.spec,
            "info": info or {},
            "key": step.parts,  # what the hash was made of (a dry run reads it)
            "code": {"hash": step.parts.get("code"), "files": step.code},
            "provenance": provenance.collect(config=params),  # never hashed
        }
        write_json(done, record)
        return Outcome(step, seconds, False, info or {})


# A process holding more than this after a step frees JAX's caches (below).
RELEASE_ABOVE_BYTES = 4 << 30


def resident_bytes() -> int | None:
    """This process's resident memory (Linux ``/proc``), or None elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def release_memory(above: int = RELEASE_ABOVE_BYTES) -> bool:
    """Frees what a finished step left behind before the next one runs in this
    process, when the process holds more than ``above`` bytes (or its size is
    unknown): JAX's compiled executables (and the weights a jitted closure
    holds as constants) and unreachable objects. Without it a real-weights sweep
    (hat_small: an evaluation, then an SFT step of 1 x 3,072 tokens in the same
    process) ran out of 24 GB. Small steps keep the caches: clearing them made
    every later small step, and every eager op, compile again (in `make test`,
    ~2 minutes). It is not all: after an SFT and its evaluation ~8 GB stayed
    resident, so real-weights runs go one process per run
    (``make reproduce-small``). Returns whether it cleared."""
    import gc

    import jax

    size = resident_bytes()
    if size is not None and size <= above:
        return False
    jax.clear_caches()
    gc.collect()
    return True


def enable_compile_cache(folder: str | Path | None) -> None:
    """Keeps XLA executables in ``folder`` (JAX's persistent compilation cache).

    The runs of a sweep compile the same shapes again and again (every SFT
    stage, every evaluation); on 2 CPU cores compilation is most of a short
    step's time, and the cache makes a micro evaluation ~5x faster.
    """
    if not folder:
        return
    import jax

    Path(folder).mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(Path(folder).resolve()))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def cache_folder(args, root: Path) -> str:
    """The ``--jax-cache`` folder of a driver command (default ROOT/_jax_cache)."""
    given = getattr(args, "jax_cache", None)
    return str(Path(root) / "_jax_cache") if given is None else given
