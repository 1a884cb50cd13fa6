"""Reference recomputations for the table tests, from the fixture's records.

Wilson intervals from scipy; a difference of 0/1 scores by inverting Tango's
score test with scipy (the nuisance maximised numerically, the ends found by
root search); other intervals from the documented bootstrap recipe (1,000 index
rows from seed 0, percentiles 2.5 / 97.5); pairs by case id.
"""

import json
import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import binomtest, norm

from tests.paper.conftest import RUNS

LABELS = {name: spec[0] for name, spec in RUNS.items()}
PR = {"kind": "prompt_robustness"}
OPD_FIXED = "OPD after fixed-harness SFT (fixed + OPD − fixed)"


def read(root, run, suite):
    path = root / run / "eval" / suite / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def boot(stat, *arrays):
    """The documented percentile bootstrap: 1,000 index rows from seed 0."""
    xs = [np.asarray(a, float) for a in arrays]
    n = len(xs[0])
    idx = np.random.default_rng(0).integers(0, n, size=(1000, n))
    lo, hi = np.percentile(stat(*(x[idx] for x in xs)), [2.5, 97.5])
    return lo, hi


def interval(m, lo, hi):
    return f"{100 * m:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]".replace("-", "−")


def level_text(values, weights=None):
    """Wilson (scipy) for 0/1 scores, else the bootstrap of the (weighted) mean."""
    x = np.asarray(values, float)
    if weights is None and np.isin(x, (0, 1)).all():
        ref = binomtest(int(x.sum()), len(x)).proportion_ci(0.95, method="wilson")
        return interval(x.mean(), ref.low, ref.high)
    w = np.ones_like(x) if weights is None else np.asarray(weights, float)
    lo, hi = boot(lambda a, b: (a * b).sum(-1) / b.sum(-1), x, w)
    return interval((x * w).sum() / w.sum(), lo, hi)


def signed(x):
    return f"{100 * x:+.1f}".replace("-", "−")


def score_interval(gain, loss, n):
    """The 95 % paired score interval of ``(gain - loss) / n``: every d whose
    score statistic, with the chance of a loss at its constrained maximum
    likelihood (found numerically), lies within the normal quantile."""
    z, same = norm.ppf(0.975), n - gain - loss

    def stat(d):
        def nll(q):
            cells = ((gain, q + d), (loss, q), (same, 1 - 2 * q - d))
            return -sum(k * math.log(max(p, 1e-300)) for k, p in cells if k)

        q = minimize_scalar(
            nll, bounds=(max(0.0, -d), (1 - d) / 2), method="bounded",
            options={"xatol": 1e-13},
        ).x  # fmt: skip
        return (gain - loss - n * d) / math.sqrt(n * (2 * q + d * (1 - d)))

    eps = 1e-12
    est = min(max((gain - loss) / n, -1 + eps), 1 - eps)
    lo = -1.0 if stat(-1 + eps) <= z else brentq(lambda d: stat(d) - z, -1 + eps, est)
    hi = 1.0 if stat(1 - eps) >= -z else brentq(lambda d: stat(d) + z, est, 1 - eps)
    return lo, hi


def diff_text(a, b, weights=None):
    """a − b: the score interval of 0/1 scores (equal weights), else the
    paired bootstrap."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    w = np.ones_like(a) if weights is None else np.asarray(weights, float)

    def d(xa, xb, ww):
        return (xa * ww).sum(-1) / ww.sum(-1) - (xb * ww).sum(-1) / ww.sum(-1)

    if np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all() and (w == w[0]).all():
        lo, hi = score_interval(int((a > b).sum()), int((b > a).sum()), len(a))
    else:
        lo, hi = boot(d, a, b, w)
    mark = " *" if lo > 0 or hi < 0 else ""
    return f"{signed(d(a, b, w))} [{signed(lo)}, {signed(hi)}]{mark}"


def pick(recs, **tags):
    return [r for r in recs if all(r["tags"].get(k) == v for k, v in tags.items())]


def scores(recs, metric, **tags):
    return [r["scores"][metric] for r in pick(recs, **tags)]


def common(ra, rb, metric, **tags):
    """Values of ``metric`` of a and b over the ids both hold, in a's order."""
    by_id = {r["id"]: r["scores"][metric] for r in rb}
    sel = [r for r in pick(ra, **tags) if r["id"] in by_id]
    return [r["scores"][metric] for r in sel], [by_id[r["id"]] for r in sel]


def row(table, **want):
    """The one row whose cells under the given headers (spaces as _) match."""
    found = []
    for r in table.rows:
        if r is None:
            continue
        cells = dict(zip(table.header, r))
        if all(cells[k.replace("_", " ")] == v for k, v in want.items()):
            found.append(cells)
    assert len(found) == 1, (want, len(found))
    return found[0]
