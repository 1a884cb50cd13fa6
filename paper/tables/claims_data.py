"""The paper's quantitative claims (PAPER.md) and how this sweep estimates each.

A ``Claim`` names the runs it needs and an estimator ``sweep -> Stat | None``
(a fraction: a paired difference of two runs over the cases both answered, or
over questions where a suite asks each question under several prompts, a
run's relative error reduction, a contrast of two such effects over the cases
all four runs answered, or a difference of two MTP acceptance rates), with the
paper's figure in points (or % for a relative reduction). ``claims.py`` renders
them; nothing here judges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from hat_jax.eval.stats import MIN_DIFFERING, bootstrap, too_few_to_resample
from hat_jax.jsonl import read_json
from hat_jax.printable import shown
from paper import reported
from paper.compare import run_paired, select
from paper.results import Run, Stat, Sweep
from paper.tables import acceptance, edit, ifeval, latency, paired
from paper.tables.main import BASE, HAT

Key = tuple[str | None, bool, bool]
FIXED, HSA = ifeval.FIXED, ifeval.HSA
FIXED_OPD, HSA_OPD = ifeval.FIXED_OPD, ifeval.HSA_OPD
SHORT = {BASE: "base", FIXED: "fixed SFT", HSA: "HSA-SFT", FIXED_OPD: "fixed+OPD"}
SHORT |= {HSA_OPD: "HSA+OPD", HAT: "HAT"}
IFEVALS = (("ifeval", "real IFEval"), ("ifeval_proxy", "IFEval proxy"))
LEVELS = ((ifeval.PROMPT, "prompt", 0), (ifeval.INSTR, "instr.", 1))
MTP_HEADS, ACCEPT = ("co_trained", "base_head"), "mtp_acceptance_rate"
_ACC = reported.MTP_ACCEPTANCE
PAPER_ACCEPT = 100 * (_ACC["co-trained"] - _ACC["base head"])  # points
_HAT_ROW, _BASE_ROW = reported.MAIN["HAT 35B"], reported.MAIN["base (Qwen3.6-35B-A3B)"]
REDUCTION = "edit: relative error reduction (%)"


class Claim(NamedTuple):
    """One row: the paper's claim, what is measured, how, and its figure."""

    number: int
    claim: str
    measure: str
    estimate: Callable[[Sweep], Stat | None]
    needs: tuple[Key, ...]
    paper: float | None  # points (or % for a relative reduction); None: no figure
    sign: int  # the sign the paper claims (+1 or -1)
    relative: bool = False  # a relative reduction shown as "51.7", not "+51.7"
    proxy: bool = (
        False  # measured on the IFEval proxy; the paper's figure is real IFEval's
    )
    label: str = ""  # the runs, e.g. "HAT − base" (default: the needs joined by −)

    def short(self) -> str:
        """E.g. "1. HAT − base: T1 success", "10. HAT: edit" (the figure's row
        label)."""
        runs = self.label or " − ".join(SHORT[k] for k in self.needs)
        measure = self.measure.replace(" (strict)", "").replace(REDUCTION, "edit")
        return f"{self.number}. {runs}: {measure}"


def _runs(sweep: Sweep, keys: Sequence[Key]) -> list[Run] | None:
    runs = [sweep.pipeline(*k) for k in keys]
    return None if any(r is None for r in runs) else runs


def _diff(a: Key, b: Key, suite: str, metric: str, subset=None):
    def estimate(sweep: Sweep) -> Stat | None:
        runs = _runs(sweep, (a, b))
        return run_paired(*runs, suite, metric, subset)[2] if runs else None

    return estimate


def _by_question(a: Key, b: Key, suite: str, metric: str, subset=None):
    """a − b of ``metric`` over the (``subset``'s) cases both runs answered,
    with a paired bootstrap over their ``question`` tags: T3's prompt-robustness
    cases are each question under 4 prompts, so its units are the questions,
    not the cases (a case interval would count every question 4 times). The
    estimate is the case mean; n counts questions."""

    def estimate(sweep: Sweep) -> Stat | None:
        runs = _runs(sweep, (a, b))
        recs = [r.records(suite) for r in runs or ()]
        if not runs or any(r is None for r in recs):
            return None
        other = {str(r["id"]): r["scores"] for r in recs[1]}
        sums: dict[str, list[float]] = {}
        for r in select(recs[0], subset):
            x, y = r["scores"].get(metric), other.get(str(r["id"]), {}).get(metric)
            if x is not None and y is not None and math.isfinite(x - y):  # NaN: no vote
                d = sums.setdefault(str(r["tags"]["question"]), [0.0, 0.0])
                d[0], d[1] = d[0] + x - y, d[1] + 1
        if not sums:
            return None
        diff, count = np.array(list(sums.values()), np.float64).T
        ci = bootstrap(lambda d, c: d.sum(-1) / c.sum(-1), diff, count)
        return Stat(diff.sum() / count.sum(), *(ci or (None, None)), n=len(sums))

    return estimate


def _reduction(key: Key):
    def estimate(sweep: Sweep) -> Stat | None:
        run = sweep.pipeline(*key)
        return edit.edit_stats(run)[3] if run else None

    return estimate


