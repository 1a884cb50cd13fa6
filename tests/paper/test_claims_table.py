"""The claims table: every row recomputed from the fake sweep's records (runs,
direction, suite, subset) with the paper's figure written out literally from
PAPER.md, and its readings recomputed from the printed cells."""

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from hat_jax.eval.stats import error_reduction
from hat_jax.jsonl import DataError
from paper import figures
from paper.results import Stat, load_sweep
from paper.tables import acceptance, get, latency
from paper.tables.claims import HEADER, readings
from paper.tables.claims_data import CLAIMS
from tests.paper.refs import boot, common, diff_text, interval, read, row, signed

OURS = re.compile(r"^([−+]?\d+\.\d) \[([−+]?\d+\.\d), ([−+]?\d+\.\d)\]( \*)?$")
P, INS = "prompt_level_strict", "instruction_level_strict"
FX, FXO, HS, HSO = "sft_fixed", "sft_fixed_opd", "sft_hsa", "sft_hsa_opd"
IF, PX = "ifeval", "ifeval_proxy"
REAL, PROXY = "real IFEval", "IFEval proxy"
# (#, measure, run a, run b, suite, metric, tags, the paper's figure as PAPER.md
# states it, the sign it claims): every two-run row of the table, in order
TWO_RUN = [
    ("1", "T1 success", "hat", "base", "t1", "success", {}, "+14.5", 1),  # 94.8-80.3
    ("2", "T2 success", "hat", "base", "t2", "success", {}, "+19.2", 1),  # 94.6-75.4
    ("3", "T2 success", HS, FX, "t2", "success", {}, "–", 1),
    ("4", f"{REAL}, prompt", FX, "base", IF, P, {}, "−7.7", -1),
    ("4", f"{REAL}, instr.", FX, "base", IF, INS, {}, "−5.3", -1),
    ("4", f"{PROXY}, prompt", FX, "base", PX, P, {}, "−7.7", -1),
    ("4", f"{PROXY}, instr.", FX, "base", PX, INS, {}, "−5.3", -1),
    ("5", f"{REAL}, prompt", FXO, FX, IF, P, {}, "+8.5", 1),
    ("5", f"{PROXY}, prompt", FXO, FX, PX, P, {}, "+8.5", 1),
    ("6", f"{REAL}, prompt", HSO, HS, IF, P, {}, "+0.2", 1),
    ("6", f"{PROXY}, prompt", HSO, HS, PX, P, {}, "+0.2", 1),
    ("7", f"{REAL}, prompt", HS, FX, IF, P, {}, "+9.4", 1),
    ("7", f"{PROXY}, prompt", HS, FX, PX, P, {}, "+9.4", 1),
    ("8", f"{REAL}, prompt", "hat", HSO, IF, P, {}, "+1.0", 1),
    ("8", f"{PROXY}, prompt", "hat", HSO, PX, P, {}, "+1.0", 1),
    ("15", f"{REAL}, prompt", "hat", "base", IF, P, {}, "+2.0", 1),  # 83.5-81.5
    ("15", f"{REAL}, instr.", "hat", "base", IF, INS, {}, "+1.0", 1),  # 88.7-87.7
    ("15", f"{PROXY}, prompt", "hat", "base", PX, P, {}, "+2.0", 1),
    ("15", f"{PROXY}, instr.", "hat", "base", PX, INS, {}, "+1.0", 1),
]  # fmt: skip
EDIT = "edit: relative error reduction (%)"
PR_MEASURE = "T3 PR success (n: questions, 4 prompts each)"  # claim 9, sign −1


def _rows(table) -> list[dict]:
    return [dict(zip(table.header, r)) for r in table.rows]


def _find(table, number: str, measure: str, nth: int = 0) -> dict:
    found = [r for r in _rows(table) if r["#"] == number and r["measure"] == measure]
    return found[nth]


def _num(text: str) -> float:
    return float(text.replace("−", "-").removesuffix(" (real)"))


def _edit_errors(root, run) -> dict[str, tuple[float, float]]:
    pairs = {}
    for r in read(root, run, "edit"):
        side = r["tags"]["edit"]
        pairs.setdefault(r["tags"]["question"], {})[side] = 1 - r["scores"]["success"]
    return {q: (v["before"], v["after"]) for q, v in sorted(pairs.items())}


