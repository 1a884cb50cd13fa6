"""Weight tables: HF tensor names <-> our NNX parameter paths, both directions.

Each family file declares `HF_WEIGHTS = [(hf_template, our_template, transform)]`.
Templates use `{i}` for a layer index and `{e}` for an expert index; a rule with `{e}`
maps many HF tensors onto one stacked parameter (experts on axis 0). The transform
"T" swaps the last two axes (HF Linear [out, in] vs NNX kernel [in, out]).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable

import numpy as np


@dataclasses.dataclass(frozen=True)
class Rule:
    hf: str
    ours: str
    transform: str | None

    def _regex(self, template: str) -> re.Pattern:
        body = re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)")
        return re.compile("^" + body.replace(r"\{e\}", r"(?P<e>\d+)") + "$")

    def match_ours(self, path: str) -> dict[str, str] | None:
        m = self._regex(self.ours).match(path)
        return m.groupdict() if m else None

    def match_hf(self, name: str) -> dict[str, str] | None:
        m = self._regex(self.hf).match(name)
        return m.groupdict() if m else None

    @property
    def stacked(self) -> bool:
        return "{e}" in self.hf

    def to_ours(self, x: np.ndarray) -> np.ndarray:
        return np.swapaxes(x, -1, -2) if self.transform == "T" else x

    to_hf = to_ours  # both transforms are involutions


def compile_table(table: Iterable[tuple[str, str, str | None]]) -> list[Rule]:
    return [Rule(*row) for row in table]


def path_str(path: tuple) -> str:
    return ".".join(str(p) for p in path)


def rule_for(rules: list[Rule], path: str) -> tuple[Rule, dict[str, str]]:
    for rule in rules:
        groups = rule.match_ours(path)
        if groups is not None:
            return rule, groups
    raise KeyError(f"no HF weight rule covers parameter {path!r}")


def gather_param(
    rules: list[Rule],
    path: str,
    shape: tuple[int, ...],
    get: Callable[[str], np.ndarray | None],
) -> tuple[np.ndarray, list[str]]:
    """Builds one of our parameters from HF tensors; returns it and the names used."""
    rule, groups = rule_for(rules, path)
    if not rule.stacked:
        name = rule.hf.format(**groups)
        x = get(name)
        if x is None:
            raise ValueError(f"missing tensor {name!r} (for parameter {path!r})")
        x, used = rule.to_ours(x), [name]
    else:
        parts, used = [], []
        for e in range(shape[0]):
            name = rule.hf.format(e=e, **groups)
            t = get(name)
            if t is None:
                raise ValueError(f"missing tensor {name!r} (for parameter {path!r})")
            parts.append(rule.to_ours(t))
            used.append(name)
        x = np.stack(parts)
    if tuple(x.shape) != tuple(shape):
        raise ValueError(
            f"shape mismatch for {path!r} from {used[0]!r}: "
            f"got {x.shape}, expected {shape}"
        )
    return x, used


def scatter_param(
    rules: list[Rule], path: str, value: np.ndarray
) -> Iterable[tuple[str, np.ndarray]]:
    """Our parameter -> (HF name, tensor) pairs (one per expert when stacked)."""
    rule, groups = rule_for(rules, path)
    if not rule.stacked:
        yield rule.hf.format(**groups), rule.to_hf(value)
        return
    for e in range(value.shape[0]):
        yield rule.hf.format(e=e, **groups), rule.to_hf(value[e])
