"""The paper's premise, checked on a base before any taolive training (issue 56).

The paper's base follows harnesses zero-shot (Qwen3.6-35B-A3B: 80.3 on T1, 75.4
on T2). Its claims are about what SFT does to that ability, so a miniature's
base must hold a version of it before those claims are read. Each check reads
a base's evaluation (``hat eval run --suite t1,t2,apps,ifeval_proxy``'s
``summary.json``) and gives the measured value, its 95 % interval (Wilson for
0/1 scores, from the counts; the summary's bootstrap otherwise) and whether the
point estimate meets the threshold:

- T1 success (taolive_v1) in [25 %, 75 %]: the base reads the target harness,
  with room for SFT to show a gain;
- T2 success >= 20 %, every held-out family >= 10 %, T2 / T1 >= 0.6;
- IFEval proxy prompt-level (strict) >= 20 %;
- held-out generated apps: >= 90 % of tool calls name a valid tool, >= 70 % of
  replies that must carry a sign-off carry it.

Every check also needs n >= ``MIN_N`` cases (300 each; a smaller evaluation is
reported but cannot pass).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from hat_jax.eval.stats import wilson_ci

MIN_N = 300
MIN_FAMILY = 0.10


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    value: float | None  # share (0-1) or ratio
    ci: tuple[float, float] | None
    n: int
    target: str
    passed: bool


def _metric(summary: Mapping, suite: str, metric: str, by=None) -> dict | None:
    s = (summary.get("suites") or {}).get(suite)
    if s is None:
        return None
    if by is not None:
        tag, value = by
        s = ((s.get("by") or {}).get(tag) or {}).get(value)
        if s is None:
            return None
        m = s.get(metric)
    else:
        m = (s.get("metrics") or {}).get(metric)
    return m if isinstance(m, Mapping) and m.get("mean") is not None else None


def _share(m: dict | None, *, binary: bool) -> tuple[float | None, tuple | None, int]:
    if m is None:
        return None, None, 0
    n, mean = int(m["n"]), float(m["mean"])
    if binary:
        return mean, wilson_ci(round(mean * n), n), n
    ci = m.get("ci")
    return mean, (tuple(ci) if ci else None), n


def _check(name, m, *, lo=None, hi=None, binary=True, min_n=MIN_N) -> Check:
    value, ci, n = _share(m, binary=binary)
    target = " and ".join(
        t
        for t in (
            f">= {lo:.0%}" if lo is not None else "",
            f"<= {hi:.0%}" if hi is not None else "",
        )
        if t
    )
    ok = value is not None and n >= min_n
    ok = ok and (lo is None or value >= lo) and (hi is None or value <= hi)
    return Check(name, value, ci, n, target, bool(ok))


def premise_checks(summary: Mapping[str, Any]) -> list[Check]:
    """Every premise check of a base's evaluation summary."""
    t1 = _check("T1 success", _metric(summary, "t1", "success"), lo=0.25, hi=0.75)
    t2 = _check("T2 success", _metric(summary, "t2", "success"), lo=0.20)
    out = [t1, t2]
    fams = ((summary.get("suites") or {}).get("t2") or {}).get("by", {}).get("family")
    for fam in sorted(fams or {}):
        m = _metric(summary, "t2", "success", by=("family", fam))
        out.append(_check(f"T2 {fam}", m, lo=MIN_FAMILY, min_n=MIN_N // 5))
    if not fams:
        out.append(Check("T2 every family", None, None, 0, ">= 10%", False))
    ratio = None
    if t1.value and t2.value is not None:
        ratio = t2.value / t1.value
    out.append(
        Check(
            "T2 / T1",
            ratio,
            None,
            min(t1.n, t2.n),
            ">= 0.6",
            ratio is not None and ratio >= 0.6 and t1.passed and t2.n >= MIN_N,
        )
    )
    ifp = _metric(summary, "ifeval_proxy", "prompt_level_strict")
    out.append(_check("IFEval proxy prompt-level", ifp, lo=0.20))
    valid = _metric(summary, "apps", "valid_tools")
    out.append(_check("apps: calls naming a valid tool", valid, lo=0.90, binary=False))
    sign = _metric(summary, "apps", "sign_off")
    out.append(_check("apps: replies with the sign-off", sign, lo=0.70, min_n=100))
    return out


def _pct(x: float | None, ratio: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.2f}" if ratio else f"{100 * x:.1f}"


def premise_markdown(checks: list[Check]) -> str:
    """The premise table (values in %, T2 / T1 as a ratio)."""
    lines = [
        "| check | value | 95 % CI | n | target | holds |",
        "|---|--:|--:|--:|---|---|",
    ]
    for c in checks:
        ratio = c.name == "T2 / T1"
        ci = f"[{_pct(c.ci[0])}, {_pct(c.ci[1])}]" if c.ci else "-"
        holds = "yes" if c.passed else "**no**"
        lines.append(
            f"| {c.name} | {_pct(c.value, ratio)} | {ci} | {c.n} | {c.target} "
            f"| {holds} |"
        )
    return "\n".join(lines) + "\n"
