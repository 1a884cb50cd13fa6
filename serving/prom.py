"""vLLM's ``/metrics`` (Prometheus text): speculative-decoding counters.

vLLM (V1 engine, ``vllm/v1/spec_decode/metrics.py``) counts drafts, draft
tokens and accepted tokens in ``vllm:spec_decode_num_drafts``,
``vllm:spec_decode_num_draft_tokens`` and ``vllm:spec_decode_num_accepted_tokens``
(``_total`` counters, one series per engine/model label set, summed here), and
per draft position in ``vllm:spec_decode_num_accepted_tokens_per_pos``: its
series with label ``position="i"`` (0-based) counts the drafts whose first
i + 1 tokens were accepted (summed over the other labels, kept apart by
position). A replay reads them before and after and reports the difference:
acceptance rate = accepted / draft tokens, mean accepted length = 1 + accepted
/ drafts (the bonus token included), acceptance at position i = accepted at i /
drafts.

The page is read through ``hat_jax.endpoint.EndpointClient`` (no redirects, one
deadline, a size cap): a server that fails, lies or stalls gives a
:class:`~hat_jax.endpoint.PolicyError` naming what was wrong. Each sample of
the counters read is checked before it is summed: a value that is not a
Prometheus number (``1_0`` and ``infinity`` are not), not finite or negative,
a series on the page twice and a line of theirs that does not parse are
refused, and so are differences that vLLM's own accounting cannot produce
(:func:`spec_delta`). Server text quoted in an error is cut short and has its
control characters escaped (``hat_jax.printable.shown``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from hat_jax.endpoint import EndpointClient, PolicyError
from hat_jax.printable import shown

SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
}
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"  # label "position"
MAX_BYTES = 8 << 20  # a metrics page; vLLM's is tens of KB
CUT = 40  # characters of a label value (or a sample value) quoted in an error
# The metrics read here, with and without the counters' "_total": every sample
# of theirs is checked on its own.
READ = frozenset(
    name + end for name in (*SPEC_COUNTERS.values(), PER_POS) for end in ("", "_total")
)
# vLLM adds an engine step's counts to these counters one at a time
# (``SpecDecodingProm.observe``: drafts, draft tokens, accepted tokens, then
# position by position, with no lock held across them). With one API server
# the counting and the /metrics page both run on its event loop, so a scrape
# sees whole steps; with several (``--api-server-count > 1``, Prometheus'
# multiprocess mode) a scrape reads the other processes' files while they write
# and can catch a step half counted, at either read. The checks across counters
# in `spec_delta` therefore allow this share of the delta's drafts (draft
# tokens, for token counts): a torn step is one step's counts among the many of
# a replay. A small replay against a server busy with other clients can still
# be refused; the replay notes it and carries on.
TORN_SHARE = 0.01

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*"([^"\\]*(?:\\.[^"\\]*)*)"')
_SPACE = re.compile(r"[ \t]*")
# Prometheus / OpenMetrics sample values: decimal or scientific, +Inf, -Inf, NaN
# (not Python's "1_0", "infinity", "nan" or hexadecimal).
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
_TIMESTAMP = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")

Labels = tuple[tuple[str, str], ...]


def _cut(text: str, n: int = CUT) -> str:
    """Server text for an error: at most ``n`` characters, control characters
    escaped."""
    return shown(text if len(text) <= n else text[:n] + "...")


def _first(items: list, n: int = 8) -> str:
    """``[a, b, ...]``: the first ``n`` items of a list for an error."""
    return f"[{', '.join([str(x) for x in items[:n]] + ['...'] * (len(items) > n))}]"


def _series(name: str, labels: Labels) -> str:
    """``name{a="x",b="y"}`` for an error (label names and values cut short)."""
    if not labels:
        return name
    pairs = [f'{_cut(k)}="{_cut(v)}"' for k, v in labels[:8]]
    return f"{name}{{{','.join(pairs + ['...'] * (len(labels) > 8))}}}"


def _number(text: str) -> float | None:
    """A sample value in Prometheus' syntax, or None."""
    if text in _SPECIAL:
        return _SPECIAL[text]
    return float(text) if _NUMBER.fullmatch(text) else None


