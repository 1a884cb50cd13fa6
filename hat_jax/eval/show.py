"""``hat eval show``: an eval's records as terminal text.

Two views. The list (default) is one line per case: id, verdict on the suite's
headline score (``ok`` / ``FAIL``, a graded value as a number, ``?`` for NaN, a
judge without a valid vote), tag values and the judge's reason, cut to the
terminal width. The full view (``--case ID`` or ``--full``) is the whole
record: tags, every score with its rationale, the input, the trajectory
(messages with their tool calls, tool results, hook feedback), the tool
exchanges, hook events and the final reply.

Every text from a record passes through ``hat_jax.printable.shown``: a model
output holding an ANSI escape prints as ``\\x1b[...``, never as the escape. A
text longer than ``max_chars`` is cut and says how much was left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hat_jax.eval.browse import EvalRun, headline, quoted
from hat_jax.eval.records import Record
from hat_jax.printable import shown

MAX_CHARS = 600  # per text in the full view (0: no limit)
INDENT = "    "


def clip(text: Any, limit: int, *, lines: bool = False) -> str:
    """``text`` escaped for a terminal and cut to ``limit`` characters (0: all),
    with a note of what was cut; ``lines`` keeps its line breaks."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    cut = ""
    if limit and len(s) > limit:
        s, cut = s[:limit], f" ... [{len(s) - limit:,} more chars]"
    return shown(s, keep="\n" if lines else "") + cut


def one_line(text: Any, width: int) -> str:
    """``text`` escaped, on one line, cut to ``width`` with ``...``."""
    s = shown(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False))
    return s if len(s) <= width else s[: max(0, width - 3)] + "..."


