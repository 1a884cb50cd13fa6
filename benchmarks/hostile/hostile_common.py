"""Paths shared by the case files: the repository, the fixtures `run.py` made."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "hat_jax" / "harness" / "builtin" / "taolive_v1"
FIX = Path(os.environ["HAT_HOSTILE_FIXTURES"])  # set by run.py before importing
CANARY = str(FIX / "canary.txt")  # outside every case's folder: must never show up
