"""Paired differences over shared case ids, per-case means, and the " *" mark."""

import numpy as np
import pytest

from hat_jax.eval.stats import wilson_ci
from paper.compare import level, paired
from paper.render import MARK, Table, ci, diff
from paper.render import level as level_cell
from paper.results import Stat
from tests.paper.refs import score_interval


def recs(values, ids, tags=None):
    return [
        {"id": f"c{i}", "tags": dict(tags or {}), "scores": {"success": float(v)}}
        for i, v in zip(ids, values)
    ]


def test_paired_difference_uses_only_the_common_ids():
    a = recs([1, 1, 0, 0], range(0, 4))
    b = recs([1, 1, 1, 1], range(2, 6))
    sa, sb, d = paired(a, b, "success")
    assert (d.mean, d.n) == (-1.0, 2)  # cases c2, c3: 0 - 1
    assert (sa.mean, sb.mean) == (0.0, 1.0)  # each run over the shared cases
    unpaired = np.mean([1, 1, 0, 0]) - np.mean([1, 1, 1, 1])
    assert d.mean != unpaired == -0.5
    assert paired(a, recs([1], [9]), "success") is None  # nothing shared


def test_paired_interval_of_binary_scores_is_the_score_interval():
    """0/1 scores: the score interval over the pairs (by id) where a and b differ
    (refs.score_interval: scipy's numerical inversion); graded scores: the
    paired bootstrap, brute force."""
    rng = np.random.default_rng(3)
    va, vb = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    a = recs(va, range(50))
    b = recs(vb[::-1], range(49, 9, -1))[::-1]  # ids 10..49, another order
    _, _, d = paired(a, b, "success")
    xa, xb = va[10:].astype(float), vb[10:].astype(float)  # in a's order
    want = score_interval(int((xa > xb).sum()), int((xb > xa).sum()), 40)
    assert d.n == 40 and d.mean == pytest.approx(xa.mean() - xb.mean())
    assert (d.lo, d.hi) == pytest.approx(want, abs=1e-9)
    ga, gb = va / 2 + 0.25, vb / 2  # graded: 0.25, 0.75 / 0, 0.5
    _, _, g = paired(recs(ga, range(50)), recs(gb, range(50)), "success")
    idx = np.random.default_rng(0).integers(0, 50, size=(1000, 50))
    want = np.percentile(ga[idx].mean(1) - gb[idx].mean(1), [2.5, 97.5])
    assert (g.lo, g.hi) == pytest.approx(tuple(want), abs=1e-12)


def test_nan_scores_are_left_out_of_levels_and_pairs():
    """A NaN score (a judge without a valid vote) is no case: neither in a
    run's mean nor in a pair, never a NaN mean or a biased interval."""
    nan = float("nan")
    a = recs([1, nan, 0, 1, 1], range(5))
    b = recs([0, 1, nan, 1, 0], range(5))
    s = level(a, "success")
    assert (s.n, s.mean) == (4, 0.75) and (s.lo, s.hi) == wilson_ci(3, 4)
    sa, sb, d = paired(a, b, "success")  # pairs c0, c3, c4
    assert d.n == 3 and (sa.mean, sb.mean) == (1.0, 1 / 3)
    assert d.mean == pytest.approx(2 / 3) and (d.lo, d.hi) == pytest.approx(
        score_interval(2, 0, 3), abs=1e-9
    )


def test_level_of_a_subset_and_of_graded_scores():
    r = recs([1, 0, 1, 1], range(4), {"family": "f"}) + recs([0, 0], [7, 8])
    s = level(r, "success", {"family": "f"})
    assert (s.mean, s.n) == (0.75, 4)
    assert (s.lo, s.hi) == pytest.approx(wilson_ci(3, 4))
    assert level(r, "accuracy") is None  # no record holds it
    g = [{"id": "x", "tags": {}, "scores": {"effectiveness": v}} for v in (0.5, 1)]
    s = level(g, "effectiveness")  # not 0/1: the bootstrap
    assert s.mean == 0.75 and (s.lo, s.hi) == (0.5, 1.0)


def test_a_difference_is_marked_when_its_interval_excludes_zero():
    assert diff(Stat(0.1, 0.02, 0.2, 40)).endswith(f" {MARK}")
    assert diff(Stat(-0.1, -0.2, -0.01, 40)).endswith(f" {MARK}")
    assert not diff(Stat(0.1, -0.01, 0.2, 40)).endswith(MARK)
    assert not diff(Stat(0.25, 0.0, 0.5, 20)).endswith(MARK)  # touches 0
    assert diff(Stat(0.02)) == "+2.0"  # no interval: no claim either way
    assert ci(Stat(0.5, 0.1, 0.8), mark=True) == "50.0 [10.0, 80.0] *"
    assert ci(Stat(0.5, 0.1, 0.8)) == "50.0 [10.0, 80.0]"
    assert level_cell(Stat(0.5, 0.1, 0.8, 36), 40) == "50.0 [10.0, 80.0] (n=36)"
    md = Table("t", "T", "c", ["a", "b"], [["x", diff(Stat(0.1, 0.02, 0.2))]])
    assert r"[+2.0, +20.0] \*" in md.to_markdown()  # not read as emphasis
    assert "[+2.0, +20.0] *" in md.to_latex()
