"""The steps table against the fake sweep's files, and `hat paper --results`."""

import json
import shutil
import types

import numpy as np
import pytest
from scipy.stats import binomtest

from paper import paper_cmd as cli
from paper.paper_cmd import DECIDES, power_line
from paper.results import Stat, load_sweep
from paper.tables import TABLES, get
from paper.tables.steps import duration, newest_finish, tail_mean
from tests.paper.conftest import RUNNING, RUNS
from tests.paper.fake_steps import SECONDS

COLUMNS = ["step", "run", "runs", "kind", "seconds", "steps", "loss", "accuracy"]
COLUMNS += ["decision acc.", "eval success"]


def _folders(root):
    """(path, step, [runs]) of every run's step folder: the done runs' first,
    each at its first use."""
    seen = {}
    for name in sorted(RUNS, key=lambda n: n in RUNNING):
        config = json.loads((root / name / "config.json").read_text())
        for step, rel in config["step_folders"].items():
            seen.setdefault(rel, (step, []))[1].append(name)
    return [(root / rel, step, runs) for rel, (step, runs) in seen.items()]


def _rows(root):
    return [json.loads(x) for x in (root / "metrics.jsonl").read_text().splitlines()]


def _tail(rows, key, n=5):
    return np.mean([r[key] for r in rows if key in r][-n:])


def _done(path):
    done = path / "done.json"
    return json.loads(done.read_text()) if done.exists() else None


def _by_step(table):
    """(step, first run) -> the row as {column: cell}."""
    return {(r[0], r[1]): dict(zip(table.header, r)) for r in table.rows if r}


@pytest.fixture(scope="module")
def table(sweep_root):
    return get("steps")(load_sweep(sweep_root))


def test_one_row_per_step_folder_in_pipeline_order(sweep_root, table):
    assert table.header == COLUMNS
    folders = _folders(sweep_root)
    ours = [r for r in table.rows if r and r[0] != "total"]
    assert [(r[0], r[1], r[2]) for r in ours] == [
        (step, runs[0], str(len(runs))) for _, step, runs in folders
    ]
    first = ["prompts", "sim_hsa", "base_data", "tokenizer", "base", "eval"]
    assert [r[0] for r in ours[:6]] == first
    assert ours[4][2] == str(len(RUNS))  # the base step is shared
    # the absolute sft path of sft_hsa and the relative ones: one row each; the
    # running run's last
    assert [r[1] for r in ours if r[0] == "sft"] == [
        *(n for n, spec in RUNS.items() if spec[2] and n not in RUNNING),
        *RUNNING,
    ]
    for path, step, runs in folders:
        got, done = _by_step(table)[(step, runs[0])], _done(path)
        if done is None:
            assert (step, runs, got["seconds"]) == ("eval", ["abl_prompt"], "–")
            continue
        assert got["seconds"] == f"{done['seconds']:.1f}"
        stage = done["spec"].get("stage")
        assert got["kind"] == done["kind"] + (f" ({stage})" if stage else "")


def test_train_cells_are_tail_means_of_metrics(sweep_root, table):
    cells = _by_step(table)
    for path, step, runs in _folders(sweep_root):
        got = cells[(step, runs[0])]
        if not (path / "metrics.jsonl").exists():
            assert got["steps"] == got["loss"] == "–", step
            continue
        rows = _rows(path)
        assert got["steps"] == str(rows[-1]["step"])
        assert got["loss"] == f"{_tail(rows, 'train/loss'):.3f}"
        rl = step == "rl"
        acc = "–" if rl else f"{100 * _tail(rows, 'train/accuracy'):.1f}"
        assert got["accuracy"] == acc
        if step == "sft":
            want = f"{100 * _tail(rows, 'train/decision_accuracy'):.1f}"
            assert got["decision acc."] == want
            last = [
                r["train/decision_accuracy"] for r in rows if "train/decision/tool" in r
            ]
            assert want != f"{100 * last[-1]:.1f}"  # a mean, not the last value
        else:
            assert got["decision acc."] == "–", step
        success = [r["eval/success"] for r in rows if "eval/success" in r]
        assert got["eval success"] == (f"{100 * success[-1]:.1f}" if rl else "–")
    assert cells[("rl", "hat")]["eval success"] == "45.0"


