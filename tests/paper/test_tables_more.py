"""The IFEval, ablation and edit tables against a direct recomputation
(tests/paper/refs.py), and runs whose records lack ``success``."""

import numpy as np
import pytest

from paper.results import load_sweep
from paper.tables import TABLES, get
from tests.paper.conftest import OLD, RUNS, N
from tests.paper.refs import (
    LABELS,
    OPD_FIXED,
    boot,
    diff_text,
    interval,
    level_text,
    read,
    row,
    scores,
)


@pytest.mark.parametrize("suite", ["ifeval_proxy", "ifeval"])
def test_ifeval_table_blocks(sweep_root, tables, suite):
    t = tables["ifeval"]
    block = {
        "ifeval_proxy": "IFEval proxy (in-world)",
        "ifeval": "real IFEval (541 prompts)",
    }
    title = block[suite]
    base, fixed = read(sweep_root, "base", suite), read(sweep_root, "sft_fixed", suite)
    fixed_opd = read(sweep_root, "sft_fixed_opd", suite)
    got = row(t, **{"suite": title, "run / comparison": "fixed-harness SFT"})
    assert got["n"] == str(N)
    assert got["prompt"] == level_text(scores(fixed, "prompt_level_strict"))
    assert got["Δ prompt"] == diff_text(
        scores(fixed, "prompt_level_strict"), scores(base, "prompt_level_strict")
    )
    w = scores(fixed, "n_instructions")
    assert got["instr."] == level_text(scores(fixed, "instruction_level_strict"), w)
    assert got["Δ instr."] == diff_text(
        scores(fixed, "instruction_level_strict"),
        scores(base, "instruction_level_strict"),
        w,
    )
    assert (got["paper Δ prompt"], got["paper Δ instr."]) == ("−7.7", "−5.3")
    opd = row(t, **{"suite": title, "run / comparison": OPD_FIXED})
    assert opd["Δ prompt"] == diff_text(
        scores(fixed_opd, "prompt_level_strict"), scores(fixed, "prompt_level_strict")
    )
    assert opd["paper Δ prompt"] == "+8.5" and opd["n"] == str(N)
    assert row(t, **{"suite": title, "run / comparison": "base"})["Δ prompt"] == "–"
    assert (
        row(t, **{"suite": title, "run / comparison": "HAT"})["paper Δ prompt"]
        == "+2.0"
    )


def test_ablation_table(sweep_root, tables):
    t = tables["ablation"]
    ref, tools = read(sweep_root, "sft_hsa", "t2"), read(sweep_root, "abl_tools", "t2")
    got = row(t, suite="T2", left_out="tool schemas")
    assert got["success"] == level_text(scores(tools, "success"))
    assert got["Δ success"] == diff_text(
        scores(tools, "success"), scores(ref, "success")
    )
    assert got["Δ accuracy"] == diff_text(
        scores(tools, "accuracy"), scores(ref, "accuracy")
    )
    full = row(t, suite="T2", left_out="none (HSA-SFT)")
    assert full["accuracy"] == level_text(scores(ref, "accuracy"))
    for label in ("system-prompt structure", "skill identifiers", "skill content"):
        got = row(t, suite="T1", left_out=f"{label} (not done)")
        assert got["Δ success"] == got["n"] == "–"


def test_old_records_without_success_show_dashes(sweep_root, tables):
    (old,) = OLD
    hooks = row(tables["ablation"], suite="T2", left_out="hook behaviour")
    assert hooks["success"] == hooks["Δ success"] == "–"
    recs = read(sweep_root, old, "t2")
    assert hooks["accuracy"] == level_text(scores(recs, "accuracy"))
    assert row(tables["edit"], run=LABELS[old])["error ="] == "1 − accuracy"


def test_an_all_old_sweep_renders(make_sweep, tmp_path):
    sweep = load_sweep(make_sweep(tmp_path, old=set(RUNS)))
    main = get("main")(sweep)
    done = [r for r in main.rows if r and r[2] != "–"]
    assert done and {r[3] for r in done} == {"–"}  # success
    assert "–" not in {r[4] for r in done}  # accuracy
    assert {r[6] for r in get("paired")(sweep).rows if r} == {"–"}
    edit = get("edit")(sweep)
    assert {r[1] for r in edit.rows} == {"1 − accuracy"}
    for name in TABLES:
        assert get(name)(sweep).to_latex()


def test_edit_table_error_reduction(sweep_root, tables):
    t = tables["edit"]
    for name, measure in (("hat", "success"), (next(iter(OLD)), "accuracy")):
        recs = read(sweep_root, name, "edit")
        before = [
            1 - r["scores"][measure] for r in recs if r["tags"]["edit"] == "before"
        ]
        after = [1 - r["scores"][measure] for r in recs if r["tags"]["edit"] == "after"]
        b, a = np.array(before), np.array(after)
        value = (b.mean() - a.mean()) / b.mean()
        lo, hi = boot(lambda x, y: (x.mean(-1) - y.mean(-1)) / x.mean(-1), b, a)
        got = row(t, run=LABELS[name])
        mark = " *" if lo > 0 or hi < 0 else ""
        assert got["reduction"] == interval(value, lo, hi) + mark
        assert got["error before"] == level_text(b)
        assert got["error after"] == level_text(a)
        assert got["error ="] == f"1 − {measure}" and got["n questions"] == str(N)
    assert row(t, run="HAT")["paper"] == "51.7"
    assert row(t, run="fixed-harness SFT")["paper"] == "18.1"
    assert row(t, run="HSA-SFT + OPD")["paper"] == "–"
    assert "-" not in row(t, run="base")["reduction"]  # − signs
    assert any(r[5].endswith(" *") for r in t.rows)  # a decided reduction
