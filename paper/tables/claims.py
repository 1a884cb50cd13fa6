"""The paper's quantitative claims, a row each, beside what the sweep measured.

Each row is a difference the paper reports (or an effect whose sign it claims)
and our estimate of it: a paired difference over the cases both runs answered
(or, for the harness edit, a run's relative error reduction), with its 95 %
interval, read three ways with no judgement: whether its sign is the paper's,
whether the interval excludes 0 (the data decide the sign), and where the
paper's figure lies against the interval (above it, inside, below it). Whether a
claim "reproduces" is a judgement left to the reader (docs/results/claims.md
copies its numbers from this table).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from paper import reported
from paper.compare import METHOD, run_paired
from paper.render import MISSING, Table, ci, count, diff, paper_cell
from paper.results import Stat, Sweep
from paper.tables import edit, ifeval, latency, paired
from paper.tables.main import BASE, HAT, PIPELINES
from paper.tables.registry import register, skipped_note

Key = tuple[str | None, bool, bool]
FIXED, HSA = ifeval.FIXED, ifeval.HSA
FIXED_OPD, HSA_OPD = ifeval.FIXED_OPD, ifeval.HSA_OPD
IFEVALS = (("ifeval", "real IFEval"), ("ifeval_proxy", "IFEval proxy"))
LEVELS = ((ifeval.PROMPT, "prompt", 0), (ifeval.INSTR, "instr.", 1))
MTP_HEADS, ACCEPT = ("co_trained", "base_head"), "mtp_acceptance_rate"
_ACC = reported.MTP_ACCEPTANCE
PAPER_ACCEPT = 100 * (_ACC["co-trained"] - _ACC["base head"])  # points


class Claim(NamedTuple):
    """One row: the paper's claim, what is measured, how, and its figure."""

    number: int
    claim: str
    measure: str
    estimate: Callable[[Sweep], Stat | None]
    needs: tuple[Key, ...]
    paper: float | None  # points (or % for a relative reduction)
    sign: int  # the sign the paper claims (+1 or -1)
    relative: bool = False  # a relative reduction shown as "51.7", not "+51.7"


def _diff(a: Key, b: Key, suite: str, metric: str, subset=None):
    def estimate(sweep: Sweep) -> Stat | None:
        ra, rb = sweep.pipeline(*a), sweep.pipeline(*b)
        return run_paired(ra, rb, suite, metric, subset)[2] if ra and rb else None

    return estimate


def _reduction(key: Key):
    def estimate(sweep: Sweep) -> Stat | None:
        run = sweep.pipeline(*key)
        return edit.edit_stats(run)[3] if run else None

    return estimate


def _acceptance_gain(sweep: Sweep) -> Stat | None:
    """The HAT run's co-trained head's MTP acceptance minus the base head's, at
    concurrency 1 of its replay (a fraction; no interval: one replay per head
    records rates, not the drafts behind them)."""
    run = sweep.pipeline(*HAT)
    replays, _ = latency.read_replays(
        None if run is None else latency.replay_folder(run)
    )
    rates = [(replays.get(h) or {}).get(1, {}).get(ACCEPT) for h in MTP_HEADS]
    if any(r is None or math.isnan(r) for r in rates):
        return None
    return Stat(rates[0] - rates[1])


def _ifeval_rows(number, claim, a, b, paper: tuple, sign: int) -> list[Claim]:
    """A claim on IFEval: the real IFEval at each level the paper gives a figure
    for, then the proxy (the paper's figure beside it too, though it measured
    the real IFEval only)."""
    return [
        Claim(
            number,
            claim,
            f"{name}, {level} (strict)",
            _diff(a, b, suite, metric),
            (a, b),
            paper[i],
            sign,
        )
        for suite, name in IFEVALS
        for metric, level, i in LEVELS
        if paper[i] is not None or level == "prompt"
    ]


T1, T2, PR = ("T1", "t1", None), ("T2", "t2", None), ("T3 PR", "t3", paired.PR)
REDUCTION = "edit: relative error reduction (%)"


