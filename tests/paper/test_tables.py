"""Each table's numbers against a direct recomputation (tests/paper/refs.py):
main results, paired differences, marks, determinism."""

import re

import numpy as np
import pytest

from paper.results import load_sweep
from paper.tables import TABLES, get
from tests.paper.conftest import FAMILIES, FIXED_T2, N
from tests.paper.refs import (
    LABELS,
    PR,
    common,
    diff_text,
    level_text,
    pick,
    read,
    row,
    scores,
)


def test_registry_has_every_table():
    names = {"main", "ifeval", "ablation", "edit", "latency", "paired", "steps"}
    assert set(TABLES) == names | {"evolution", "claims"}


@pytest.mark.parametrize("name", ["base", "sft_fixed", "sft_hsa_opd"])
def test_main_table_matches_records(sweep_root, tables, name):
    t = tables["main"]
    assert t.header[:6] == ["suite", "run", "n", "success", "accuracy", "effectiveness"]
    for title, suite, tags in (
        ("T1", "t1", {}),
        ("T2", "t2", {}),
        ("T3", "t3", {}),
        ("T3 PR", "t3", PR),
    ):
        recs = pick(read(sweep_root, name, suite), **tags)
        got = row(t, suite=title, run=LABELS[name])
        assert got["n"] == str(len(recs))
        for m in ("success", "accuracy", "effectiveness"):
            assert got[m] == level_text(scores(recs, m)), (title, m)


def test_main_table_cases_missing_suites_and_paper(tables):
    t = tables["main"]
    assert row(t, suite="T2", run="fixed-harness SFT")["n"] == str(FIXED_T2)
    hat = row(t, suite="T3", run="HAT")
    assert hat["n"] == hat["success"] == hat["accuracy"] == "–"  # no T3 suite
    assert row(t, suite="T1", run="base")["paper"] == "80.3"
    assert row(t, suite="T2", run="HAT")["paper"] == "94.6"
    assert (
        row(t, suite="T1", run="paper: strongest general LLM (GLM-5.2)")["paper"]
        == "93.0"
    )
    assert row(t, suite="T3 PR", run="HAT")["paper"] == "–"
    assert "tiny scale: 2-layer qwen3 model (hidden 64), CPU" in t.caption
    assert "Wilson" in t.caption and "PAPER.md" in t.caption


def test_paired_table_hsa_vs_fixed_overall_and_per_family(sweep_root, tables):
    t = tables["paired"]
    hsa, fixed = read(sweep_root, "sft_hsa", "t2"), read(sweep_root, "sft_fixed", "t2")
    label = "HSA-SFT − fixed-harness SFT"
    for cases, tags in [("all", {})] + [
        (f"family {f}", {"family": f}) for f in FAMILIES
    ]:
        a, b = common(hsa, fixed, "success", **tags)
        got = row(t, comparison=label, cases=cases)
        assert got["n"] == str(len(a))
        assert got["first run"] == level_text(a)
        assert got["second run"] == level_text(b)
        assert got["difference"] == diff_text(a, b)
    a, b = common(hsa, fixed, "success")
    assert len(a) == FIXED_T2 < N  # only the cases fixed-harness SFT answered
    unpaired = np.mean(scores(hsa, "success")) - np.mean(scores(fixed, "success"))
    assert np.mean(a) - np.mean(b) != pytest.approx(unpaired)


def test_paired_table_rl_base_and_paper(sweep_root, tables):
    t = tables["paired"]
    rl = "HSA-RL: HAT − (HSA-SFT + OPD)"
    for suite in ("t1", "t2"):
        a, b = common(
            read(sweep_root, "hat", suite),
            read(sweep_root, "sft_hsa_opd", suite),
            "success",
        )
        assert row(t, comparison=rl, suite=suite.upper())["difference"] == diff_text(
            a, b
        )
    assert row(t, comparison=rl, suite="T3")["difference"] == "–"  # HAT has no T3
    assert row(t, comparison="HAT − base", suite="T1")["paper"] == "+14.5"
    assert row(t, comparison="HAT − base", suite="T2")["paper"] == "+19.2"
    pr = row(t, comparison="fixed-harness SFT − base", suite="T3 PR")
    a, b = common(
        read(sweep_root, "sft_fixed", "t3"),
        read(sweep_root, "base", "t3"),
        "success",
        **PR,
    )
    assert pr["difference"] == diff_text(a, b) and pr["paper"] == "−4.6"


CELL = re.compile(r"^([−+]\d+\.\d) \[([−+]\d+\.\d), ([−+]\d+\.\d)\]( \*)?$")


def test_marks_follow_the_intervals(tables):
    """A difference is marked iff its printed interval leaves out 0, and each
    decision table holds both kinds."""
    seen = {}
    for name in ("paired", "ifeval", "ablation"):
        marks = []
        for r in tables[name].rows:
            for cell in r or []:
                if m := CELL.match(cell):
                    lo, hi = (float(x.replace("−", "-")) for x in m.group(2, 3))
                    marks.append(bool(m.group(4)))
                    assert marks[-1] == (lo > 0 or hi < 0) or 0.0 in (lo, hi), cell
        seen[name] = set(marks)
    assert seen == {n: {True, False} for n in seen}


def test_same_records_give_the_same_tables(make_sweep, tables, tmp_path):
    again = load_sweep(make_sweep(tmp_path))
    for name, t in tables.items():
        u = get(name)(again)
        assert (u.to_markdown(), u.to_latex()) == (t.to_markdown(), t.to_latex())


def test_skipped_runs_are_named(sweep, tables):
    assert [r.name for r in sweep.runs if r.name.startswith("abl")] == [
        "abl_tools",
        "abl_hooks",
    ]
    assert dict(sweep.skipped) == {
        "abl_prompt": "status running",
        "abl_skill_ids": "no run.json",
    }
    for t in tables.values():
        assert any("abl_prompt (status running)" in n for n in t.notes)