def _parse_line(line: str) -> tuple[str, Labels, str] | None:
    """(name, labels, value text) of ``name[{labels}] value [timestamp]``, or
    None (a label name given twice included)."""
    m = _NAME.match(line)
    if m is None:
        return None
    name, at = m.group(), m.end()
    labels: list[tuple[str, str]] = []
    if line.startswith("{", at):
        at = _SPACE.match(line, at + 1).end()
        while not line.startswith("}", at):
            pair = _PAIR.match(line, at)
            if pair is None:
                return None
            labels.append((pair[1], pair[2]))
            at = _SPACE.match(line, pair.end()).end()
            if line.startswith(",", at):
                at = _SPACE.match(line, at + 1).end()
            elif not line.startswith("}", at):
                return None
        at += 1
        if len({k for k, _ in labels}) != len(labels):
            return None
    rest = line[at:]
    fields = rest.split()
    if not rest[:1].isspace() or not 1 <= len(fields) <= 2:
        return None
    if len(fields) == 2 and not _TIMESTAMP.fullmatch(fields[1]):
        return None
    return name, tuple(labels), fields[0]


def _samples(text: str) -> Iterator[tuple[str, Labels, float]]:
    """(name, labels, value) per sample line; comments skipped.

    Lines of other metrics that are not ``name[{labels}] value [timestamp]``
    are skipped too; those of the metrics in `READ` are refused, as are their
    samples that are not finite counts >= 0 or repeat a (name, labels) series.
    """
    seen: set[tuple[str, frozenset]] = set()
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        sample = _parse_line(line)
        if sample is None:
            m = _NAME.match(line)
            if m is not None and m.group() in READ:
                raise ValueError(
                    f"{m.group()}: a line that is not name{{labels}} value "
                    f"[timestamp]: {_cut(line[m.end() :])}"
                )
            continue
        name, labels, value_text = sample
        value = _number(value_text)
        if name not in READ:
            if value is not None:
                yield name, labels, value
            continue
        where = _series(name, labels)
        if value is None:
            raise ValueError(f"{where} has value {_cut(value_text)}, not a number")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where} is {value}, not a finite count >= 0")
        key = (name, frozenset(labels))
        if key in seen:
            raise ValueError(f"{where} is on the page more than once")
        seen.add(key)
        yield name, labels, value


def parse_metrics(text: str) -> dict[str, float]:
    """Sums of every sample per metric name (labels dropped).

    Raises:
      ValueError: a sample of a metric in `READ` that is malformed, not a
        finite count >= 0 or a repeat (see `_samples`).
    """
    out: dict[str, float] = {}
    for name, _, value in _samples(text):
        out[name] = out.get(name, 0.0) + value
    return out


def parse_by_label(text: str, label: str) -> dict[str, dict[str, float]]:
    """name -> value of ``label`` (escapes kept) -> the sum of that name's
    samples carrying it (over their other labels); samples without the label
    are left out.

    Raises:
      ValueError: as `parse_metrics`.
    """
    out: dict[str, dict[str, float]] = {}
    for name, labels, value in _samples(text):
        at = dict(labels).get(label)
        if at is not None:
            by = out.setdefault(name, {})
            by[at] = by.get(at, 0.0) + value
    return out


def _count(name: str, value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} is {value}, not a finite count >= 0")
    return value


def spec_counters(
    metrics: dict[str, float], by_position: dict[str, dict[str, float]] | None = None
) -> dict | None:
    """The spec-decode counters, or None when the server exposes none.

    ``by_position`` (``parse_by_label(text, "position")``) adds
    ``"accepted_per_pos"``: [accepted at position 0, 1, ..., k - 1], when the
    page has the per-position counter.

    Raises:
      ValueError: a counter (a sum) that is not a finite number >= 0, or
        per-position series whose positions are not 0..k-1.
    """
    got: dict = {}
    for key, name in SPEC_COUNTERS.items():
        value = metrics.get(name + "_total", metrics.get(name))
        if value is None:
            return None
        got[key] = _count(name, value)
    by_position = by_position or {}
    series = by_position.get(PER_POS + "_total", by_position.get(PER_POS))
    if series:
        names = [str(i) for i in range(len(series))]
        if sorted(series) != sorted(names):
            listed = _first([f"'{_cut(p)}'" for p in sorted(series)])
            raise ValueError(f"{PER_POS} has positions {listed}, not 0..k-1")
        got["accepted_per_pos"] = [
            _count(f'{PER_POS}{{position="{p}"}}', series[p]) for p in names
        ]
    return got