def _success(number, claim, suite, a, b, paper, sign) -> Claim:
    label, name, subset = suite
    estimate = _diff(a, b, name, "success", subset)
    return Claim(number, claim, f"{label} success", estimate, (a, b), paper, sign)


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
        "HSA-SFT beats fixed-harness SFT on held-out harnesses",
        T2,
        HSA,
        FIXED,
        None,
        +1,
    ),
    *_ifeval_rows(
        4,
        "fixed-harness SFT loses IFEval (vs the base)",
        FIXED,
        BASE,
        ifeval.VS_BASE[FIXED],
        -1,
    ),
    *_ifeval_rows(
        5,
        "OPD recovers IFEval after fixed-harness SFT",
        FIXED_OPD,
        FIXED,
        (reported.OPD_GAIN["fixed"], None),
        +1,
    ),
    *_ifeval_rows(
        6,
        "OPD after HSA-SFT adds little",
        HSA_OPD,
        HSA,
        (reported.OPD_GAIN["hsa"], None),
        +1,
    ),
    *_ifeval_rows(
        7,
        "HSA-SFT adds IFEval over fixed-harness SFT",
        HSA,
        FIXED,
        (reported.HSA_SFT_GAIN, None),
        +1,
    ),
    *_ifeval_rows(
        8,
        "HSA-RL adds IFEval (HAT vs HSA-SFT + OPD)",
        HAT,
        HSA_OPD,
        (reported.HSA_RL_GAIN, None),
        +1,
    ),
    _success(
        9,
        "fixed-harness SFT loses prompt robustness (vs the base)",
        PR,
        FIXED,
        BASE,
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
        "... and naive (fixed-harness) SFT's, by less",
        REDUCTION,
        _reduction(FIXED),
        (FIXED,),
        reported.EDIT_REDUCTION["naive SFT"],
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
    ),
)
HEADER = [
    "#",
    "claim (paper)",
    "measure",
    "n",
    "ours",
    "paper",
    "sign as the paper's",
    "interval excludes 0",
    "paper's figure",
]


def readings(s: Stat | None, paper: float | None, sign: int) -> list[str]:
    """The three readings of an estimate (a fraction) against the paper's
    figure (points): [sign as the paper's, excludes 0, the paper's figure
    above / inside / below the interval]; "–" where there is nothing to read."""
    if s is None or s.mean is None:
        return [MISSING] * 3
    same = "yes" if s.mean * sign > 0 else "no" if s.mean * sign < 0 else "0"
    if s.lo is None:
        return [same, MISSING, MISSING]
    where = MISSING
    if paper is not None:
        lo, hi = 100 * s.lo, 100 * s.hi
        where = "above" if paper > hi else "below" if paper < lo else "inside"
    return [same, "yes" if s.excludes_zero else "no", where]


SHORT = {BASE: "base", FIXED: "fixed SFT", HSA: "HSA-SFT", FIXED_OPD: "fixed+OPD"}
SHORT |= {HSA_OPD: "HSA+OPD", HAT: "HAT"}


def short_label(c: Claim) -> str:
    """E.g. "1. HAT − base: T1 success", "10. HAT: edit: relative error ..."."""
    return f"{c.number}. {' − '.join(SHORT[k] for k in c.needs)}: {c.measure}"


def missing_runs(sweep: Sweep, c: Claim) -> list[str]:
    """The row labels of the pipelines ``c`` needs that the sweep has not done."""
    labels = dict(PIPELINES)
    return [labels[k] for k in c.needs if sweep.pipeline(*k) is None]


def estimate(sweep: Sweep, c: Claim) -> Stat | None:
    """Our estimate of ``c`` (a fraction), or None when a run is not done."""
    return None if missing_runs(sweep, c) else c.estimate(sweep)


def claim_row(sweep: Sweep, c: Claim) -> list[str]:
    missing = missing_runs(sweep, c)
    s = estimate(sweep, c)
    measure = c.measure + (f" ({', '.join(missing)} not done)" if missing else "")
    ours = ci(s, mark=True) if c.relative else diff(s)
    paper = paper_cell(c.paper, signed=not c.relative)
    if c.paper is None:
        paper = "> 0" if c.sign > 0 else "< 0"
    n = s.n if s is not None and s.lo is not None else None
    return [str(c.number), c.claim, measure, count(n), ours, paper] + readings(
        s, c.paper, c.sign
    )


@register("claims")
def claims_table(sweep: Sweep) -> Table:
    return Table(
        name="claims",
        title="The paper's claims against this sweep",
        caption=(
            f"Ours at {sweep.scale_note()}: each quantitative claim of the paper, "
            "our estimate of it in points (a relative reduction in %) over the "
            "cases both runs answered, and three readings of its 95 % interval: "
            "whether its sign is the paper's, whether it excludes 0, and whether "
            f"the paper's figure lies above, inside or below it. {METHOD} Paper: "
            f"{reported.SOURCE}."
        ),
        header=HEADER,
        rows=[claim_row(sweep, c) for c in CLAIMS],
        align="rp{3.4cm}p{3cm}rrrccc",  # the claim and measure columns wrap
        notes=[
            "No verdict is given here: a claim can keep its sign and miss its size "
            "(the paper's figure outside the interval), or be undecided (an "
            "interval containing 0). The paper reports only the real IFEval; its "
            "figure stands beside the proxy rows for comparison. MTP acceptance "
            "comes from one replay per head (no interval); latency, MTP speed-up "
            "and harness evolution are in their own tables.",
            *skipped_note(sweep),
        ],
    )
