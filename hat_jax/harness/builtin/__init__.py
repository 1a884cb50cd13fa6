"""Harness folders shipped with the package (data only: YAML, Markdown, JSON).

``taolive_v1`` is a live-stream e-commerce avatar host; ``taolive_v2`` is its
evolved version (a Double 12 campaign rule and skill, ``get_product_info_by_link_id``
renamed and re-shaped into ``query_item``, a compliance hook), a later harness
for robustness tests; ``taolive_d12`` is v1 edited for Double 12 only (the
campaign rule and skill, the compliance hook, nothing renamed): the "after"
harness of the harness-edit test, which fixes what v1 gets wrong while the
campaign runs.
"""

from __future__ import annotations

from pathlib import Path

BUILTIN = ("taolive_v1", "taolive_v2", "taolive_d12")


def builtin_path(name: str) -> Path:
    """The folder of the builtin harness ``name``."""
    if name not in BUILTIN:
        raise ValueError(f"unknown builtin harness {name!r}; have {BUILTIN}")
    return Path(__file__).resolve().parent / name
