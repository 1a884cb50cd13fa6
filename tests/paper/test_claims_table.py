"""The claims table: each estimate recomputed from the records, and its three
readings recomputed from the printed interval and the paper's figure."""

import dataclasses
import json
import re

import matplotlib.pyplot as plt
import pytest
from refs import common, diff_text, read, row

from paper import figures
from paper.results import Stat, load_sweep
from paper.tables import get, latency
from paper.tables.claims import CLAIMS, HEADER, readings, short_label

OURS = re.compile(r"^([−+]?\d+\.\d) \[([−+]?\d+\.\d), ([−+]?\d+\.\d)\]( \*)?$")


def _num(text: str) -> float:
    return float(text.replace("−", "-"))


@pytest.mark.parametrize(
    ("measure", "a", "b", "suite", "claim"),
    [
        ("T1 success", "hat", "base", "t1", "HAT beats the base"),
        ("T2 success", "sft_hsa", "sft_fixed", "t2", CLAIMS[2].claim),
        (
            "real IFEval, prompt (strict)",
            "sft_fixed",
            "base",
            "ifeval",
            CLAIMS[3].claim,
        ),
        ("IFEval proxy, prompt (strict)", "hat", "sft_hsa_opd", "ifeval_proxy", None),
    ],
)
def test_estimates_are_the_paired_differences_of_the_records(
    sweep_root, tables, measure, a, b, suite, claim
):
    metric = "prompt_level_strict" if suite.startswith("ifeval") else "success"
    ra, rb = common(read(sweep_root, a, suite), read(sweep_root, b, suite), metric)
    want = {"measure": measure} | ({"claim_(paper)": claim} if claim else {})
    if claim is None:  # claim 8 on the proxy: HSA-RL
        want["claim_(paper)"] = "HSA-RL adds IFEval (HAT vs HSA-SFT + OPD)"
    got = row(tables["claims"], **want)
    assert got["ours"] == diff_text(ra, rb)
    assert got["n"] == str(len(ra))


def test_instruction_level_rows_weigh_by_instructions(sweep_root, tables):
    a, b = read(sweep_root, "sft_fixed", "ifeval"), read(sweep_root, "base", "ifeval")
    ra, rb = common(a, b, "instruction_level_strict")
    wa, _ = common(a, b, "n_instructions")
    got = row(tables["claims"], measure="real IFEval, instr. (strict)")
    assert got["ours"] == diff_text(ra, rb, weights=wa) and got["paper"] == "−5.3"


def test_edit_rows_are_the_edit_tables_reductions(tables):
    edit = tables["edit"]
    for claim, run, paper in (
        ("a harness edit cuts HAT's errors", "HAT", "51.7"),
        ("... and naive (fixed-harness) SFT's, by less", "fixed-harness SFT", "18.1"),
    ):
        got = next(
            dict(zip(tables["claims"].header, r))
            for r in tables["claims"].rows
            if r[1] == claim
        )
        assert got["ours"] == row(edit, run=run)["reduction"]
        assert got["paper"] == paper and not got["ours"].startswith("+")


def test_readings_follow_the_printed_interval(tables):
    """Sign, 0 and the paper's figure read off each printed cell, independently
    of the table's code; every reading occurs in the fake sweep."""
    seen = {"sign": set(), "zero": set(), "paper": set()}
    for r in tables["claims"].rows:
        cells = dict(zip(tables["claims"].header, r))
        if cells["#"] == "11":  # acceptance: no replay with the co-trained head here
            continue
        m = OURS.match(cells["ours"])
        assert m, cells["ours"]
        mean, lo, hi = (_num(x) for x in m.group(1, 2, 3))
        sign = -1 if cells["paper"].startswith(("−", "<")) else 1
        same = "yes" if mean * sign > 0 else "no" if mean * sign < 0 else "0"
        assert cells["sign as the paper's"] == same, cells
        if lo not in (0.0,) and hi not in (0.0,):  # printed rounding at 0
            assert cells["interval excludes 0"] == ("yes" if lo > 0 or hi < 0 else "no")
            assert bool(m.group(4)) == (cells["interval excludes 0"] == "yes")
        if cells["paper"] in ("> 0", "< 0"):
            assert cells["paper's figure"] == "–"
        else:
            p = _num(cells["paper"])
            assert cells["paper's figure"] == (
                "above" if p > hi else "below" if p < lo else "inside"
            )
        seen["sign"].add(cells["sign as the paper's"])
        seen["zero"].add(cells["interval excludes 0"])
        seen["paper"].add(cells["paper's figure"])
    assert {"yes", "no"} <= seen["zero"] and len(seen["paper"] - {"–"}) >= 2
    assert r"\begin{tabular}{rp{3.4cm}p{3cm}rrrccc}" in tables["claims"].to_latex()