def read_spec(base_url: str, timeout_s: float = 10.0) -> dict | None:
    """The server's spec-decode counters now (None: the page has none).

    Raises:
      PolicyError: the page could not be read (unreachable, HTTP error,
        redirect, over the cap, past the deadline, not UTF-8) or holds
        counters that are not counts.
    """
    with EndpointClient(
        base_url, timeout_s=timeout_s, retries=0, max_bytes=MAX_BYTES
    ) as client:
        text = client.get_text("metrics", root=True)
        try:
            return spec_counters(parse_metrics(text), parse_by_label(text, "position"))
        except ValueError as e:
            raise PolicyError(f"GET {client.url('metrics', root=True)}: {e}") from None


def spec_delta(before: dict | None, after: dict | None) -> dict | None:
    """after - before, when both were read (``accepted_per_pos`` position by
    position, when both have it).

    The difference must be one vLLM's accounting can make (each verify step of
    a request is one draft; its accepted tokens are a prefix of its draft
    tokens, counted at positions 0..n-1): within `TORN_SHARE` (see there),
    accepted tokens <= draft tokens, each position's count <= drafts, the
    counts do not rise with position and sum to the accepted tokens.

    Raises:
      ValueError: a counter ran backwards (the server restarted, or lies), the
        per-position counters appeared, vanished or changed length between the
        reads, or the difference breaks one of the rules above.
    """
    if before is None or after is None:
        return None
    delta: dict = {k: after[k] - before[k] for k in SPEC_COUNTERS}
    backwards = sorted(k for k, v in delta.items() if v < 0)
    pos_a, pos_b = before.get("accepted_per_pos"), after.get("accepted_per_pos")
    if pos_a is not None or pos_b is not None:
        if pos_a is None or pos_b is None or len(pos_a) != len(pos_b):
            sizes = [
                "none" if p is None else f"{len(p)} positions" for p in (pos_a, pos_b)
            ]
            raise ValueError(
                f"spec-decode per-position counters changed from {sizes[0]} to "
                f"{sizes[1]} between the reads"
            )
        per_pos = [b - a for a, b in zip(pos_a, pos_b)]
        delta["accepted_per_pos"] = per_pos
        backwards += [f"accepted_per_pos[{i}]" for i, v in enumerate(per_pos) if v < 0]
    if backwards:
        listed = _first([repr(b) for b in backwards])
        raise ValueError(f"spec-decode counters ran backwards: {listed}")
    drafts, tokens = delta["drafts"], delta["draft_tokens"]
    slack, token_slack = TORN_SHARE * drafts, TORN_SHARE * tokens
    if delta["accepted_tokens"] > tokens + token_slack:
        raise ValueError(
            f"spec-decode counters: {delta['accepted_tokens']:g} tokens accepted "
            f"of {tokens:g} drafted"
        )
    per_pos = delta.get("accepted_per_pos", [])
    over = [i for i, v in enumerate(per_pos) if v > drafts + slack]
    if over:
        raise ValueError(
            f"spec-decode counters: positions {_first(over)} accepted more often "
            f"than the {drafts:g} drafts"
        )
    rises = [i for i in range(1, len(per_pos)) if per_pos[i] > per_pos[i - 1] + slack]
    if rises:
        i = rises[0]
        raise ValueError(
            f"{PER_POS}: position {i} accepted {per_pos[i]:g} times, more than "
            f"position {i - 1} ({per_pos[i - 1]:g}): a draft token counts only "
            f"after every one before it (positions rising: {_first(rises)})"
        )
    if per_pos and abs(sum(per_pos) - delta["accepted_tokens"]) > token_slack:
        raise ValueError(
            f"{PER_POS} sums to {sum(per_pos):g} over positions, not the "
            f"{delta['accepted_tokens']:g} of {SPEC_COUNTERS['accepted_tokens']}"
        )
    return delta
