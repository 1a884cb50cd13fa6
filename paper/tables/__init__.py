"""The paper's tables, each built from a sweep by name (``TABLES``)."""

from paper.tables import ablation, edit, ifeval, main  # noqa: F401  (registers)
from paper.tables.registry import TABLES, get, register

__all__ = ["TABLES", "get", "register"]