def test_every_two_run_row_is_its_paired_difference(sweep_root, tables):
    t = tables["claims"]
    seen = {}
    for number, measure, a, b, suite, metric, tags, paper, _ in TWO_RUN:
        measure += " (strict)" if suite.startswith("ifeval") else ""
        nth = seen[number, measure] = seen.get((number, measure), -1) + 1
        got = _find(t, number, measure, nth)
        ra, rb = read(sweep_root, a, suite), read(sweep_root, b, suite)
        xa, xb = common(ra, rb, metric, **tags)
        w = common(ra, rb, "n_instructions", **tags)[0] if metric == INS else None
        assert got["ours"] == diff_text(xa, xb, weights=w), (number, measure)
        assert got["n"] == str(len(xa))
        proxy = " (real)" if suite == "ifeval_proxy" else ""
        assert got["paper"] == paper + (proxy if paper != "–" else ""), got
    # the table holds these rows, claim 9 and the four below, nothing else
    assert len(t.rows) == len(TWO_RUN) + 6 == len(CLAIMS)


def test_prompt_robustness_resamples_questions(sweep_root, tables):
    """Claim 9: T3's PR cases are questions under 4 prompts each; the row's
    interval resamples questions (a brute-force cluster bootstrap), n counts them."""
    got = _find(tables["claims"], "9", PR_MEASURE)
    ra, rb = read(sweep_root, FX, "t3"), read(sweep_root, "base", "t3")
    other = {r["id"]: r["scores"]["success"] for r in rb}
    by_q = {}
    for r in ra:
        if r["tags"].get("kind") == "prompt_robustness" and r["id"] in other:
            by_q.setdefault(r["tags"]["question"], []).append(
                r["scores"]["success"] - other[r["id"]]
            )
    assert len(by_q) >= 5 and {len(v) for v in by_q.values()} == {4}
    d = np.array([sum(v) for v in by_q.values()])
    c = np.array([len(v) for v in by_q.values()], float)
    lo, hi = boot(lambda x, y: x.sum(-1) / y.sum(-1), d, c)
    value = d.sum() / c.sum()
    mark = " *" if lo > 0 or hi < 0 else ""
    assert got["ours"] == f"{signed(value)} [{signed(lo)}, {signed(hi)}]{mark}"
    assert (got["n"], got["paper"]) == (str(len(by_q)), "−4.6")


def test_opd_contrast_is_the_gap_of_the_two_effects(sweep_root, tables):
    runs = ("sft_fixed_opd", "sft_fixed", "sft_hsa_opd", "sft_hsa")
    by_id = [
        {r["id"]: r["scores"][P] for r in read(sweep_root, n, "ifeval")} for n in runs
    ]
    ids = [i for i in by_id[0] if all(i in s for s in by_id[1:])]
    x = np.array([[s[i] for i in ids] for s in by_id])
    d = x[0] - x[1] - x[2] + x[3]
    assert np.count_nonzero(d) >= 10  # enough for an interval (MIN_DIFFERING)
    lo, hi = boot(lambda v: v.mean(-1), d)
    mark = " *" if lo > 0 or hi < 0 else ""
    got = _find(tables["claims"], "6", f"{REAL}, prompt (strict)", 1)
    assert got["ours"] == f"{signed(d.mean())} [{signed(lo)}, {signed(hi)}]{mark}"
    assert got["paper"] == "+8.3" and got["n"] == str(len(ids))  # 8.5 - 0.2


def test_a_contrast_where_few_cases_differ_is_not_read(make_sweep, tmp_path):
    """Four runs that agree on all but a few prompts: the bootstrap would read
    about [0, 0]; the row shows the estimate alone, with no reading."""
    root = make_sweep(tmp_path)
    runs = ("sft_fixed_opd", "sft_fixed", "sft_hsa_opd", "sft_hsa")
    first = read(root, runs[0], "ifeval")
    for k, name in enumerate(runs):
        recs = [json.loads(json.dumps(r)) for r in first]
        for i, r in enumerate(recs):  # runs 1-3 copy run 0, but 3 prompts flip in run 1
            if k == 1 and i < 3:
                r["scores"][P] = 1.0 - r["scores"][P]
        path = root / name / "eval" / "ifeval" / "records.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    got = _find(get("claims")(load_sweep(root)), "6", f"{REAL}, prompt (strict)", 1)
    assert re.fullmatch(r"[−+]\d+\.\d", got["ours"]) and got["n"] == "–"  # no interval
    assert [got[h] for h in HEADER[-2:]] == ["–", "–"]


