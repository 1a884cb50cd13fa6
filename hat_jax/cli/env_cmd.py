"""Print the environment a result came from: versions, devices, CPU, caches.

Examples:
  hat env            # a readable report, for a bug report or a run's notes
  hat env --json     # the same as one JSON object

Versions are read from the installed distributions (nothing is imported but
jax, to list its devices). Optional extras show "not installed" when absent.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from hat_jax.provenance import dist_version, git_info

# distributions whose versions decide numbers (setup.py pins them)
PACKAGES = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "orbax-checkpoint",
    "chex",
    "transformers",
    "tokenizers",
    "grain",
    "tensorflow-datasets",
    "numpy",
    "torch",  # the tests' numerical reference (extra "torch")
)
# optional extras and what needs them
EXTRAS = {
    "wandb": "the W&B sink (extra wandb)",
    "submitit": "hat sweep --launcher slurm (extra cluster)",
    "vllm": "hat serve (serving/)",
}
_NOT_INSTALLED = "not installed"


def git_sha() -> str | None:
    """The commit (12 hex digits) of the checkout hat_jax runs from, None
    outside one (`hat_jax.provenance.git_info`)."""
    info = git_info()
    return info["sha"][:12] if info else None


def version_text() -> str:
    """``hat 0.1.0 (git 995e6a6bde8d)``: the installed hat_jax, and the commit
    when run from a checkout (`hat --version`)."""
    v = dist_version("hat_jax")
    text = f"hat {v}" if v else "hat (version unknown: hat_jax is not installed)"
    sha = git_sha()
    return f"{text} (git {sha})" if sha else text


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else `platform`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("model name", "Model", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def devices() -> dict[str, Any]:
    """jax's default backend and its devices, or the error that stopped it."""
    try:
        import jax

        found = jax.devices()
        return {
            "backend": jax.default_backend(),
            "devices": [
                {"id": d.id, "platform": d.platform, "kind": d.device_kind}
                for d in found
            ],
            "process_count": jax.process_count(),
        }
    except Exception as e:  # noqa: BLE001 - a broken backend is what to report
        return {"error": f"{type(e).__name__}: {e}"}


def caches() -> dict[str, dict[str, Any]]:
    """The folders the project caches in, with how each is chosen."""
    from hat_jax import assets

    root = assets.cache_root()
    try:
        fetched = sum(assets.is_fetched(n) for n in assets.names())
    except (OSError, ValueError):  # an unreadable or corrupt marker file
        fetched = None
    try:  # jax's config reads JAX_COMPILATION_CACHE_DIR
        import jax

        jax_dir = jax.config.jax_compilation_cache_dir
    except Exception:  # noqa: BLE001 - devices() reports a broken jax
        jax_dir = None
    return {
        "assets": {
            "path": str(root),
            "set_by": "HAT_CACHE" if "HAT_CACHE" in os.environ else "default",
            "exists": root.is_dir(),
            "fetched": fetched,
            "known": len(assets.names()),
        },
        "nltk_data": {"path": str(root / "nltk_data"), "set_by": "assets"},
        "jax_compilation": {
            "path": jax_dir,
            "set_by": "JAX_COMPILATION_CACHE_DIR; hat run / hat sweep: --jax-cache "
            "(default ROOT/_jax_cache)",
        },
    }


def collect() -> dict[str, Any]:
    """Everything `hat env` reports, as plain JSON values."""
    return {
        "hat_jax": dist_version("hat_jax"),
        "git": git_sha(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": platform.platform(),
        "packages": {n: dist_version(n) for n in PACKAGES},
        "extras": {n: dist_version(n) for n in EXTRAS},
        "jax": devices(),
        "cpu": {"model": cpu_model(), "cores": os.cpu_count()},
        "caches": caches(),
    }


def _device_lines(info: dict[str, Any]) -> list[str]:
    if "error" in info:
        return [f"devices: none ({info['error']})"]
    out = [f"devices (backend {info['backend']}, processes {info['process_count']}):"]
    out += [f"  {d['id']:<3} {d['platform']:<6} {d['kind']}" for d in info["devices"]]
    return out


def render(info: dict[str, Any]) -> str:
    """The readable report of `collect()`'s result."""
    py = info["python"]
    out = [
        f"hat_jax  {info['hat_jax'] or 'unknown'}"
        + (f" (git {info['git']})" if info["git"] else ""),
        f"python   {py['version']} ({py['implementation']}, {py['executable']})",
        f"platform {info['platform']}",
        "packages:",
    ]
    out += [f"  {n:<20} {v or _NOT_INSTALLED}" for n, v in info["packages"].items()]
    out.append("optional:")
    for n, v in info["extras"].items():
        out.append(f"  {n:<20} {v or _NOT_INSTALLED:<14} {EXTRAS[n]}")
    out += _device_lines(info["jax"])
    out.append(f"cpu: {info['cpu']['model']}, {info['cpu']['cores']} cores")
    c = info["caches"]
    a = c["assets"]
    count = "?" if a["fetched"] is None else a["fetched"]
    state = f"{count} of {a['known']} assets fetched" if a["exists"] else "absent"
    how = "$HAT_CACHE" if a["set_by"] == "HAT_CACHE" else "default; $HAT_CACHE moves it"
    out += [
        "caches:",
        f"  assets           {a['path']} ({how}; {state})",
        f"  nltk data        {c['nltk_data']['path']}",
        f"  jax compilation  {c['jax_compilation']['path'] or 'off'} "
        f"({c['jax_compilation']['set_by']})",
    ]
    return "\n".join(out)


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    info = collect()
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0
