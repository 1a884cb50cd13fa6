"""Loading entry-point plugins without hiding why one failed.

Packages above hat_jax add `hat` commands, training stages and `hat eval`
subcommands through entry points. A plugin whose own package is not installed
here is skipped (it is not part of this install). Any other failure on import
(an ImportError inside the plugin, a missing dependency of it, a syntax error,
any exception) is kept as a `Broken` record, so the command still shows up and
says why it cannot run instead of vanishing into argparse's "invalid choice".
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable
from typing import Any

__all__ = ["Broken", "is_absent", "load_entry_points", "load_object", "reason"]


@dataclasses.dataclass(frozen=True)
class Broken:
    """An entry point whose import failed: which one, and why (``reason``)."""

    name: str
    value: str
    reason: str  # "ExcType: message"


def reason(exc: BaseException) -> str:
    """``"ExcType: message"``, the way a failed load is reported."""
    return f"{type(exc).__name__}: {exc}"


def _module_of(value: str) -> str:
    return value.partition(":")[0].strip()


def is_absent(value: str, exc: BaseException) -> bool:
    """True when ``exc`` says the top-level package of the entry point
    ``value`` ("pkg.mod" or "pkg.mod:attr") is not installed at all.

    A ModuleNotFoundError for anything else (a submodule of the plugin, one of
    its dependencies) means the plugin is installed but broken.
    """
    top = _module_of(value).split(".")[0]
    return isinstance(exc, ModuleNotFoundError) and bool(top) and exc.name == top


def load_object(value: str) -> Any:
    """The module ``"pkg.mod"``, or the attribute path ``"pkg.mod:obj.attr"``."""
    module, sep, attr = value.partition(":")
    obj = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if sep else ():
        obj = getattr(obj, part)
    return obj


def load_entry_points(
    eps: Iterable[Any],
) -> tuple[dict[str, Any], dict[str, Broken]]:
    """Loads each entry point (anything with ``name`` and ``value``).

    Returns:
      (loaded, broken): name -> loaded object, and name -> `Broken` for each that
      failed on import for a reason other than its package being absent. A
      later entry point of a name replaces an earlier one.
    """
    loaded: dict[str, Any] = {}
    broken: dict[str, Broken] = {}
    for ep in eps:
        loaded.pop(ep.name, None)
        broken.pop(ep.name, None)
        try:
            loaded[ep.name] = load_object(ep.value)
        except Exception as e:  # noqa: BLE001 - reported, never swallowed
            if not is_absent(ep.value, e):
                broken[ep.name] = Broken(ep.name, ep.value, reason(e))
    return loaded, broken