def test_readings_units_and_edges():
    # a fraction (0.05 = 5 points) against the paper's points
    assert readings(Stat(0.05, 0.01, 0.09, 300), 14.5, +1) == ["yes", "yes", "above"]
    assert readings(Stat(-0.02, -0.05, 0.01, 300), -7.7, -1) == ["yes", "no", "below"]
    assert readings(Stat(0.0, -0.01, 0.01, 75), 0.2, +1) == ["0", "no", "inside"]
    assert readings(Stat(0.1, 0.05, 0.15, 40), -4.6, -1) == ["no", "yes", "below"]
    assert readings(Stat(0.1, 0.05, 0.15, 40), None, +1) == ["yes", "yes", "–"]
    assert readings(Stat(0.1), 9.4, +1) == ["yes", "–", "–"]  # no interval
    assert readings(None, 9.4, +1) == ["–", "–", "–"]


def test_a_claim_whose_runs_are_not_done_says_so(sweep):
    partial = dataclasses.replace(
        sweep, runs=[r for r in sweep.runs if r.name not in ("hat", "sft_fixed_opd")]
    )
    t = get("claims")(partial)
    rows = [dict(zip(t.header, r)) for r in t.rows]
    hat_rows = [
        r for r in rows if r["#"] in ("1", "2", "8") or "HAT's" in r["claim (paper)"]
    ]
    assert hat_rows and all(
        "not done" in r["measure"] and r["ours"] == "–" and r["n"] == "–"
        for r in hat_rows
    )
    assert all("not done" in r["measure"] for r in rows if r["#"] == "5")
    assert all(
        "not done" not in r["measure"] for r in rows if r["#"] in ("3", "4", "7")
    )
    assert "–" not in row(t, measure="T2 success")["ours"]


def test_mtp_acceptance_row_reads_the_hat_runs_replays(make_sweep, tables, tmp_path):
    measure = "MTP acceptance at concurrency 1 (HAT's replay)"
    assert row(tables["claims"], measure=measure)["ours"] == "–"  # co-trained skipped
    root = make_sweep(tmp_path)
    folder = latency.replay_folder(load_sweep(root).pipeline("hsa", True, True))
    done = json.loads((folder / "standalone" / "replay.json").read_text())
    for head, rate in (("co_trained", 0.716), ("base_head", 0.222)):
        runs = [
            {
                **r,
                "summary": {
                    **r["summary"],
                    "mtp_acceptance_rate": rate + r["concurrency"],
                },
            }
            for r in done["runs"]
        ]  # other concurrencies are off by whole units: only c = 1 may be read
        (folder / head).mkdir(exist_ok=True)
        (folder / head / "replay.json").write_text(json.dumps({**done, "runs": runs}))
    got = row(get("claims")(load_sweep(root)), measure=measure)
    assert (got["ours"], got["paper"], got["n"]) == ("+49.4", "+4.5", "–")
    assert [got[h] for h in HEADER[-3:]] == ["yes", "–", "–"]  # one replay: no interval


def test_forest_plot_draws_the_tables_estimates_and_the_papers_figures(sweep, tables):
    fig = figures.claims_forest(sweep)
    want = {}  # tick label -> (ours: mean, lo, hi from the table's cells; paper)
    for r in tables["claims"].rows:
        cells = dict(zip(tables["claims"].header, r))
        if m := OURS.match(cells["ours"]):
            paper = None if cells["paper"] in ("> 0", "< 0") else _num(cells["paper"])
            label = short_label(CLAIMS[tables["claims"].rows.index(r)])
            want[label] = (*(_num(x) for x in m.group(1, 2, 3)), paper)
    got = {}
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        for i, label in enumerate(labels):
            at = [ln for ln in ax.lines if list(ln.get_ydata()) in ([i], [i, i])]
            bar = next(ln for ln in at if len(ln.get_xdata()) == 2)
            dot = next(ln for ln in at if ln.get_marker() == "o")
            diamond = [ln for ln in at if ln.get_marker() == "D"]
            got[label] = (
                dot.get_xdata()[0],
                *bar.get_xdata(),
                diamond[0].get_xdata()[0] if diamond else None,
            )
    assert got.keys() == want.keys() and len(fig.axes) == 2  # points; relative %
    for label, (mean, lo, hi, paper) in want.items():
        g = got[label]
        assert g[:3] == pytest.approx((mean, lo, hi), abs=0.051), label  # printed .1f
        assert g[3] == (None if paper is None else pytest.approx(paper)), label
    plt.close(fig)
    empty = dataclasses.replace(sweep, runs=[])
    assert figures.claims_forest(empty) is None