def verdict(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isnan(value):
        return "?"
    return {1.0: "ok", 0.0: "FAIL"}.get(float(value), f"{value:.2f}")


def failed(record: Record, metric: str | None) -> bool:
    """The case's headline score is below 1 (NaN and absent are not failures)."""
    value = record["scores"].get(metric) if metric else None
    return value is not None and value < 1


def tag_text(tags: Mapping[str, Any], order: Sequence[str] = ()) -> str:
    """Tag values joined by ``/``, those the summary groups by first."""
    rank = {t: i for i, t in enumerate(order)}
    keys = sorted(tags, key=lambda k: rank.get(k, len(rank)))
    return "/".join(str(tags[k]) for k in keys)


def select(
    records: Sequence[Record],
    *,
    metric: str | None,
    only_failed: bool = False,
    tags: Mapping[str, str] | None = None,
    case: str | None = None,
) -> list[Record]:
    """The records that pass every filter (tag values compared as text)."""
    tags = tags or {}
    return [
        r
        for r in records
        if (case is None or r["id"] == case)
        and (not only_failed or failed(r, metric))
        and all(k in r["tags"] and str(r["tags"][k]) == v for k, v in tags.items())
    ]


def _reason(r: Record, metric: str | None) -> str:
    why = r["rationales"].get(metric) if metric else None
    if why:
        return why
    return " ".join(f"{k} {v:g}" for k, v in r["scores"].items())


def list_lines(
    records: Sequence[Record], metric: str | None, order: Sequence[str], width: int
) -> list[str]:
    """One line per record (module docstring), at most ``width`` characters."""
    rows = [
        (shown(r["id"]), verdict(r["scores"].get(metric) if metric else None),
         one_line(tag_text(r["tags"], order), 40))
        for r in records
    ]  # fmt: skip
    w_id = max((len(a) for a, _, _ in rows), default=0)
    w_tag = max((len(c) for _, _, c in rows), default=0)
    out = []
    for r, (id_, v, tags) in zip(records, rows):
        head = f"  {id_:<{w_id}}  {v:<4}  {tags:<{w_tag}}  "
        room = max(20, width - len(head))
        out.append((head + one_line(_reason(r, metric), room)).rstrip())
    return out


def _block(label: str, text: Any, limit: int) -> list[str]:
    """``label`` and a (multi-line) text indented under it."""
    body = clip(text, limit, lines=True).split("\n")
    first = f"  {label} {body[0]}" if label else f"  {body[0]}"
    return [first.rstrip(), *(f"{INDENT}{line}".rstrip() for line in body[1:])]


def _calls(calls: Sequence[Mapping[str, Any]], limit: int) -> list[str]:
    out = []
    for c in calls:
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        args = clip(fn.get("arguments", {}), limit)
        out.append(f"{INDENT}-> {clip(fn.get('name', '?'), 80)}({args})")
    return out


def _messages(messages: Sequence[Mapping[str, Any]], limit: int) -> list[str]:
    out = []
    for m in messages:
        role = clip(m["role"], 40)
        if m.get("role") == "tool" and m.get("name"):
            role += f" {clip(m['name'], 80)}"
        if m.get("hook_feedback"):
            role += ", hook feedback"
        for key in ("reasoning", "reasoning_content"):
            if m.get(key):
                out += _block(f"[{role} {key}]", m[key], limit)
        if m.get("content") or not m.get("tool_calls"):
            out += _block(f"[{role}]", m.get("content") or "", limit)
        else:
            out.append(f"  [{role}]")
        out += _calls(m.get("tool_calls") or (), limit)
    return out


def case_lines(
    r: Record, order: Sequence[str] = (), limit: int = MAX_CHARS
) -> list[str]:
    """The whole record (module docstring)."""
    t = r["trajectory"]
    where = ", ".join(
        f"{k} {clip(r[k], 120)}" for k in ("suite", "harness") if r.get(k)
    )
    out = [f"== {shown(r['id'])}" + (f" ({where})" if where else "")]
    if r["tags"]:
        out.append(
            "tags: "
            + "  ".join(f"{shown(k)}={clip(v, 80)}" for k, v in r["tags"].items())
        )
    out.append("scores:")
    for k, v in r["scores"].items():
        why = r["rationales"].get(k)
        out.append(f"  {shown(k)} {v:g}" + (f" -- {clip(why, limit)}" if why else ""))
    if r["input"]:
        out.append(f"input: {clip(r['input'], limit)}")
    meta = t.get("meta") or {}
    total = (t.get("timings") or {}).get("total")
    status = [f"status {clip(t.get('status') or '?', 40)}"]
    status += [f"{shown(k)} {clip(v, 120)}" for k, v in meta.items()]
    if isinstance(total, int | float):
        status.append(f"time {total:.3f}s")
    out.append("; ".join(status))
    out.append("trajectory:")
    out += _messages(t.get("messages") or [], limit)
    if t.get("tool_calls"):
        out.append("tool calls:")
        for c in t["tool_calls"]:
            ok = "ok" if c.get("ok", True) else "failed"
            fault = f", fault {clip(c['fault'], 80)}" if c.get("fault") else ""
            call = (
                f"{one_line(c.get('name', '?'), 80)}({clip(c.get('arguments'), limit)})"
            )
            result = one_line(c.get("result", ""), 100)
            out.append(f"  {call} {ok}{fault}: {result}")
    if t.get("hook_events"):
        out.append("hooks:")
        for h in t["hook_events"]:
            att = f" attempt {clip(h['attempt'], 20)}" if h.get("attempt") else ""
            passed = "passed" if h.get("passed") else "FAILED"
            fb = f": {clip(h['feedback'], limit)}" if h.get("feedback") else ""
            name = one_line(h.get("hook", "?"), 80)
            at = one_line(h.get("checkpoint"), 40)
            out.append(f"  {name} @{at}{att} {passed}{fb}")
    out += ["reply:", *_block("", t.get("reply") or "(none)", limit)]
    return out


def show_lines(
    run: EvalRun,
    *,
    suites: str | None = None,
    only_failed: bool = False,
    tags: Mapping[str, str] | None = None,
    case: str | None = None,
    full: bool = False,
    limit: int | None = None,
    max_chars: int = MAX_CHARS,
    width: int = 100,
) -> Iterator[str]:
    """``hat eval show``'s output, line by line.

    Raises:
      ValueError: ``case`` is in none of the suites.
      DataError: a records file holds a bad line (``path:line: ...``).
    """
    found = 0
    for suite in run.suites(suites):
        recs = run.records(suite)
        metric = headline(recs)
        picked = select(
            recs, metric=metric, only_failed=only_failed, tags=tags, case=case
        )
        found += len(picked)
        if case is not None and not picked:
            continue
        if limit is not None:
            picked = picked[:limit]
        yield _suite_line(suite, recs, metric, len(picked))
        order = run.group_tags(suite)
        if full or case is not None:
            for r in picked:
                yield from case_lines(r, order, max_chars)
                yield ""
        else:
            yield from list_lines(picked, metric, order, width)
    if case is not None and not found:
        ids = [r["id"] for s in run.suites(suites) for r in run.records(s)[:1]]
        like = f"; ids look like {quoted(ids[0])}" if ids else ""
        raise ValueError(f"no case {quoted(case)} in {shown(run.name)}{like}")


def _suite_line(suite: str, recs: Sequence[Record], metric: str | None, n: int) -> str:
    head = f"{shown(suite)}: {len(recs)} cases"
    values = [r["scores"][metric] for r in recs if metric in r["scores"]]
    values = [v for v in values if not math.isnan(v)]
    if values:
        mean = sum(values) / len(values)
        head += f", {shown(metric)} {100 * mean:.1f} % (n={len(values)})"
    return head + f"; {n} shown"
