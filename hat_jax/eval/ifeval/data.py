"""The IFEval prompts (the real 541) and response files, read with clear errors.

Rows are read by `hat_jax.jsonl`; every problem (decoding, a field's type, an
instruction's kwargs, an invalid regular expression) is a `DataError` whose
message starts with `path:line:`. A prompt's checkers are built once, when its
row is read, and kept on the `Prompt`; a row has one to `MAX_INSTRUCTIONS`
instructions, and its patterns share one budget (`registry.row_budget`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hat_jax import assets
from hat_jax.eval.ifeval import registry
from hat_jax.jsonl import (
    DataError,
    field,
    iter_jsonl,
    json_type,
    read_jsonl_objects,
)

# Instructions one row may give (IFEval's rows have one to three).
MAX_INSTRUCTIONS = 32


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One IFEval prompt and its instructions (kwargs[i] goes with ids[i])."""

    key: int
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]
    # The built checkers, one per instruction (empty: built when scored).
    checks: tuple[registry.Check, ...] = dataclasses.field(
        default=(), compare=False, repr=False, kw_only=True
    )

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "prompt": self.prompt,
            "instruction_id_list": list(self.instruction_id_list),
            "kwargs": [dict(k) for k in self.kwargs],
        }


def prompt_from_dict(row: Any, where: str) -> Prompt:
    """A `Prompt` from a JSON row, its checkers built.

    Raises:
      DataError: ``where: what was wrong`` (``where`` is ``file:line``).
    """
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {json_type(row)}")
    prompt = field(row, "prompt", where, str)
    ids = field(row, "instruction_id_list", where, list)
    kwargs = field(row, "kwargs", where, list)
    if not all(isinstance(i, str) for i in ids):
        raise DataError(f"{where}: field 'instruction_id_list' must hold strings")
    if not 1 <= len(ids) <= MAX_INSTRUCTIONS:
        raise DataError(
            f"{where}: field 'instruction_id_list' must hold 1 to "
            f"{MAX_INSTRUCTIONS} instruction ids, got {len(ids)}"
        )
    if not all(isinstance(k, dict) for k in kwargs):
        raise DataError(f"{where}: field 'kwargs' must hold objects")
    if len(ids) != len(kwargs):
        raise DataError(
            f"{where}: {len(ids)} instruction ids but {len(kwargs)} kwargs objects"
        )
    checks = []
    with registry.row_budget():
        for iid, kw in zip(ids, kwargs):
            try:
                checks.append(registry.build(iid, kw))
            except ValueError as e:
                raise DataError(f"{where}: {e}") from None
    return Prompt(
        key=field(row, "key", where, int, default=-1),
        prompt=prompt,
        instruction_id_list=tuple(ids),
        kwargs=tuple(dict(k) for k in kwargs),
        checks=tuple(checks),
    )


def load_prompts(path: str | Path | None = None) -> list[Prompt]:
    """The IFEval prompts (default: the 541 from the `ifeval-input-data` asset).

    Raises:
      DataError: ``path:line: what was wrong``, or ``path: no prompts``.
    """
    path = Path(path) if path is not None else assets.path("ifeval-input-data")
    rows = read_jsonl_objects(path, what="prompts")
    return [prompt_from_dict(row, where) for where, row in rows]


def read_responses(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a responses JSONL: objects with string `prompt` and `response`.

    Rows may also carry `instruction_id_list` and `kwargs` (and `key`) to be
    scored on their own instructions instead of the IFEval prompt they name;
    those are checked (and their patterns compiled) here.

    Raises:
      DataError: ``path:line: what was wrong``, or ``path: no responses``.
    """
    path = Path(path)
    rows = []
    for where, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise DataError(
                f"{where}: expected a JSON object with string fields 'prompt' and "
                f"'response', got {json_type(row)}"
            )
        bad = [k for k in ("prompt", "response") if not isinstance(row.get(k), str)]
        if bad:
            raise DataError(
                f"{where}: expected a JSON object with string fields 'prompt' and "
                f"'response'; {' and '.join(repr(k) for k in bad)} missing or not "
                "a string"
            )
        if "instruction_id_list" in row or "kwargs" in row:
            prompt_from_dict(row, where)  # validates the instructions
        rows.append({**row, "_where": where})
    if not rows:
        raise DataError(f"{path}: no responses (expected one JSON object per line)")
    return rows
