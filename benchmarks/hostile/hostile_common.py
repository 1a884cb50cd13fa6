"""Paths shared by the case files: the repository, the fixtures `run.py` made."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "hat_jax" / "harness" / "builtin" / "taolive_v1"
FIX = Path(os.environ["HAT_HOSTILE_FIXTURES"])  # set by run.py before importing
CANARY = str(FIX / "canary.txt")  # outside every case's folder: must never show up


class Cases(list):
    """The cases of one file; ``add`` appends one (a ``run.py`` case dict)."""

    def add(self, surface, name, argv, setup=None, where=None, expect="error", **kw):
        """``where``: text a clear error names; ``expect`` "ok" for a legit input."""
        self.append(
            dict(surface=surface, name=name, argv=argv, setup=setup, where=where)
            | dict(expect=expect, **kw)
        )