def _contrast(stat, arrays: list[np.ndarray], value: float) -> Stat:
    ci = bootstrap(stat, *arrays)
    return Stat(value, *(ci or (None, None)), n=len(arrays[0]))


def _scores(run: Run, suite: str, metric: str) -> dict[str, float] | None:
    recs = run.records(suite)
    if recs is None:
        return None
    return {  # a NaN score (no valid vote) is no case
        str(r["id"]): r["scores"][metric]
        for r in recs
        if metric in r["scores"] and math.isfinite(r["scores"][metric])
    }


def _effect_gap(a1: Key, b1: Key, a2: Key, b2: Key, suite: str, metric: str):
    """(a1 − b1) − (a2 − b2) of a 0/1 per-case metric over the cases all four
    runs answered, paired bootstrap over them (records needed). Its per-case
    values are mostly 0 where the four runs agree: below ``MIN_DIFFERING``
    nonzero cases the bootstrap collapses towards [0, 0], so there is no
    interval, as for any graded paired difference."""

    def estimate(sweep: Sweep) -> Stat | None:
        runs = _runs(sweep, (a1, b1, a2, b2))
        scores = [_scores(r, suite, metric) for r in runs or ()]
        if not runs or any(s is None for s in scores):
            return None
        ids = [i for i in scores[0] if all(i in s for s in scores[1:])]
        if not ids:
            return None
        x = np.array([[s[i] for i in ids] for s in scores], np.float64)
        d = x[0] - x[1] - x[2] + x[3]
        if np.count_nonzero(d) < MIN_DIFFERING:
            return Stat(float(d.mean()), n=len(ids))
        return _contrast(lambda v: v.mean(-1), [d], float(d.mean()))

    return estimate


def _records_path(run: Run):
    return run.path / "eval" / edit.SUITE / "records.jsonl"


def _reduction_gap(a: Key, b: Key):
    """a's relative error reduction minus b's over the questions both
    completed under the same error measure, paired bootstrap over them (no
    interval when either run's reduction has none: ``too_few_to_resample``)."""

    def red(before, after):
        m = before.mean(-1)
        return (m - after.mean(-1)) / m

    def estimate(sweep: Sweep) -> Stat | None:
        runs = _runs(sweep, (a, b))
        if not runs or any(r.records(edit.SUITE) is None for r in runs):
            return None
        (ma, ea), (mb, eb) = (
            edit.question_errors(r.records(edit.SUITE), shown(_records_path(r)))
            for r in runs
        )
        qs = [q for q in ea if q in eb]
        if ma != mb or not qs:
            return None
        arrays = [
            np.array([e[q][i] for q in qs], np.float64)
            for e in (ea, eb)
            for i in (0, 1)
        ]
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(red(arrays[0], arrays[1]) - red(arrays[2], arrays[3]))
        if not math.isfinite(value):
            return None
        if too_few_to_resample(*arrays[:2]) or too_few_to_resample(*arrays[2:]):
            return Stat(value, n=len(qs))  # too few wrong or changed to bootstrap
        return _contrast(
            lambda ba, aa, bb, ab: red(ba, aa) - red(bb, ab), arrays, value
        )

    return estimate


def _acceptance_gain(sweep: Sweep) -> Stat | None:
    """The HAT run's co-trained head's MTP acceptance minus the base head's, at
    concurrency 1 of its replay (a fraction): from the turns' draft counts with
    a paired bootstrap over the messages (``acceptance``), else the summaries'
    rates without an interval (an endpoint's replay records no counts)."""
    run = sweep.pipeline(*HAT)
    folder = None if run is None else latency.replay_folder(run)
    counts, paths = [], []
    for head in MTP_HEADS:
        path = None if folder is None else folder / head / "replay.json"
        if path is None or not path.exists():
            return None
        result = latency.check_replay(read_json(path), path)
        counts.append(acceptance.turn_drafts(result, path))
        paths.append(shown(path))
    if all(counts):
        return acceptance.paired_gain(*counts, where=" and ".join(paths))
    replays, _ = latency.read_replays(folder)
    rates = [(replays.get(h) or {}).get(1, {}).get(ACCEPT) for h in MTP_HEADS]
    if any(r is None or math.isnan(r) for r in rates):
        return None
    return Stat(rates[0] - rates[1])


def acceptance_basis(sweep: Sweep) -> list[str]:
    """A note on what claim 11's heads drafted for, from the HAT run's replay
    summaries at concurrency 1: answered turns and distinct replies per head. A
    model that gives one reply to every message has its drafts accepted
    whatever the head, so the acceptance gap means little without them."""
    run = sweep.pipeline(*HAT)
    replays, _ = latency.read_replays(
        None if run is None else latency.replay_folder(run)
    )
    parts = []
    for head in MTP_HEADS:
        s = (replays.get(head) or {}).get(1) or {}
        if any(s.get(k) is None for k in ("distinct_replies", "answered", "messages")):
            return []
        parts.append(
            f"{head.replace('_', ' ')} {s['distinct_replies']} distinct replies "
            f"over {s['answered']} answered of {s['messages']} messages"
        )
    return [f"Claim 11's replay at concurrency 1: {'; '.join(parts)}."]


