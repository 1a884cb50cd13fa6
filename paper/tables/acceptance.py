"""MTP acceptance of two replays of one trace, paired by message.

Each turn of a ``replay.json`` (``serving.replay``) lists its model calls with
their draft counts: ``drafts_proposed`` (draft tokens the head proposed) and
``drafts_accepted``, ``call`` the call's index in its repeat (a batched call
is listed by every turn it served: counted once, for the first) and the turn's
``repeat`` and ``index`` (the message). At one concurrency level, two replays
of the same trace with two heads answer the same messages, so the difference
of their acceptance rates (accepted over proposed draft tokens, as vLLM
defines it) has a paired bootstrap interval over the messages both replayed.
A replay whose calls carry no counts (an endpoint's, read from its
``/metrics``) gives none; the claims table then shows the summaries' rates
without an interval.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from hat_jax.eval.stats import bootstrap
from hat_jax.jsonl import DataError, field
from hat_jax.printable import shown
from paper.checks import expect_object
from paper.results import Stat

ACCEPT = "mtp_acceptance_rate"
MIN_TURNS = 10  # turns with drafts below which a ratio's bootstrap is not read
AGREE = 1e-6  # the summary's rate and its turns' counts may differ by this


def _count(obj: dict, key: str, where: str, name: str) -> int:
    value = field(obj, key, where, int, default=0, label=name)
    if value < 0:
        raise DataError(f"{where}: field '{name}' must be >= 0, got {value}")
    return value


def turn_drafts(
    result: dict, path: Path, concurrency: int = 1
) -> dict[tuple[int, int], tuple[int, int]]:
    """(repeat, message index) -> (draft tokens proposed, accepted) of every turn
    of ``result``'s run at ``concurrency`` ({} without that run or counts).

    Raises:
      DataError: ``path: field 'runs[i].turns[j]...' ...`` for a turn or call
        of another shape, accepted above proposed, a turn listed twice, or a
        summary rate that its single repeat's counts do not give.
    """
    where = shown(path)
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for i, run in enumerate(result["runs"]):
        if run["concurrency"] != concurrency:
            continue
        turns = field(run, "turns", where, list, default=[], label=f"runs[{i}].turns")
        seen: set[tuple[int, int]] = set()
        for j, turn in enumerate(turns):
            at = f"runs[{i}].turns[{j}]"
            expect_object(turn, where, f"{at} to be an object")
            key = (_count(turn, "repeat", where, f"{at}.repeat"),)
            key += (field(turn, "index", where, int, label=f"{at}.index"),)
            if key in out:
                raise DataError(
                    f"{where}: {at}: repeat {key[0]}, message {key[1]} twice"
                )
            calls = field(turn, "calls", where, list, default=[], label=f"{at}.calls")
            proposed = accepted = 0
            for k, call in enumerate(calls):
                name = f"{at}.calls[{k}]"
                expect_object(call, where, f"{name} to be an object")
                p = _count(call, "drafts_proposed", where, f"{name}.drafts_proposed")
                a = _count(call, "drafts_accepted", where, f"{name}.drafts_accepted")
                if a > p:
                    raise DataError(
                        f"{where}: field '{name}.drafts_accepted' ({a}) is above "
                        f"'drafts_proposed' ({p})"
                    )
                ident = (key[0], field(call, "call", where, (int, type(None)),
                                       default=None, label=f"{name}.call"))  # fmt: skip
                if ident[1] is not None and ident in seen:
                    continue  # a batched call, counted for its first turn
                seen.add(ident)
                proposed, accepted = proposed + p, accepted + a
            out[key] = (proposed, accepted)
        _agrees(run, out, where, f"runs[{i}]")
    return out if any(p for p, _ in out.values()) else {}


def _agrees(run: dict, counts: dict, where: str, name: str) -> None:
    """A single repeat's summary rate must be what its turns' counts give."""
    rate = run["summary"].get(ACCEPT)
    proposed = sum(p for p, _ in counts.values())
    if len({r for r, _ in counts}) != 1 or not proposed or rate is None:
        return
    ours = sum(a for _, a in counts.values()) / proposed
    if not math.isfinite(rate) or abs(rate - ours) > AGREE:
        raise DataError(
            f"{where}: field '{name}.summary.{ACCEPT}' ({rate}) is not what its "
            f"turns' draft counts give ({ours:.6f})"
        )


def paired_gain(
    a: dict[Any, tuple[int, int]], b: dict[Any, tuple[int, int]]
) -> Stat | None:
    """a's acceptance rate minus b's over the turns both have, with a paired
    bootstrap interval over them (none with fewer than ``MIN_TURNS`` turns
    with drafts in either: resamples without any would be dropped); None when
    they share no turn with drafts."""
    keys = sorted(set(a) & set(b))
    x = np.array([[*a[k], *b[k]] for k in keys], np.float64).reshape(-1, 4).T
    if not keys or not x[0].sum() or not x[2].sum():
        return None

    def gain(pa, aa, pb, ab):
        return aa.sum(-1) / pa.sum(-1) - ab.sum(-1) / pb.sum(-1)

    value = float(gain(*x))
    if min(np.count_nonzero(x[0]), np.count_nonzero(x[2])) < MIN_TURNS:
        return Stat(value, n=len(keys))
    ci = bootstrap(gain, *x)
    return Stat(value, *(ci or (None, None)), n=len(keys))
