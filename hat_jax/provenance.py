"""Where an output came from: code version, command line, packages, devices.

`collect(config)` returns the ``"provenance"`` object the run, step and eval
folders record (a training workdir's ``config.json``, the driver's run
``config.json`` / ``run.json`` and each step's ``done.json``, ``hat eval
run``'s ``summary.json``)::

    {
      "git":      {"sha": str, "dirty": bool} | null,
      "argv":     [str, ...]           sys.argv as the process got it,
      "python":   str                  e.g. "3.11.9",
      "packages": {name: version str | null}   PACKAGES,
      "devices":  {"platform": str, "kind": str, "count": int,
                   "process_count": int} | null,
      "config":   the resolved config, when the record is not itself the config
    }

Git is optional: a package that is not inside a git checkout (a wheel in
site-packages, a copied tree), a missing git binary, a slow or failing git
all give ``"git": null``, never an error or a hang (each call has a timeout,
reads no stdin and never prompts). ``dirty`` follows ``git describe --dirty``:
a tracked file differs from HEAD (untracked files do not count). Nothing from
the environment is recorded (it may hold secrets). Provenance is volatile (the
command line, the time of the checkout): it describes an output and must never
enter a cache key or a checkpoint.

This module is core library: it imports nothing from experiments/, paper/ or
serving/.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "REPO_ROOT", "collect", "devices", "git_info", "packages"]

# The checkout the package was imported from (hat_jax/..); a test may point it
# elsewhere. An installed wheel's parent is site-packages: not a checkout.
REPO_ROOT = Path(__file__).resolve().parent.parent
GIT = "git"  # the git binary (tests point it at a missing one)
GIT_TIMEOUT_S = 5.0
PACKAGES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "transformers")


def _git(root: Path, *args: str) -> str | None:
    """``git args`` in ``root``: its stdout stripped, or None on any failure."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        done = subprocess.run(
            [GIT, "-C", str(root), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None  # no git binary, a timeout, an unusable root
    return done.stdout.strip() if done.returncode == 0 else None


def git_info(root: str | Path | None = None) -> dict[str, Any] | None:
    """``{"sha": 40-hex str, "dirty": bool}`` of the checkout at ``root``.

    Args:
      root: the folder that must be a checkout's top level (default
        `REPO_ROOT`); a folder merely inside some other checkout (a venv in
        the repo, a tmp folder in a home under git) is not one.

    Returns:
      None when ``root`` is not a git checkout's top level, git is missing or
      fails, or HEAD has no commit.
    """
    root = Path(REPO_ROOT if root is None else root)
    if not root.is_dir():
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve():
        return None
    sha = _git(root, "rev-parse", "--verify", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if not sha or status is None:
        return None
    return {"sha": sha, "dirty": bool(status)}


def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, None when absent."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def packages() -> dict[str, str | None]:
    """``{name: installed version, or None if not installed}`` for `PACKAGES`."""
    return {name: dist_version(name) for name in PACKAGES}


def devices() -> dict[str, Any] | None:
    """JAX's devices: ``{"platform", "kind", "count", "process_count"}``.

    ``kind`` is the device kind (several kinds joined by ", "); ``count`` all
    devices of all processes. None when JAX is missing or has no backend.
    Initialises JAX's backend (call it in the process that computes).
    """
    try:
        import jax

        found = jax.devices()
        kinds = sorted({str(d.device_kind) for d in found})
        return {
            "platform": str(found[0].platform),
            "kind": ", ".join(kinds),
            "count": len(found),
            "process_count": int(jax.process_count()),
        }
    except Exception:  # provenance never stops a run: no backend is "unknown"
        return None


def _text(arg: Any) -> str:
    # an argument that is not UTF-8 (surrogate-escaped by Python) as valid text
    return str(arg).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def collect(config: Any = None) -> dict[str, Any]:
    """The provenance object (module docstring); ``config`` when given.

    Args:
      config: the resolved config (JSON-able), for a record that does not hold
        it already; omitted from the object when None.
    """
    out: dict[str, Any] = {
        "git": git_info(),
        "argv": [_text(a) for a in sys.argv],
        "python": platform.python_version(),
        "packages": dict(packages()),
        "devices": devices(),
    }
    if config is not None:
        out["config"] = config
    return out
