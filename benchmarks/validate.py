"""Harness validation time and error size on hostile inputs (issue 17, point 3).

Cases, each a full check whose answer is a list of errors:
  enum         `check_schema` of a string schema with an N-value enum (two values
               repeated at the end);
  references   `load_harness` of a folder whose first skill refers N times to
               unknown tools (one per line);
  skills       `load_harness` of a folder with N extra skills, each referring to
               an unknown skill (every error once named all N skills).
For contrast, the replaced quadratic checks (pairwise enum duplicates, counting
lines from the start of the body per reference) are timed at small N, and the
error text the old "expected one of [every name]" messages would have made is
measured. Times are the median of --reps runs (perf_counter, one process).

    python benchmarks/validate.py [--reps 3] [--out benchmarks/results/validate.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hat_jax.harness import HarnessError, builtin_path, load_harness
from hat_jax.harness import loader as loader_mod
from hat_jax.harness.json_schema import _same, check_schema
from hat_jax.harness.loader import tool_references
from hat_jax.harness.spec import Skill


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _median(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _load_errors(folder: Path) -> HarnessError:
    try:
        load_harness(folder)
    except HarnessError as e:
        return e
    raise AssertionError("expected errors")


def _enum_schema(n: int) -> dict:
    return {"type": "string", "enum": [f"v{i}" for i in range(n)] + ["v7", "v1"]}


def _references_folder(root: Path, n: int) -> Path:
    d = root / f"refs_{n}"
    shutil.copytree(builtin_path("taolive_v1"), d)
    p = d / "skills" / "01_item_qa.md"
    p.write_text(p.read_text() + "".join(f"`t{i % 10}`\n" for i in range(n)))
    return d


def _skills_folder(root: Path, n: int) -> Path:
    d = root / f"skills_{n}"
    shutil.copytree(builtin_path("taolive_v1"), d)
    for i in range(n):
        (d / "skills" / f"9{i:05d}.md").write_text(
            f"---\nname: s{i:05d}\nkind: strategy\ndescription: S.\n---\n\n"
            f'Then load_skill("gone{i}").\n'
        )
    return d


# --- The replaced checks, as they were (for contrast at small n) -------------------


def _old_enum(enum: list) -> int:
    return sum(any(_same(v, w) for w in enum[:i]) for i, v in enumerate(enum))


def _old_references(skill: Skill, tool_names: list[str]) -> list[str]:
    errors = []
    for ref, pos, _ in tool_references(skill.body):
        if ref not in tool_names:
            line = 1 + skill.body.count("\n", 0, pos)
            msg = f"unknown tool {ref!r}; expected one of {list(tool_names)}"
            errors.append(f"f.md:{line}: skill {skill.name!r} refers to an {msg}")
    return errors


def _new_references(skill: Skill, tool_names: list[str]) -> list[str]:
    errors = []
    names = {"skill": [skill.name], "tool": tool_names}
    loader_mod._check_references([("f.md", skill, 1, 1)], names, errors)
    return errors


def _old_skill_error_bytes(n_known: int, n_errors: int) -> int:
    """Bytes of the old messages: each listed every skill name."""
    names = [f"s{i:05d}" for i in range(n_known)]
    return n_errors * len(f"; expected one of {names}")


_COLUMNS = (  # row key, format, width (after case and n)
    ("seconds", ".3f", 9),
    ("old_seconds", ".3f", 9),
    ("errors", ",d", 8),
    ("errors_kept", "d", 5),
    ("error_bytes", ",d", 12),
    ("old_error_bytes", ",d", 12),
)


def _measure(args) -> list[dict]:
    rows = []
    schema = _enum_schema(args.enum)
    t, errs = _median(lambda: check_schema(schema), args.reps)
    rows.append({"case": "enum", "n": args.enum, "seconds": t, "errors": len(errs)})
    rows[-1]["error_bytes"] = sum(len(m) for _, m in errs)
    with tempfile.TemporaryDirectory() as tmp:
        for case, build, n in (
            ("references", _references_folder, args.references),
            ("skills", _skills_folder, args.skills),
        ):
            folder = build(Path(tmp), n)
            t, e = _median(lambda f=folder: _load_errors(f), args.reps)
            row = {"case": case, "n": n, "seconds": t, "errors": e.total}
            row |= {"errors_kept": len(e.errors), "error_bytes": len(str(e))}
            if case == "skills":  # the builtin's 5 skills are named too
                row["old_error_bytes"] = _old_skill_error_bytes(n + 5, n)
            rows.append(row)
    for n in map(int, args.old_enum.split(",")):
        small = _enum_schema(n)
        t_old, _ = _median(lambda s=small: _old_enum(s["enum"]), 1)
        t_new, _ = _median(lambda s=small: check_schema(s), args.reps)
        rows.append({"case": "enum, old vs new", "n": n, "seconds": t_new})
        rows[-1]["old_seconds"] = t_old
    tools = ["load_skill", "check_stock"]
    for n in map(int, args.old_references.split(",")):
        body = "".join(f"Call `t{i % 10}` now.\n" for i in range(n))
        skill = Skill("s", "reply", "d", body)
        t_old, _ = _median(lambda k=skill: _old_references(k, tools), 1)
        t_new, errs = _median(lambda k=skill: _new_references(k, tools), args.reps)
        rows.append({"case": "references, old vs new", "n": n, "seconds": t_new})
        rows[-1] |= {"old_seconds": t_old, "errors": len(errs)}
    return rows


def _print(rows: list[dict], reps: int) -> None:
    print(
        f"harness validation on {_cpu()} ({os.cpu_count()} cpus), median of "
        f"{reps} runs (old: one run)"
    )
    print(
        f"{'case':22s} {'n':>8s} {'seconds':>9s} {'old s':>9s} {'errors':>8s} "
        f"{'kept':>5s} {'error text':>12s} {'old text':>12s}"
    )
    for r in rows:
        cells = (
            format(r[k], f).rjust(w) if k in r else "-".rjust(w) for k, f, w in _COLUMNS
        )
        print(f"{r['case']:22s} {r['n']:8,d} " + " ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--enum", type=int, default=100_000)
    ap.add_argument("--references", type=int, default=100_000)
    ap.add_argument("--skills", type=int, default=3_000)
    ap.add_argument("--old-enum", default="1000,2000,4000", help="quadratic: small")
    ap.add_argument("--old-references", default="5000,10000,20000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="benchmarks/results/validate.json")
    args = ap.parse_args()
    rows = _measure(args)
    _print(rows, args.reps)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "cpu": _cpu(),
        "python": platform.python_version(),
        "args": vars(args),
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