def _ifeval(number, claim, a, b, paper: tuple, sign: int) -> list[Claim]:
    """A claim on IFEval: the real IFEval at each level the paper gives a figure
    for (the prompt level always), then the proxy beside the same figures."""
    return [
        Claim(
            number,
            claim,
            f"{name}, {level} (strict)",
            _diff(a, b, suite, metric),
            (a, b),
            paper[i],
            sign,
            proxy=suite == "ifeval_proxy",
        )
        for suite, name in IFEVALS
        for metric, level, i in LEVELS
        if paper[i] is not None or level == "prompt"
    ]


def _success(number, claim, suite, a, b, paper, sign) -> Claim:
    label, name, subset = suite
    estimate = _diff(a, b, name, "success", subset)
    return Claim(number, claim, f"{label} success", estimate, (a, b), paper, sign)


T1, T2 = ("T1", "t1", None), ("T2", "t2", None)
OPD_GAP = reported.OPD_GAIN["fixed"] - reported.OPD_GAIN["hsa"]
EDIT_GAP = reported.EDIT_REDUCTION["HAT"] - reported.EDIT_REDUCTION["naive SFT"]
HAT_IFEVAL = tuple(
    _HAT_ROW[k] - _BASE_ROW[k] for k in ("ifeval_prompt", "ifeval_instr")
)
CLAIMS: tuple[Claim, ...] = (
    _success(1, "HAT beats the base", T1, HAT, BASE, paired.HAT_VS_BASE["t1"], +1),
    _success(
        2,
        "HAT follows held-out harnesses better than the base",
        T2,
        HAT,
        BASE,
        paired.HAT_VS_BASE["t2"],
        +1,
    ),
    _success(
        3,
        "HSA-SFT beats fixed-harness SFT on held-out harnesses (the thesis; no figure)",
        T2,
        HSA,
        FIXED,
        None,
        +1,
    ),
    *_ifeval(
        4,
        "fixed-harness SFT loses IFEval (vs the base)",
        FIXED,
        BASE,
        ifeval.VS_BASE[FIXED],
        -1,
    ),
    *_ifeval(
        5,
        "OPD recovers IFEval after fixed-harness SFT",
        FIXED_OPD,
        FIXED,
        (reported.OPD_GAIN["fixed"], None),
        +1,
    ),
    *_ifeval(
        6,
        "OPD after HSA-SFT adds little",
        HSA_OPD,
        HSA,
        (reported.OPD_GAIN["hsa"], None),
        +1,
    ),
    Claim(
        6,
        "... i.e. OPD adds more after fixed-harness than after HSA-SFT",
        "real IFEval, prompt (strict)",
        _effect_gap(FIXED_OPD, FIXED, HSA_OPD, HSA, "ifeval", ifeval.PROMPT),
        (FIXED_OPD, FIXED, HSA_OPD, HSA),
        OPD_GAP,
        +1,
        label="OPD's gain after fixed − after HSA-SFT",
    ),
    *_ifeval(
        7,
        "HSA-SFT adds IFEval (read as over fixed-harness SFT)",
        HSA,
        FIXED,
        (reported.HSA_SFT_GAIN, None),
        +1,
    ),
    *_ifeval(
        8,
        "HSA-RL adds IFEval (HAT vs HSA-SFT + OPD)",
        HAT,
        HSA_OPD,
        (reported.HSA_RL_GAIN, None),
        +1,
    ),
    Claim(
        9,
        "fixed-harness SFT loses prompt robustness (vs the base)",
        "T3 PR success (n: questions, 4 prompts each)",
        _by_question(FIXED, BASE, "t3", "success", paired.PR),
        (FIXED, BASE),
        reported.FIXED_SFT_DROP["t3_pr"],
        -1,
    ),
    Claim(
        10,
        "a harness edit cuts HAT's errors",
        REDUCTION,
        _reduction(HAT),
        (HAT,),
        reported.EDIT_REDUCTION["HAT"],
        +1,
        relative=True,
    ),
    Claim(
        10,
        "... and naive (fixed-harness) SFT's",
        REDUCTION,
        _reduction(FIXED),
        (FIXED,),
        reported.EDIT_REDUCTION["naive SFT"],
        +1,
        relative=True,
    ),
    Claim(
        10,
        "... by more for HAT than for naive SFT",
        REDUCTION,
        _reduction_gap(HAT, FIXED),
        (HAT, FIXED),
        EDIT_GAP,
        +1,
        relative=True,
    ),
    Claim(
        11,
        "the co-trained MTP head is accepted more often than the base head",
        "MTP acceptance at concurrency 1 (HAT's replay)",
        _acceptance_gain,
        (HAT,),
        PAPER_ACCEPT,
        +1,
        label="co-trained − base head",
    ),
    *_ifeval(15, "HAT keeps IFEval (vs the base)", HAT, BASE, HAT_IFEVAL, +1),
)