def test_total_row_counts_shared_steps_once(sweep_root, table):
    total = table.rows[-1]
    assert table.rows[-2] is None and total[0] == "total"
    done = [_done(p) for p, _, _ in _folders(sweep_root)]
    seconds = [d["seconds"] for d in done if d]
    assert total[4] == f"{sum(seconds):.1f}" and total[2] == str(len(RUNS))
    assert sum(seconds) < sum(SECONDS[k] for k in ("base", "eval")) * len(RUNS)
    assert table.notes == [
        f"Total: {duration(sum(seconds))} of compute over {len(done)} steps.",
        "No done.json (not finished): eval (abl_prompt).",
        "Runs not done: abl_prompt (status running), abl_skill_ids (no run.json); "
        "their finished steps are counted.",
    ]


def test_unfinished_step_and_runs_without_step_folders(sweep_root, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(sweep_root, root, symlinks=True)
    before = get("steps")(load_sweep(root)).rows[-1][4]
    (root / "stages" / "sft_sft_fixed" / "done.json").unlink()
    config = json.loads((root / "base" / "config.json").read_text())
    del config["step_folders"]  # an older run: its stages only
    (root / "base" / "config.json").write_text(json.dumps(config))
    t = get("steps")(load_sweep(root))
    got = _by_step(t)
    assert got[("sft", "sft_fixed")]["seconds"] == "–"
    assert got[("sft", "sft_fixed")]["kind"] == "train (sft)"  # config's spec
    assert got[("sft", "sft_fixed")]["loss"] != "–"
    lost = SECONDS["sft"] + SECONDS["eval"]  # sft_fixed's sft, base's eval step
    assert float(t.rows[-1][4]) == pytest.approx(float(before) - lost)
    assert (
        t.notes[1] == "No done.json (not finished): sft (sft_fixed), eval (abl_prompt)."
    )
    assert t.rows[0][:2] == ["base", "base"]  # base lists its stage first now
    assert ("eval", "base") not in got


def test_resumed_steps_count_every_attempt(sweep_root, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(sweep_root, root, symlinks=True)
    before = float(get("steps")(load_sweep(root)).rows[-1][4])
    sft = root / "stages" / "sft_sft_fixed" / "done.json"
    done = json.loads(sft.read_text())
    # killed twice: the finishing attempt took 40 s, all three 100 s
    sft.write_text(json.dumps(done | {"attempts": 3, "seconds_all": 100.0}))
    base_eval = next(p for p, step, runs in _folders(root) if step == "eval")
    old = json.loads((base_eval / "done.json").read_text())
    for key in ("attempts", "seconds_all", "untimed_before"):
        del old[key]  # an older driver: the last attempt's seconds only
    (base_eval / "done.json").write_text(json.dumps(old))
    t = get("steps")(load_sweep(root))
    got = _by_step(t)
    assert got[("sft", "sft_fixed")]["seconds"] == "100.0"
    assert got[("eval", "base")]["seconds"] == f"{old['seconds']:.1f}"
    assert float(t.rows[-1][4]) == pytest.approx(before + 100.0 - done["seconds"])
    assert t.notes[2:4] == [
        "Resumed after a stop (attempts): sft (sft_fixed, 3); their seconds add up "
        "every attempt's wall time (stopped time included; a killed attempt's last "
        "half minute is lost).",
        "Times that may miss earlier attempts (a driver that timed only the last "
        "attempt wrote them, or an untimed attempt left work behind), so the total "
        "is a lower bound: eval (base).",
    ]
    nulls = done | {"attempts": None, "seconds_all": None, "untimed_before": None}
    sft.write_text(json.dumps(nulls))  # null: not recorded, as an older driver
    t = get("steps")(load_sweep(root))
    assert _by_step(t)[("sft", "sft_fixed")]["seconds"] == f"{done['seconds']:.1f}"
    assert "eval (base), sft (sft_fixed)" in t.notes[2]
    done2 = done | {"attempts": 2, "seconds_all": 90.0, "untimed_before": True}
    sft.write_text(json.dumps(done2))
    notes = get("steps")(load_sweep(root)).notes
    assert (
        "sft (sft_fixed, 2)" in notes[2] and "eval (base), sft (sft_fixed)" in notes[3]
    )


def test_tail_mean_and_duration():
    rows = [{"a": float(i)} for i in range(8)] + [{"b": 1.0}, {"a": None}]
    assert tail_mean(rows, "a") == pytest.approx(5.0)  # 3..7
    assert tail_mean(rows, "a", n=2) == pytest.approx(6.5)
    assert tail_mean(rows, "c") is None
    assert duration(12.345) == "12.3 s"
    assert duration(200) == "3 min 20 s"
    assert duration(3725) == "1 h 02 min 05 s"


def test_results_file_concatenates_every_table(sweep_root, tmp_path, capsys):
    out, results = tmp_path / "out", tmp_path / "docs" / "results" / "hat_tiny.md"
    argv = [str(sweep_root), "--out", str(out), "--no-figures"]
    assert cli.main([*argv, "--results", str(results)]) == 0
    assert str(results) in capsys.readouterr().out
    text = results.read_text()
    head, _, body = text.partition("\n## ")
    sweep = load_sweep(sweep_root)
    cmd = f"hat paper {sweep_root} --out {out} --results {results}"
    assert f"Generated by `{cmd}`, do not edit." in head
    assert head.startswith(f"# Results: {sweep_root.name}\n")
    assert f"`{sweep_root}`" in head and sweep.scale_note() in head
    newest = max(d["finished"] for p, _, _ in _folders(sweep_root) if (d := _done(p)))
    assert newest_finish(sweep) == newest
    assert f"Newest step finished: {newest.replace('T', ' ')}" in head
    tables = ["## " + t for t in ("\n## " + body).split("\n## ")[1:]]
    assert len(tables) == len(TABLES)
    for name, md in zip(TABLES, tables, strict=True):
        assert md.strip() == (out / f"{name}.md").read_text().strip(), name
    assert [p.name for p in results.parent.iterdir()] == ["hat_tiny.md"]  # no temp
    argv += ["--tables", "steps,main"]
    assert cli.main([*argv, "--results", str(results)]) == 0
    text = results.read_text()
    assert "--tables steps,main --results" in text
    assert text.index("## Main results") < text.index("## Steps and their time")
    assert "## IFEval" not in text


def _wilson_half(n: int) -> float:
    """scipy's Wilson interval at k = n / 2 (n even), half its width in points."""
    ci = binomtest(n // 2, n).proportion_ci(confidence_level=0.95, method="wilson")
    return 50 * (ci.high - ci.low)


def test_results_header_says_what_the_suites_can_separate(sweep_root, tmp_path):
    results = tmp_path / "r.md"
    argv = [str(sweep_root), "--out", str(tmp_path / "o"), "--no-figures"]
    assert cli.main([*argv, "--results", str(results), "--tables", "main"]) == 0
    head = results.read_text().partition("\n## ")[0]
    # the fake sweep: 40 cases a suite, fixed-harness SFT answered 36 of T2
    want = [f"T1 n = 40 (±{_wilson_half(40):.1f})"]
    want += [f"T2 n = 36 (±{_wilson_half(36):.1f})"]
    want += [f"T3 n = 40 (±{_wilson_half(40):.1f})"]
    assert "- Power: " + ", ".join(want) in head.replace(_POWER_WORDS, "")
    assert f"less than about {round(_wilson_half(36))} points cannot" in head


_POWER_WORDS = (
    "the fewest cases a run answered per suite, with the 95 % Wilson "
    "half-width at a 50 % rate there, in points: "
)


class _Run:
    def __init__(self, n: int) -> None:
        self.n = n

    def stat(self, suite: str, metric: str) -> Stat | None:
        return Stat(0.5, 0.4, 0.6, self.n) if suite != "t3" else None


def test_power_line_calls_out_only_wide_intervals():
    wide = power_line(types.SimpleNamespace(runs=[_Run(300), _Run(6)]))
    assert f"T1 n = 6 (±{_wilson_half(6):.1f})" in wide and "T3" not in wide
    assert "cannot be told apart" in wide
    narrow = power_line(types.SimpleNamespace(runs=[_Run(300), _Run(400)]))
    assert f"T2 n = 300 (±{_wilson_half(300):.1f})" in narrow
    assert "cannot" not in narrow and _wilson_half(300) < DECIDES
    assert power_line(types.SimpleNamespace(runs=[])) is None
