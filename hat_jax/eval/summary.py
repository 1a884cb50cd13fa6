"""Summaries of eval records: means with bootstrap CIs, breakdowns, Markdown.

A suite summary (``summarize_suite``) is a pure function of its records in case
order (``hat_jax.eval.stats`` fixes the bootstrap seed), so a resumed run and an
uninterrupted one summarise identically::

    {"n": 20, "size": 2000,                 # evaluated here / full-size suite
     "metrics": {"accuracy": {"mean": .9, "ci": [.75, 1.0], "n": 20}, ...},
     "status": {"ok": 18, "failed": 2},
     "at_budget": 1,                        # cases a model call of was cut (below)
     "by": {"intent": {"chit_chat": {"n": 3, "accuracy": {...}, ...}, ...}, ...},
     "extra": {...}}                        # suite-specific (edit test, consistency)

``at_budget`` counts the cases in which a model call ended because it wrote its
``max_new_tokens`` (an agent turn's ``calls_at_budget``, a chat case's
``finish_reason`` "length"): such a case may have failed for the budget, not
the model, so a budget that cuts answers shows here instead of as lost success.

``summary_markdown`` renders the whole-run summary (``{"run": {...}, "suites":
{name: suite summary}}``) as Markdown: an overview table, then per suite its
breakdowns and extras. Values in [0, 1] are shown as percentages.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from hat_jax.eval.records import Record
from hat_jax.eval.stats import mean_ci, weighted_mean_ci


def summarize_suite(
    records: Sequence[Record],
    *,
    metrics: Sequence[str],
    group_by: Sequence[str] = (),
    size: int | None = None,
    weights: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Means and CIs of ``metrics`` overall and per value of each tag in
    ``group_by`` (records missing a metric or tag are left out of it).

    ``weights`` maps a metric to the score holding each case's weight (a
    weighted mean: IFEval's instruction-level accuracy)."""
    weights = weights or {}

    def stats(rows: Sequence[Record]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for m in metrics:
            rows_m = [r["scores"] for r in rows if m in r["scores"]]
            if not rows_m:
                continue
            values = [s[m] for s in rows_m]
            if m in weights:
                out[m] = weighted_mean_ci(values, [s[weights[m]] for s in rows_m])
            else:
                out[m] = mean_ci(values)
        return out

    status = collections.Counter(r["trajectory"].get("status") for r in records)
    cut = sum(_at_budget(r["trajectory"].get("meta") or {}) for r in records)
    by: dict[str, Any] = {}
    for tag in group_by:
        groups: dict[str, list[Record]] = collections.defaultdict(list)
        for r in records:
            if tag in r["tags"]:
                groups[str(r["tags"][tag])].append(r)
        by[tag] = {k: {"n": len(v), **stats(v)} for k, v in sorted(groups.items())}
    return {
        "n": len(records),
        "size": size,
        "metrics": stats(records),
        "status": dict(sorted(status.items(), key=lambda kv: str(kv[0]))),
        "at_budget": cut,
        "by": by,
    }


def _at_budget(meta: Mapping[str, Any]) -> bool:
    """Whether a model call of this case was ended by its token budget."""
    return bool(meta.get("calls_at_budget")) or meta.get("finish_reason") == "length"


def flat_metrics(suites: Mapping[str, Any]) -> dict[str, float]:
    """Headline numbers under DESIGN.md's flat keys: ``eval/SUITE/METRIC`` for
    each suite mean, ``eval/SUITE/MEASURE/KEY`` for extras (edit test: e.g.
    ``eval/edit/error/reduction``)."""
    out = {}
    for name, s in suites.items():
        for m, v in s.get("metrics", {}).items():
            if v.get("mean") is not None:
                out[f"eval/{name}/{m}"] = v["mean"]
        for measure, value in (s.get("extra") or {}).items():
            items = value.items() if not _is_stat(value) else [("", value)]
            for key, stat in items:
                if not isinstance(stat, Mapping):  # a count or a label
                    continue
                mean = stat.get("mean", stat.get("value"))
                if mean is not None:
                    out["/".join(filter(None, ("eval", name, measure, key)))] = mean
    return out


# --- Markdown ---------------------------------------------------------------------
def fmt_stat(s: Any) -> str:
    """``{"mean", "ci"}`` (or ``{"value", "ci"}``) as "91.2 [85.0, 96.1]" (in %)."""
    if not isinstance(s, Mapping):
        return "–" if s is None else str(s)
    mean = s.get("mean", s.get("value"))
    if mean is None:
        return "–"
    text = f"{100 * mean:.1f}"
    if s.get("ci"):
        lo, hi = s["ci"]
        text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return text


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _is_stat(value: Any) -> bool:
    return not isinstance(value, Mapping) or bool({"mean", "value"} & set(value))


def _extra_tables(extra: Mapping[str, Any]) -> list[str]:
    """Extras as tables: a measure whose value is a dict of stats becomes a row
    with one column per key (rows sharing keys share a table); a plain stat
    becomes a row of a "measure | value" table."""
    tables: dict[tuple[str, ...], list[list[str]]] = {}
    for name, value in extra.items():
        if _is_stat(value):
            tables.setdefault(("value",), []).append([name, fmt_stat(value)])
        elif all(_is_stat(v) for v in value.values()):
            cols = tuple(value)
            tables.setdefault(cols, []).append([name, *map(fmt_stat, value.values())])
    lines: list[str] = []
    for cols, rows in tables.items():
        lines += _table(["measure", *cols], rows) + [""]
    return lines


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """The whole run's summary as a Markdown document."""
    run, suites = summary.get("run", {}), summary["suites"]
    lines = ["# Evaluation summary", ""]
    lines += [f"- {k}: `{v}`" for k, v in run.items() if v not in (None, "")]
    lines += ["", "Means in %, with 95 % bootstrap confidence intervals.", ""]
    by_metrics: dict[tuple[str, ...], list[str]] = {}
    for name, s in suites.items():
        by_metrics.setdefault(tuple(s.get("metrics", {})), []).append(name)
    for metrics, names in by_metrics.items():  # one overview table per metric set
        rows = []
        for name in names:
            s = suites[name]
            size = f" / {s['size']}" if s.get("size") else ""
            cells = [fmt_stat(s["metrics"][m]) for m in metrics]
            rows.append([s.get("title", name), f"{s['n']}{size}", *cells])
        lines += _table(["suite", "cases (run / full)", *metrics], rows) + [""]
    for name, s in suites.items():
        lines += [f"## {s.get('title', name)}", ""]
        if s.get("status"):
            status = ", ".join(f"{k} {v}" for k, v in s["status"].items())
            lines += [f"Turn status: {status}.", ""]
        if s.get("at_budget"):
            lines += [
                f"Cut at the token budget: {s['at_budget']} of {s['n']} cases had "
                "a model call end at max_new_tokens.",
                "",
            ]
        own = list(s.get("metrics", {}))
        for tag, groups in s.get("by", {}).items():
            rows = [
                [k, g["n"], *(fmt_stat(g.get(m)) for m in own)]
                for k, g in groups.items()
            ]
            lines += [f"By {tag}:", "", *_table([tag, "n", *own], rows), ""]
        lines += _extra_tables(s.get("extra") or {})
    return "\n".join(lines).rstrip() + "\n"
