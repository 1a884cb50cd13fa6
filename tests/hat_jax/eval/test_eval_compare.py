"""`hat eval compare` (hat_jax/eval/compare.py) and the paired differences it and
the paper's tables share (hat_jax.eval.stats.paired_difference: Tango's score
interval for 0/1 scores, tested in test_stats.py; else a paired bootstrap)."""

import numpy as np
import pytest

from hat_jax.cli.main import main as hat
from hat_jax.eval.browse import open_run
from hat_jax.eval.compare import compare_metric
from hat_jax.eval.stats import paired_difference, tango_ci
from tests.hat_jax.eval.browse_records import case_record, success_run, write_suite


def compare(capsys, *argv):
    rc = hat(["eval", "compare", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def brute_force(xa, xb, w=None):
    """B - A and its interval, written out: 1,000 paired resamples, seed 0."""
    w = np.ones_like(xa) if w is None else w
    idx = np.random.default_rng(0).integers(0, len(xa), size=(1000, len(xa)))

    def mean(x, ww):
        return (x * ww).sum(-1) / ww.sum(-1)

    diffs = mean(xb[idx], w[idx]) - mean(xa[idx], w[idx])
    return mean(xb, w) - mean(xa, w), np.percentile(diffs, [2.5, 97.5])


def test_paired_difference_is_a_brute_force_paired_bootstrap():
    """Scores other than 0/1 (e.g. effectiveness) get the paired bootstrap."""
    rng = np.random.default_rng(5)
    xa, xb = rng.integers(0, 3, 37) / 2, rng.integers(0, 3, 37) / 2
    d = paired_difference(xa, xb)
    assert d["method"] == "bootstrap"
    want, (lo, hi) = brute_force(xa, xb)
    assert d["n"] == 37 and d["diff"] == pytest.approx(xb.mean() - xa.mean())
    assert d["diff"] == pytest.approx(want)
    assert d["ci"] == pytest.approx([lo, hi], abs=1e-12)
    assert d["ci"][0] <= d["diff"] <= d["ci"][1]
    w = rng.integers(1, 5, 37).astype(float)
    want, ci = brute_force(xa, xb, w)
    dw = paired_difference(xa, xb, w)
    assert dw["diff"] == pytest.approx(want) and dw["ci"] == pytest.approx(list(ci))
    assert paired_difference([], [])["diff"] is None
    with pytest.raises(ValueError, match="unpaired"):
        paired_difference([1.0], [1.0, 0.0])


def test_the_difference_is_over_the_shared_cases(tmp_path, capsys):
    rng = np.random.default_rng(7)
    va, vb = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
    fam = {"family": lambda i: {"family": "xy"[i % 2]}}
    a = success_run(tmp_path / "a", va[:50], ids=range(50), tags=fam["family"])
    b_ids = list(range(59, 9, -1))  # 10..59, another order
    b = success_run(tmp_path / "b", vb[b_ids], ids=b_ids, tags=fam["family"])
    ra, rb = open_run(a).records("t2"), open_run(b).records("t2")
    d = compare_metric(ra, rb, "success")
    xa, xb = va[10:50].astype(float), vb[10:50].astype(float)  # in A's order
    want, _ = brute_force(xa, xb)
    assert d["n"] == 40 and d["diff"] == pytest.approx(want)
    assert (d["a"], d["b"]) == pytest.approx((xa.mean(), xb.mean()))
    gain, loss = int(((xb == 1) & (xa == 0)).sum()), int(((xa == 1) & (xb == 0)).sum())
    assert (d["method"], d["gain"], d["loss"]) == ("tango", gain, loss)
    assert d["ci"] == pytest.approx(list(tango_ci(gain, loss, 40)), abs=1e-12)
    odd = np.arange(10, 50) % 2 == 1  # family y
    dy = compare_metric(ra, rb, "success", {"family": "y"})
    assert dy["n"] == 20 and dy["diff"] == pytest.approx(
        brute_force(xa[odd], xb[odd])[0]
    )

    rc, out, err = compare(capsys, a, b)
    assert rc == 0
    assert (
        "warning: t2: the case sets differ: A has 50, B has 50, 40 shared "
        "(10 only in A, 10 only in B)" in out
    )
    rows = {tuple(ln.split()[:4]): ln.split() for ln in out.splitlines()}
    for group, dd in (("all", d), ("family=y", dy)):
        row = rows[("t2", group, "success", str(dd["n"]))]
        assert row[4:7] == [f"{100 * dd['a']:.1f}", f"{100 * dd['b']:.1f}",
                            f"{100 * dd['diff']:+.1f}"]  # fmt: skip
        assert " ".join(row[7:9]) == (
            f"[{100 * dd['ci'][0]:+.1f}, {100 * dd['ci'][1]:+.1f}]"
        )
    assert ("t2", "family=x", "success", "20") in rows
    rc, _, err = compare(capsys, a, b, "--strict")
    assert rc == 1 and "the case sets differ" in err and "40 shared" in err


def test_identical_runs_differ_by_zero(tmp_path, capsys):
    run = success_run(tmp_path / "a", [1, 0, 1, 1, 0, 0, 1])
    rc, out, _ = compare(capsys, run, run, "--strict")
    row = next(ln for ln in out.splitlines() if ln.startswith("t2 "))
    assert rc == 0 and row.split()[1:] == [
        "all", "success", "7", "57.1", "57.1", "+0.0", "[-35.4,", "+35.4]"
    ]  # fmt: skip  # no disagreement in 7 cases: +-z^2 / (7 + z^2)
    assert "warning" not in out and "*" not in row


def test_no_shared_case_and_other_inputs(tmp_path, capsys):
    a = success_run(tmp_path / "a", [1, 1], ids=[0, 1])
    b = success_run(tmp_path / "b", [0, 0], ids=[2, 3])
    rc, out, err = compare(capsys, a, b)
    assert rc == 1 and "A has 2, B has 2, 0 shared" in out + err
    assert "share no scored case" in err
    c = tmp_path / "c"
    recs = [case_record("t2", "c000", {"success": 1.0}), case_record("t2", "c001", {})]
    recs[0]["input"] = {"message": "another case"}
    write_suite(c, "t2", recs)
    rc, out, _ = compare(capsys, success_run(tmp_path / "d", [0, 1]), c)
    assert rc == 0 and "1 of the 2 shared case ids have a different input" in out
    assert compare(capsys, a, c, "--suite", "t1")[2].startswith("hat eval: error: ")


def test_weighted_metrics_and_suites_only_in_one_run(tmp_path, capsys):
    def ifeval(out, values, weights):
        recs = [
            case_record("ifeval", f"p{i}", {"prompt_level_strict": float(v > 0.9),
                        "instruction_level_strict": v, "n_instructions": n})
            for i, (v, n) in enumerate(zip(values, weights))
        ]  # fmt: skip
        write_suite(out, "ifeval", recs)
        return out

    w = np.array([1.0, 3.0, 2.0, 1.0])
    va, vb = np.array([1.0, 1 / 3, 0.5, 0.0]), np.array([1.0, 1.0, 0.0, 1.0])
    a = ifeval(tmp_path / "a", va, w)
    b = ifeval(tmp_path / "b", vb, w)
    success_run(b, [1, 0])
    ra, rb = open_run(a).records("ifeval"), open_run(b).records("ifeval")
    d = compare_metric(ra, rb, "instruction_level_strict")
    want = (vb * w).sum() / w.sum() - (va * w).sum() / w.sum()
    assert d["diff"] == pytest.approx(want)
    rc, out, _ = compare(capsys, a, b, "--metric", "all")
    assert rc == 0 and "note: t2 is only in B; skipped" in out
    metrics = [ln.split()[2] for ln in out.splitlines() if ln.startswith("ifeval")]
    assert metrics == ["prompt_level_strict", "instruction_level_strict"]
    _, out, _ = compare(capsys, a, b, "--metric", "nope")
    assert "note: ifeval has no score 'nope'" in out
