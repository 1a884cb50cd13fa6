"""The paper's tables, each built from a sweep by name (``TABLES``)."""

from paper.tables import (  # noqa: F401  (registers)
    ablation,
    claims,
    edit,
    evolution,
    ifeval,
    latency,
    main,
    paired,
    steps,
)
from paper.tables.registry import TABLES, get, register

__all__ = ["TABLES", "get", "register"]