def test_edit_rows_are_the_runs_reductions_and_their_gap(sweep_root, tables):
    t, edit = tables["claims"], tables["edit"]
    assert _find(t, "10", EDIT, 0)["ours"] == row(edit, run="HAT")["reduction"]
    assert (
        _find(t, "10", EDIT, 1)["ours"]
        == row(edit, run="fixed-harness SFT")["reduction"]
    )
    assert [_find(t, "10", EDIT, i)["paper"] for i in range(3)] == [
        "51.7",
        "18.1",
        "33.6",
    ]
    eh, ef = _edit_errors(sweep_root, "hat"), _edit_errors(sweep_root, "sft_fixed")
    qs = [q for q in eh if q in ef]
    arrays = [np.array([e[q][i] for q in qs]) for e in (eh, ef) for i in (0, 1)]

    def red(b, a):
        return (b.mean(-1) - a.mean(-1)) / b.mean(-1)

    value = red(*arrays[:2]) - red(*arrays[2:])
    lo, hi = boot(lambda a, b, c, d: red(a, b) - red(c, d), *arrays)
    mark = " *" if lo > 0 or hi < 0 else ""
    assert _find(t, "10", EDIT, 2)["ours"] == interval(value, lo, hi) + mark


def test_readings_follow_the_printed_interval_and_the_claimed_sign(tables):
    """Sign, 0 and the paper's figure read off each printed cell with the sign
    PAPER.md claims (written out above), independently of the table's code."""
    signs = {(n, m): s for n, m, *_, s in TWO_RUN} | {("9", PR_MEASURE): -1}
    seen = set()
    for cells in _rows(tables["claims"]):
        if cells["#"] == "11":  # no replay with a co-trained head in the fake sweep
            assert cells["ours"] == "–" and cells[HEADER[-1]] == "–"
            assert cells["measure"].endswith(
                "(HAT's replay) (not measured by these runs)"
            )
            continue
        m = OURS.match(cells["ours"])
        assert m, cells["ours"]
        mean, lo, hi = (_num(x) for x in m.group(1, 2, 3))
        key = (cells["#"], cells["measure"].removesuffix(" (strict)"))
        sign = signs.get(key, 1)  # the contrasts and reductions claim a gain
        same = "yes" if mean * sign > 0 else "no" if mean * sign < 0 else "0"
        assert cells["sign as the paper's"] == same, cells
        if 0.0 not in (lo, hi):  # printed rounding at 0
            assert cells["interval excludes 0"] == ("yes" if lo > 0 or hi < 0 else "no")
        assert bool(m.group(4)) == (cells["interval excludes 0"] == "yes")
        if cells["paper"] == "–":
            assert cells["paper's figure"] == "–"
        else:
            p = _num(cells["paper"])
            want = "above" if p > hi else "below" if p < lo else "inside"
            assert cells["paper's figure"] == want, cells
        seen.add((cells["interval excludes 0"], cells["paper's figure"]))
    assert {"yes", "no"} <= {z for z, _ in seen} and {"below", "inside"} <= {
        w for _, w in seen
    }
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
    # the paper's figure against the interval as printed: +14.5 [+14.5, +20.0]
    assert readings(Stat(0.1455, 0.14549, 0.2, 40), 14.5, +1)[2] == "inside"
    # ... and a figure the paper's numbers give with float error (T2's 94.6 - 75.4)
    assert 94.6 - 75.4 < 19.2  # 19.199999999999989
    assert readings(Stat(0.25, 0.192, 0.3, 300), 94.6 - 75.4, +1)[2] == "inside"
    # what is not a reading: a NaN mean, NaN or reversed bounds
    assert readings(Stat(math.nan, 0.1, 0.2, 40), 9.4, +1) == ["–", "–", "–"]
    assert readings(Stat(0.1, math.nan, math.nan, 40), 9.4, +1) == ["yes", "–", "–"]
    assert readings(Stat(0.1, 0.2, 0.05, 40), 15.0, +1) == ["yes", "–", "–"]


def test_a_claim_whose_runs_are_not_done_says_so(sweep):
    partial = dataclasses.replace(
        sweep, runs=[r for r in sweep.runs if r.name not in ("hat", "sft_fixed_opd")]
    )
    rows = _rows(get("claims")(partial))
    hat = [r for r in rows if r["#"] in ("1", "2", "8", "11", "15")]
    hat += [r for r in rows if "HAT" in r["claim (paper)"] and r["#"] == "10"]
    assert len(hat) == 11 and all(
        "not done" in r["measure"] and r["ours"] == "–" and r["n"] == "–" for r in hat
    )
    assert all("not done" in r["measure"] for r in rows if r["#"] == "5")
    assert all("not done" not in r["measure"] for r in rows if r["#"] in "347")


