"""MTP acceptance of two replays of one trace, paired by message.

Each turn of a ``replay.json`` (``serving.replay``) lists its model calls with
their draft counts: ``drafts_proposed`` (draft tokens the head proposed) and
``drafts_accepted``, ``call`` the call's index in its repeat (a batched call
is listed by every turn it served: counted once, for the first), and the
turn's ``repeat``, ``index`` (the message) and ``session`` (its room). At
concurrency 1 no call is batched, so each message owns its drafts; two replays
of the same trace with two heads answer the same messages, and the difference
of their acceptance rates (accepted over proposed draft tokens, as vLLM
defines it) gets a paired bootstrap over the messages both replayed, each
message's counts summed over its repeats (a repeat is a near copy, not
another message). A replay whose calls carry no counts (an endpoint's, read
from its ``/metrics``) gives none; the claims table then shows the summaries'
rates without an interval.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from hat_jax.eval.stats import bootstrap
from hat_jax.jsonl import DataError, field
from hat_jax.printable import shown
from paper.checks import expect_object
from paper.results import Stat

ACCEPT = "mtp_acceptance_rate"
MIN_MESSAGES = 10  # messages with drafts below which the bootstrap is not read
AGREE = 1e-6  # the summary's rate and its turns' counts may differ by this
MAX_COUNT = 2**53  # a larger count is not a replay's (nor exact as a float)

# message index -> (its session, draft tokens proposed, accepted over repeats)
Drafts = dict[int, tuple[str, int, int]]


def _count(obj: dict, key: str, where: str, name: str) -> int:
    value = field(obj, key, where, int, default=0, label=name)
    if not 0 <= value <= MAX_COUNT:
        raise DataError(f"{where}: field '{name}' must be in [0, 2^53], got {value}")
    return value


def _turn(turn: dict, where: str, at: str, seen: set) -> tuple[int, int, int, int]:
    """(repeat, index, proposed, accepted) of one turn; ``seen`` holds the
    (repeat, call) pairs counted already."""
    expect_object(turn, where, f"{at} to be an object")
    repeat = _count(turn, "repeat", where, f"{at}.repeat")
    index = field(turn, "index", where, int, label=f"{at}.index")
    proposed = accepted = 0
    for k, call in enumerate(field(turn, "calls", where, list, default=[],
                                   label=f"{at}.calls")):  # fmt: skip
        name = f"{at}.calls[{k}]"
        expect_object(call, where, f"{name} to be an object")
        p = _count(call, "drafts_proposed", where, f"{name}.drafts_proposed")
        a = _count(call, "drafts_accepted", where, f"{name}.drafts_accepted")
        if a > p:
            raise DataError(
                f"{where}: field '{name}.drafts_accepted' ({a}) is above "
                f"'drafts_proposed' ({p})"
            )
        ident = field(call, "call", where, (int, type(None)), default=None,
                      label=f"{name}.call")  # fmt: skip
        if ident is not None and (repeat, ident) in seen:
            continue  # a batched call, counted for its first turn
        seen.add((repeat, ident))
        proposed, accepted = proposed + p, accepted + a
    return repeat, index, proposed, accepted


def turn_drafts(result: dict, path: Path, concurrency: int = 1) -> Drafts:
    """Per message of ``result``'s first run at ``concurrency``: its session
    and draft tokens proposed and accepted, summed over repeats ({} without
    that run or without counts).

    Raises:
      DataError: ``path: field 'runs[i].turns[j]...' ...`` for a turn or call
        of another shape, accepted above proposed, a turn listed twice, or a
        summary rate that its single repeat's counts do not give.
    """
    where = shown(path)
    level = [i for i, r in enumerate(result["runs"]) if r["concurrency"] == concurrency]
    if not level:
        return {}
    i = level[0]
    run = result["runs"][i]
    turns = field(run, "turns", where, list, default=[], label=f"runs[{i}].turns")
    out: Drafts = {}
    keys: set[tuple[int, int]] = set()
    seen: set[tuple[int, int | None]] = set()
    for j, turn in enumerate(turns):
        at = f"runs[{i}].turns[{j}]"
        repeat, index, p, a = _turn(turn, where, at, seen)
        if (repeat, index) in keys:
            raise DataError(f"{where}: {at}: repeat {repeat}, message {index} twice")
        keys.add((repeat, index))
        session = str(turn.get("session"))
        _, p0, a0 = out.get(index, (session, 0, 0))
        out[index] = (session, p0 + p, a0 + a)
    _agrees(run, out, {r for r, _ in keys}, where, f"runs[{i}]")
    return out if any(p for _, p, _ in out.values()) else {}


def _agrees(run: dict, counts: Drafts, repeats: set, where: str, name: str) -> None:
    """A single repeat's summary rate must be what its turns' counts give."""
    rate = run["summary"].get(ACCEPT)
    proposed = sum(p for _, p, _ in counts.values())
    if len(repeats) != 1 or not proposed or rate is None:
        return
    ours = sum(a for _, _, a in counts.values()) / proposed
    if not math.isfinite(rate) or abs(rate - ours) > AGREE:
        raise DataError(
            f"{where}: field '{name}.summary.{ACCEPT}' ({rate}) is not what its "
            f"turns' draft counts give ({ours:.6f})"
        )


def paired_gain(a: Drafts, b: Drafts, where: str = "the replays") -> Stat | None:
    """a's acceptance rate minus b's over the messages both replayed, with a
    paired bootstrap over them (none with fewer than ``MIN_MESSAGES`` messages
    with drafts in either: resamples without any would be dropped); None when
    they share no message with drafts.

    Raises:
      DataError: a shared message index whose session differs (the replays
        are of different traces).
    """
    keys = sorted(set(a) & set(b))
    for k in keys:
        if a[k][0] != b[k][0]:
            raise DataError(
                f"{where}: message {k} is from session {shown(a[k][0])} in one "
                f"replay and {shown(b[k][0])} in the other: not the same trace"
            )
    x = np.array([[*a[k][1:], *b[k][1:]] for k in keys], np.float64).reshape(-1, 4).T
    if not keys or not x[0].sum() or not x[2].sum():
        return None

    def gain(pa, aa, pb, ab):
        return aa.sum(-1) / pa.sum(-1) - ab.sum(-1) / pb.sum(-1)

    value = float(gain(*x))
    if min(np.count_nonzero(x[0]), np.count_nonzero(x[2])) < MIN_MESSAGES:
        return Stat(value, n=len(keys))
    ci = bootstrap(gain, *x)
    return Stat(value, *(ci or (None, None)), n=len(keys))
