"""Each table's numbers against a direct recomputation from the fixture's records."""

import json

import numpy as np
import pytest

from paper.results import load_sweep
from paper.tables import TABLES, get


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


def pm_text(values, weights=None):
    x = np.asarray(values, float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, float)
    lo, hi = boot(lambda a, b: (a * b).sum(-1) / b.sum(-1), x, w)
    return f"{100 * (x * w).sum() / w.sum():.1f} ± {100 * (hi - lo) / 2:.1f}"


def signed(x):
    return f"{100 * x:+.1f}".replace("-", "−")


def diff_text(a, b, weights=None):
    a, b = np.asarray(a, float), np.asarray(b, float)
    w = np.ones_like(a) if weights is None else np.asarray(weights, float)

    def d(xa, xb, ww):
        return (xa * ww).sum(-1) / ww.sum(-1) - (xb * ww).sum(-1) / ww.sum(-1)

    lo, hi = boot(d, a, b, w)
    return f"{signed(d(a, b, w))} [{signed(lo)}, {signed(hi)}]"


def scores(recs, metric, **tags):
    return [
        r["scores"][metric]
        for r in recs
        if all(r["tags"].get(k) == v for k, v in tags.items())
    ]


@pytest.fixture(scope="module")
def sweep(sweep_root):
    return load_sweep(sweep_root)


@pytest.fixture(scope="module")
def tables(sweep):
    return {name: get(name)(sweep) for name in TABLES}


def by_label(table, start):
    rows = [r for r in table.rows if r is not None and r[0].startswith(start)]
    assert len(rows) == 1, (start, [r[0] for r in table.rows if r])
    return dict(zip(table.header, rows[0]))


def test_registry_has_every_table():
    assert set(TABLES) == {"main", "ifeval", "ablation", "edit", "latency"}


def test_main_table_matches_records(sweep_root, tables):
    t = tables["main"]
    for run, label in (("base", "base"), ("sft_fixed", "fixed-harness SFT")):
        row = by_label(t, label)
        assert row["T1 acc."] == pm_text(
            scores(read(sweep_root, run, "t1"), "accuracy")
        )
        t1 = read(sweep_root, run, "t1")
        assert row["T1 eff."] == pm_text(scores(t1, "effectiveness"))
        assert row["T2 acc."] == pm_text(
            scores(read(sweep_root, run, "t2"), "accuracy")
        )
        t3 = read(sweep_root, run, "t3")
        pr = scores(t3, "accuracy", kind="prompt_robustness")
        assert row["T3 PR acc."] == pm_text(pr)
        ife = read(sweep_root, run, "ifeval")
        assert row["IFEval P-strict"] == pm_text(scores(ife, "prompt_level_strict"))
        w = scores(ife, "n_instructions")
        got = pm_text(scores(ife, "instruction_level_strict"), w)
        assert row["IFEval I-strict"] == got
    hat = by_label(t, "HAT")
    assert hat["T3 acc."] == hat["T3 PR acc."] == "–"  # no T3 suite
    assert by_label(t, "n (cases)")["T1 acc."] == "40"
    paper = by_label(t, "paper: HAT 35B")
    assert (paper["T1 acc."], paper["T2 acc."], paper["T1 eff."]) == (
        "94.8",
        "94.6",
        "–",
    )
    assert by_label(t, "paper: base")["IFEval I-strict"] == "87.7"
    drop = by_label(t, "paper: fixed-harness SFT − base")
    assert (drop["T3 PR acc."], drop["IFEval P-strict"], drop["T1 acc."]) == (
        "−4.6",
        "−7.7",
        "–",
    )
    assert r"\begin{table*}" in t.to_latex()  # 10 columns: full width
    assert "tiny scale: 2-layer qwen3 model (hidden 64), CPU" in t.caption
    assert "PAPER.md" in t.caption


def test_ifeval_table_deltas(sweep_root, tables):
    t = tables["ifeval"]
    base = read(sweep_root, "base", "ifeval")
    fixed = read(sweep_root, "sft_fixed", "ifeval")
    row = by_label(t, "fixed-harness SFT")
    assert row["Δ prompt"] == diff_text(
        scores(fixed, "prompt_level_strict"), scores(base, "prompt_level_strict")
    )
    w = scores(fixed, "n_instructions")
    assert row["Δ instr."] == diff_text(
        scores(fixed, "instruction_level_strict"),
        scores(base, "instruction_level_strict"),
        w,
    )
    assert (row["paper Δ prompt"], row["paper Δ instr."]) == ("−7.7", "−5.3")
    opd = by_label(t, "OPD after fixed")
    fixed_opd = read(sweep_root, "sft_fixed_opd", "ifeval")
    assert opd["Δ prompt"] == diff_text(
        scores(fixed_opd, "prompt_level_strict"), scores(fixed, "prompt_level_strict")
    )
    assert opd["paper Δ prompt"] == "+8.5"
    assert by_label(t, "OPD after HSA")["paper Δ prompt"] == "+0.2"
    assert by_label(t, "HAT")["paper Δ prompt"] == "+2.0"
    assert by_label(t, "base")["Δ prompt"] == "–"


def test_ablation_table_paired_differences(sweep_root, tables):
    t = tables["ablation"]
    ref = read(sweep_root, "sft_hsa", "t2")
    tools = read(sweep_root, "abl_tools", "t2")
    row = by_label(t, "tool schemas")
    assert row["Δ T2 [95 % CI]"] == diff_text(
        scores(tools, "accuracy"), scores(ref, "accuracy")
    )
    assert row["T2 acc."] == pm_text(scores(tools, "accuracy"))
    t1 = diff_text(
        scores(read(sweep_root, "abl_hooks", "t1"), "accuracy"),
        scores(read(sweep_root, "sft_hsa", "t1"), "accuracy"),
    )
    assert by_label(t, "hook behaviour")["Δ T1 [95 % CI]"] == t1
    full = by_label(t, "none (HSA-SFT)")
    assert full["T2 acc."] == pm_text(scores(ref, "accuracy"))
    # the running run and the never-started one are rows "not done"
    for label in ("system-prompt structure", "skill identifiers", "skill content"):
        row = by_label(t, label)
        assert row["left out"].endswith("(not done)")
        assert row["Δ T2 [95 % CI]"] == "–"


def test_edit_table_error_reduction(sweep_root, tables):
    t = tables["edit"]
    recs = read(sweep_root, "hat", "edit")
    before = np.array(
        [1 - r["scores"]["accuracy"] for r in recs if r["tags"]["edit"] == "before"]
    )
    after = np.array(
        [1 - r["scores"]["accuracy"] for r in recs if r["tags"]["edit"] == "after"]
    )
    value = (before.mean() - after.mean()) / before.mean()

    def red(b, a):
        return (b.mean(-1) - a.mean(-1)) / b.mean(-1)

    lo, hi = boot(red, before, after)
    row = by_label(t, "HAT")
    assert row["reduction [95 % CI]"] == (
        f"{100 * value:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    )
    assert row["error before"] == pm_text(before)
    assert row["n questions"] == "40"
    assert row["paper"] == "51.7"
    assert by_label(t, "fixed-harness SFT")["paper"] == "18.1"
    assert by_label(t, "HSA-SFT + OPD")["paper"] == "–"
    assert "-" not in by_label(t, "base")["reduction [95 % CI]"]  # − signs


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