MTP = "MTP acceptance at concurrency 1 (HAT's replay)"


def _drafts(turn):
    """[proposed, accepted] draft tokens over a turn's calls."""
    return [
        sum(c[f"drafts_{k}"] for c in turn["calls"]) for k in ("proposed", "accepted")
    ]


# a message's own acceptance level, shared by both heads: pairing by message
# removes it from the difference
LEVEL = [0.05, 0.9, 0.3, 0.7, 0.15, 0.85, 0.4, 0.6, 0.1, 0.95, 0.25, 0.5]


def _head_replays(root, gain, drop=None, counts=True, repeats=1):
    """The HAT run's replay with co_trained and base_head copies of the
    standalone head's: at c = 1 a call of message i accepts LEVEL[i] +
    gain[head] of its proposed drafts (none proposed with ``counts`` False:
    an endpoint's replay), each turn ``repeats`` times; the summary's rate
    what its turns give (else 0.5 + gain / c); the base head's message
    ``drop`` left out. Returns head -> {message: [proposed, accepted]} at
    c = 1, summed over repeats."""
    folder = latency.replay_folder(load_sweep(root).pipeline("hsa", True, True))
    done = json.loads((folder / "standalone" / "replay.json").read_text())
    per_message = {}
    for head, g in gain.items():
        runs = []
        for r in done["runs"]:
            c, turns = r["concurrency"], json.loads(json.dumps(r["turns"]))
            for t in turns:
                share = min(max(LEVEL[t["index"]] + g, 0.0), 1.0)
                for call in t["calls"]:
                    p = call["drafts_proposed"] if counts else 0
                    call["drafts_proposed"] = p
                    call["drafts_accepted"] = int(p * share) if c == 1 else p // 3
            if head == "base_head" and drop is not None and c == 1:
                turns = [t for t in turns if t["index"] != drop]
            turns = [{**t, "repeat": k} for k in range(repeats) for t in turns]
            drafts = {}
            for t in turns:
                old = drafts.get(t["index"], [0, 0])
                drafts[t["index"]] = [x + y for x, y in zip(old, _drafts(t))]
            if c == 1:
                per_message[head] = drafts
            total = sum(p for p, _ in drafts.values())
            rate = sum(a for _, a in drafts.values()) / total if total else 0.5 + g / c
            summary = {**r["summary"], "mtp_acceptance_rate": rate}
            runs.append({**r, "summary": summary, "turns": turns})
        (folder / head).mkdir(exist_ok=True)
        (folder / head / "replay.json").write_text(json.dumps({**done, "runs": runs}))
    return per_message


def _gain(pa, aa, pb, ab):
    return aa.sum(-1) / pa.sum(-1) - ab.sum(-1) / pb.sum(-1)


@pytest.mark.parametrize("repeats", [1, 3])
def test_mtp_acceptance_row_pairs_the_heads_messages(make_sweep, tmp_path, repeats):
    root = make_sweep(tmp_path)
    gain = {"co_trained": 0.05, "base_head": 0.0}
    drafts = _head_replays(root, gain, drop=3, repeats=repeats)
    a, b = drafts["co_trained"], drafts["base_head"]
    keys = sorted(set(a) & set(b))
    assert len(keys) == 11 and 3 not in keys  # the dropped message is not paired
    x = np.array([[*a[k], *b[k]] for k in keys], float).T
    lo, hi = boot(_gain, *x)
    got = _find(get("claims")(load_sweep(root)), "11", MTP)
    value = _gain(*x)
    mark = " *" if lo > 0 or hi < 0 else ""
    assert got["ours"] == f"{signed(value)} [{signed(lo)}, {signed(hi)}]{mark}"
    assert (got["paper"], got["n"]) == ("+4.5", "11")  # messages, not turns
    # an unpaired bootstrap (each head's messages drawn apart) is far wider
    rng = np.random.default_rng(0)
    ia, ib = (rng.integers(0, len(keys), size=(1000, len(keys))) for _ in "ab")
    u = np.percentile(_gain(x[0][ia], x[1][ia], x[2][ib], x[3][ib]), [2.5, 97.5])
    assert u[1] - u[0] > 3 * (hi - lo)


