"""The IFEval prompts (the real 541) and response files, read with clear errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hat_jax import assets
from hat_jax.eval.ifeval import registry
from hat_jax.jsonl import iter_jsonl


@dataclasses.dataclass(frozen=True)
class Prompt:
    """One IFEval prompt and its instructions (kwargs[i] goes with ids[i])."""

    key: int
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "prompt": self.prompt,
            "instruction_id_list": list(self.instruction_id_list),
            "kwargs": [dict(k) for k in self.kwargs],
        }


def prompt_from_dict(row: Any, where: str) -> Prompt:
    """A `Prompt` from a JSON row; errors name `where` (`file:line`)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    ids, kwargs = row.get("instruction_id_list"), row.get("kwargs")
    if not isinstance(row.get("prompt"), str):
        raise ValueError(f"{where}: expected a string 'prompt'")
    if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        raise ValueError(f"{where}: expected 'instruction_id_list', a list of ids")
    if not (isinstance(kwargs, list) and all(isinstance(k, dict) for k in kwargs)):
        raise ValueError(f"{where}: expected 'kwargs', a list of objects")
    if len(ids) != len(kwargs):
        raise ValueError(
            f"{where}: {len(ids)} instruction ids but {len(kwargs)} kwargs objects"
        )
    for iid, kw in zip(ids, kwargs):
        try:
            registry.build(iid, kw)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return Prompt(
        key=int(row.get("key", -1)),
        prompt=row["prompt"],
        instruction_id_list=tuple(ids),
        kwargs=tuple(dict(k) for k in kwargs),
    )


def load_prompts(path: str | Path | None = None) -> list[Prompt]:
    """The IFEval prompts (default: the 541 from the `ifeval-input-data` asset)."""
    path = Path(path) if path is not None else assets.path("ifeval-input-data")
    return [prompt_from_dict(row, where) for where, row in iter_jsonl(path)]


def read_responses(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a responses JSONL: objects with string `prompt` and `response`.

    Rows may also carry `instruction_id_list` and `kwargs` (and `key`) to be
    scored on their own instructions instead of the IFEval prompt they name.
    """
    path = Path(path)
    rows = []
    for where, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise ValueError(
                f"{where}: expected a JSON object with string fields 'prompt' and "
                f"'response', got {type(row).__name__}"
            )
        bad = [k for k in ("prompt", "response") if not isinstance(row.get(k), str)]
        if bad:
            raise ValueError(
                f"{where}: expected a JSON object with string fields 'prompt' and "
                f"'response'; {' and '.join(repr(k) for k in bad)} missing or not "
                "a string"
            )
        if "instruction_id_list" in row or "kwargs" in row:
            prompt_from_dict(row, where)  # validates the instructions
        rows.append({**row, "_where": where})
    if not rows:
        raise ValueError(f"{path}: no responses (expected one JSON object per line)")
    return rows
