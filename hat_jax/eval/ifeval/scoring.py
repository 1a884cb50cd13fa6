"""Strict and loose verdicts, and the prompt- and instruction-level accuracies.

Strict: the response as given. Loose: an instruction counts as followed if any
of eight variants follows it — the response with its first line, last line,
both or neither removed, each with and without every `*`. An empty (all
whitespace) response or variant never follows anything.

A row-supplied pattern that runs past `registry.MATCH_TIMEOUT_S` on a response,
or a row whose patterns together run past `registry.ROW_MATCH_BUDGET_S` on it,
stops scoring with a `DataError` naming the row and the instruction (no verdict
is made up for it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hat_jax.eval.ifeval import registry
from hat_jax.eval.ifeval.data import Prompt, load_prompts, prompt_from_dict
from hat_jax.jsonl import DataError, field

METRICS = (
    "prompt_level_strict",
    "instruction_level_strict",
    "prompt_level_loose",
    "instruction_level_loose",
)


def loose_variants(response: str) -> list[str]:
    lines = response.split("\n")
    trimmed = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return trimmed + [t.replace("*", "") for t in trimmed]


def evaluate(prompt: Prompt, response: str) -> tuple[list[bool], list[bool]]:
    """Per-instruction verdicts `(strict, loose)` of one response.

    Raises:
      registry.MatchTimeout: a row-supplied pattern, or all of them together,
        ran out of time.
    """
    others = [v for v in loose_variants(response)[1:] if v.strip()]
    checks = prompt.checks
    if not checks:
        with registry.row_budget():
            checks = tuple(
                registry.build(iid, kw)
                for iid, kw in zip(prompt.instruction_id_list, prompt.kwargs)
            )
    strict, loose = [], []
    with registry.row_budget():
        for check in checks:
            s = bool(response.strip()) and bool(check(response))
            strict.append(s)
            loose.append(s or any(bool(check(v)) for v in others))
    return strict, loose


def _prompt_of(row: Mapping[str, Any], where: str, by_text) -> Prompt:
    if "instruction_id_list" in row or "kwargs" in row:
        return prompt_from_dict(dict(row), where)
    text = field(row, "prompt", where, str)
    prompt = by_text().get(text)
    if prompt is None:
        short = text if len(text) <= 60 else text[:57] + "..."
        raise DataError(
            f"{where}: prompt is not one of the IFEval prompts: {short!r} (give "
            "'instruction_id_list' and 'kwargs' to score other prompts)"
        )
    return prompt


def score_responses(
    rows: Iterable[Mapping[str, Any]], prompts: Sequence[Prompt] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Scores `{prompt, response}` rows, as the original `evaluation_main` does.

    A row is matched to its IFEval prompt by the prompt text (from `prompts`,
    default the 541), or carries its own `instruction_id_list` and `kwargs`.

    Returns:
      One record per row (key, prompt, response, instruction ids, strict and
      loose verdicts) and a summary (`summarize`).
    """
    table: dict[str, Prompt] = {}

    def by_text() -> dict[str, Prompt]:
        if not table:
            table.update({p.prompt: p for p in prompts or load_prompts()})
        return table

    records, seen = [], set()
    for i, row in enumerate(rows):
        where = row.get("_where", f"row {i}")
        prompt = _prompt_of(row, where, by_text)
        try:
            strict, loose = evaluate(prompt, field(row, "response", where, str))
        except registry.MatchTimeout as e:
            raise DataError(f"{where}: {e}") from None
        seen.add(prompt.prompt)
        records.append(
            {
                "key": prompt.key,
                "prompt": prompt.prompt,
                "response": row["response"],
                "instruction_id_list": list(prompt.instruction_id_list),
                "strict": strict,
                "loose": loose,
                "follow_all_strict": all(strict),
                "follow_all_loose": all(loose),
            }
        )
    if not records:
        raise ValueError("no responses to score")
    summary = summarize(records)
    if table:
        summary["missing_prompts"] = len(set(table) - seen)
    return records, summary


def _rates(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    n = len(pairs)
    return {
        "n": n,
        "strict": sum(s for s, _ in pairs) / n,
        "loose": sum(lo for _, lo in pairs) / n,
    }


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The four IFEval accuracies, and per instruction id and category."""
    by_id: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for r in records:
        for iid, s, lo in zip(r["instruction_id_list"], r["strict"], r["loose"]):
            by_id[iid].append((s, lo))
    flat = [v for vs in by_id.values() for v in vs]
    by_category: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for iid, vs in by_id.items():
        by_category[iid.split(":")[0]].extend(vs)
    n_prompts = len(records)
    overall = _rates(flat) if flat else {"strict": 0.0, "loose": 0.0}
    return {
        "n_prompts": n_prompts,
        "n_instructions": len(flat),
        "prompt_level_strict": sum(all(r["strict"]) for r in records) / n_prompts,
        "instruction_level_strict": overall["strict"],
        "prompt_level_loose": sum(all(r["loose"]) for r in records) / n_prompts,
        "instruction_level_loose": overall["loose"],
        "by_instruction": {k: _rates(by_id[k]) for k in sorted(by_id)},
        "by_category": {k: _rates(by_category[k]) for k in sorted(by_category)},
    }


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """The summary as Markdown: the four accuracies, then one row per id."""
    out = [
        f"IFEval: {summary['n_prompts']} prompts, "
        f"{summary['n_instructions']} instructions",
        "",
        "| metric | accuracy |",
        "|---|---:|",
    ]
    out += [f"| {m} | {summary[m]:.4f} |" for m in METRICS]
    out += ["", "| instruction | n | strict | loose |", "|---|---:|---:|---:|"]
    for iid, r in summary["by_instruction"].items():
        out.append(f"| {iid} | {r['n']} | {r['strict']:.4f} | {r['loose']:.4f} |")
    return "\n".join(out) + "\n"