def test_claims_notes_say_how_many_distinct_replies_the_heads_drafted_for(
    make_sweep, tmp_path
):
    """A constant reply has every draft accepted: the note gives each head's
    distinct replies and answered turns from its replay summary at c = 1."""
    root = make_sweep(tmp_path)
    assert not any(
        "distinct replies" in n for n in get("claims")(load_sweep(root)).notes
    )
    _head_replays(root, {"co_trained": 0.05, "base_head": 0.0})
    folder = latency.replay_folder(load_sweep(root).pipeline("hsa", True, True))
    want = []
    for head in ("co_trained", "base_head"):
        runs = json.loads((folder / head / "replay.json").read_text())["runs"]
        s = next(r["summary"] for r in runs if r["concurrency"] == 1)
        assert 0 < s["distinct_replies"] <= s["answered"] <= s["messages"]
        want.append(
            f"{head.replace('_', ' ')} {s['distinct_replies']} distinct replies "
            f"over {s['answered']} answered of {s['messages']} messages"
        )
    notes = get("claims")(load_sweep(root)).notes
    assert f"Claim 11's replay at concurrency 1: {'; '.join(want)}." in notes


def test_mtp_acceptance_without_counts_is_the_summaries_difference(
    make_sweep, tmp_path
):
    root = make_sweep(tmp_path)
    _head_replays(root, {"co_trained": 0.216, "base_head": -0.278}, counts=False)
    got = _find(get("claims")(load_sweep(root)), "11", MTP)
    # only c = 1 is read (the other levels' rates are 0.5 + gain / c)
    assert (got["ours"], got["paper"], got["n"]) == ("+49.4", "+4.5", "–")
    assert [got[h] for h in HEADER[-3:]] == ["yes", "–", "–"]  # no interval


def test_turn_drafts_counts_a_batched_call_once():
    def call(i, p, a):
        return {"call": i, "drafts_proposed": p, "drafts_accepted": a}

    turns = [
        {"index": 0, "session": "s0", "calls": [call(0, 10, 5)]},
        {"index": 1, "session": "s1", "calls": [call(0, 10, 5), call(1, 4, 1)]},
        {"index": 0, "session": "s0", "repeat": 1, "calls": [call(0, 8, 2)]},
    ]
    result = {"runs": [{"concurrency": 1, "summary": {}, "turns": turns}]}
    got = acceptance.turn_drafts(result, Path("r.json"))
    assert got == {0: ("s0", 18, 7), 1: ("s1", 4, 1)}
    assert acceptance.turn_drafts(result, Path("r.json"), concurrency=4) == {}


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"drafts_accepted": 999}, "'runs[0].turns[0].calls[0].drafts_accepted' (999)"),
        ({"drafts_proposed": -1}, "'runs[0].turns[0].calls[0].drafts_proposed' must"),
        ({"drafts_proposed": 10**400}, "drafts_proposed' must be in [0, 2^53]"),
        ({"drafts_accepted": "3"}, "'runs[0].turns[0].calls[0].drafts_accepted' must"),
        ({"summary_rate": 0.99}, "'runs[0].summary.mtp_acceptance_rate' (0.99)"),
        ({"twice": True}, "runs[0].turns[1]: repeat 0, message 0 twice"),
        ({"no_index": True}, "'runs[0].turns[0].index' is missing"),
        ({"session": "elsewhere"}, "message 0 is from session elsewhere in one"),
    ],
)
def test_hostile_turn_counts_are_one_located_error(make_sweep, tmp_path, edit, message):
    root = make_sweep(tmp_path)
    _head_replays(root, {"co_trained": 0.05, "base_head": 0.0})
    folder = latency.replay_folder(load_sweep(root).pipeline("hsa", True, True))
    path = folder / "co_trained" / "replay.json"
    result = json.loads(path.read_text())
    run = next(r for r in result["runs"] if r["concurrency"] == 1)
    assert result["runs"].index(run) == 0
    turn = run["turns"][0]
    if "summary_rate" in edit:
        run["summary"]["mtp_acceptance_rate"] = edit["summary_rate"]
    elif "twice" in edit:
        run["turns"][1]["index"] = turn["index"]
    elif "no_index" in edit:
        del turn["index"]
    elif "session" in edit:
        turn["session"] = edit["session"]  # another trace than the base head's
    else:
        turn["calls"][0].update(edit)
    path.write_text(json.dumps(result))
    with pytest.raises(DataError) as e:
        get("claims")(load_sweep(root))
    assert str(path) in str(e.value) and message in str(e.value), str(e.value)


def test_forest_plot_draws_the_tables_estimates_and_the_papers_figures(sweep, tables):
    fig = figures.claims_forest(sweep)
    want = {}  # tick label -> (mean, lo, hi from the table's cells; paper; grey?)
    for c, cells in zip(CLAIMS, _rows(tables["claims"]), strict=True):
        if m := OURS.match(cells["ours"]):
            paper = None if cells["paper"] == "–" else _num(cells["paper"])
            grey = cells["paper"].endswith("(real)")
            want[c.short()] = (*(_num(x) for x in m.group(1, 2, 3)), paper, grey)
    got = {}
    for ax in fig.axes:
        for i, label in enumerate(t.get_text() for t in ax.get_yticklabels()):
            at = [ln for ln in ax.lines if list(ln.get_ydata()) in ([i], [i, i])]
            bar = next(ln for ln in at if len(ln.get_xdata()) == 2)
            dot = next(ln for ln in at if ln.get_marker() == "o")
            diamond = [ln for ln in at if ln.get_marker() == "D"]
            paper = diamond[0].get_xdata()[0] if diamond else None
            grey = bool(diamond) and diamond[0].get_color() == "0.55"
            got[label] = (dot.get_xdata()[0], *bar.get_xdata(), paper, grey)
    assert got.keys() == want.keys() and len(fig.axes) == 2  # points; relative %
    for label, (mean, lo, hi, paper, grey) in want.items():
        g = got[label]
        assert g[:3] == pytest.approx((mean, lo, hi), abs=0.051), label  # printed .1f
        assert g[3] == (None if paper is None else pytest.approx(paper)), label
        assert g[4] == grey, label
    plt.close(fig)
    assert figures.claims_forest(dataclasses.replace(sweep, runs=[])) is None


@pytest.mark.parametrize("wrong", [3, 10])
def test_a_reduction_over_few_wrong_questions_is_not_read(sweep_root, tmp_path, wrong):
    """HAT wrong on ``wrong`` questions before the edit, on none after: below
    MIN_WRONG (10) the reduction (100 %) and its gap have no interval, so no
    reading, and the edit table says why; at 10 both are bootstrapped."""
    root = tmp_path / "root"
    shutil.copytree(sweep_root, root, symlinks=True)
    path = root / "hat" / "eval" / "edit" / "records.jsonl"
    recs = read(root, "hat", "edit")
    questions = sorted({r["tags"]["question"] for r in recs})
    for r in recs:
        bad = (
            r["tags"]["edit"] == "before" and r["tags"]["question"] in questions[:wrong]
        )
        r["scores"]["success"] = 0.0 if bad else 1.0
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    sweep = load_sweep(root)
    claims, edit = get("claims")(sweep), get("edit")(sweep)
    # the same errors as a summary only (a run evaluated without records)
    errors = {}
    for r in recs:
        errors.setdefault(r["tags"]["question"], {})[r["tags"]["edit"]] = (
            1.0 - r["scores"]["success"]
        )
    summary_path = root / "hat" / "eval" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["suites"]["edit"]["extra"]["error"] = error_reduction(
        *([errors[q][side] for q in questions] for side in ("before", "after"))
    )
    summary_path.write_text(json.dumps(summary))
    path.unlink()
    from_summary = row(get("edit")(load_sweep(root)), run="HAT")["reduction"]
    hat, gap = _find(claims, "10", EDIT, 0), _find(claims, "10", EDIT, 2)
    note = [n for n in edit.notes if n.startswith("Fewer than 10 questions wrong")]
    if wrong < 10:
        assert row(edit, run="HAT")["reduction"] == from_summary == "100.0"
        assert hat["ours"] == "100.0" and hat["n"] == "–"
        assert [hat[h] for h in HEADER[-3:]] == ["yes", "–", "–"]
        assert "[" not in gap["ours"] and gap[HEADER[-2]] == "–"
        assert note and note[0].endswith(": HAT.")
    else:
        assert row(edit, run="HAT")["reduction"] == "100.0 [100.0, 100.0] *"
        assert from_summary == "100.0 [100.0, 100.0] *"
        assert hat[HEADER[-2]] == "yes" and "[" in gap["ours"]
        assert not note
