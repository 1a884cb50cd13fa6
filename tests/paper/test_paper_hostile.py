"""`hat paper` on sweep files of the wrong shape: one located error line, exit 1.

Each case writes a one-run sweep root (``r1``, done) with one bad file and runs
the real CLI; the error must name the file and the field, and no Python
exception may escape (a TypeError or KeyError would be a traceback).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hat_jax.cli.main import main
from paper.results import model_facts

STAT = {"mean": 0.5, "ci": [0.4, 0.6], "n": 10}
HAT_META = {"meta": {"sft": "hsa", "opd": True, "rl": True}}


def _summary(**stat) -> dict:
    return {"suites": {"t1": {"n": 10, "metrics": {"success": {**STAT, **stat}}}}}


def _steps(done=None, metrics=None) -> dict:
    files = {"r1/config.json": {"step_folders": {"sft": "steps/sft"}}}
    files["steps/sft/done.json"] = done or {"seconds": 1.0, "kind": "train"}
    if metrics is not None:
        files["steps/sft/metrics.jsonl"] = metrics
    return files


def _replay(summary: dict, head: str = "mtp_off") -> dict:
    result = {"runs": [{"concurrency": 1, "summary": summary}]}
    return {"r1/config.json": HAT_META, f"r1/replay/{head}/replay.json": result}


GOOD_REPLAY = {
    "latency_s": {"p50": 1.0, "p95": 2.0, "p99": 3.0},
    "share_under_15s": 1.0,
    "ttft_s": {"p50": 0.1},
    "decode_tok_s": 50.0,
}

# name -> (files under the root, tables, the file named, what the message says)
CASES = {
    "sweep_list": ({"sweep.json": [1]}, None, "sweep.json", "expected a JSON object"),
    "sweep_number": ({"sweep.json": 3}, None, "sweep.json", "got integer"),
    "sweep_scale_list": (
        {"sweep.json": {"runs": ["r1"], "scale": [1]}},
        None,
        "sweep.json",
        "field 'scale' must be a string or null, got list",
    ),
    "run_list": ({"r1/run.json": [1]}, None, "r1/run.json", "got list"),
    "run_string": ({"r1/run.json": "done"}, None, "r1/run.json", "got string"),
    "run_status_list": (
        {"r1/run.json": {"status": ["done"]}},
        None,
        "r1/run.json",
        "field 'status' must be a string",
    ),
    "run_stages_list": (
        {"r1/run.json": {"status": "done", "stages": [1]}},
        None,
        "r1/run.json",
        "field 'stages' must be an object",
    ),
    "run_stage_path_int": (
        {"r1/run.json": {"status": "done", "stages": {"sft": {"path": 5}}}},
        None,
        "r1/run.json",
        "field 'stages.sft.path' must be a string or null, got integer 5",
    ),
    "config_list": ({"r1/config.json": [1]}, None, "r1/config.json", "got list"),
    "meta_list": (
        {"r1/config.json": {"meta": [1]}},
        None,
        "r1/config.json",
        "field 'meta' must be an object",
    ),
    "meta_opd_string": (
        {"r1/config.json": {"meta": {"opd": "yes"}}},
        None,
        "r1/config.json",
        "field 'meta.opd' must be true or false, got string 'yes'",
    ),
    "meta_name_int": (
        {"r1/config.json": {"meta": {"name": 5}}},
        None,
        "r1/config.json",
        "field 'meta.name' must be a string, got integer 5",
    ),
    "step_folder_int": (
        {"r1/config.json": {"step_folders": {"sft": 5}}},
        None,
        "r1/config.json",
        "field 'step_folders.sft' must be a string",
    ),
    "summary_list": ({"r1/eval/summary.json": [1]}, None, "summary.json", "got list"),
    "summary_number": ({"r1/eval/summary.json": 1}, None, "summary.json", "integer"),
    "suites_list": (
        {"r1/eval/summary.json": {"suites": [1]}},
        None,
        "summary.json",
        "field 'suites' must be an object",
    ),
    "suite_string": (
        {"r1/eval/summary.json": {"suites": {"t1": "x"}}},
        None,
        "summary.json",
        "field 'suites.t1' must be an object, got string",
    ),
    "mean_string": (
        {"r1/eval/summary.json": _summary(mean="x")},
        None,
        "summary.json",
        "field 'suites.t1.metrics.success.mean' must be a number or null",
    ),
    "mean_huge": (
        {"r1/eval/summary.json": _summary(mean=10**400)},
        None,
        "summary.json",
        "field 'suites.t1.metrics.success.mean' is out of range",
    ),
    "ci_number": (
        {"r1/eval/summary.json": _summary(ci=3)},
        None,
        "summary.json",
        "field 'suites.t1.metrics.success.ci' must be a list or null",
    ),
    "ci_three": (
        {"r1/eval/summary.json": _summary(ci=[1, 2, 3])},
        None,
        "summary.json",
        "field 'suites.t1.metrics.success.ci' must be [low, high], got 3 values",
    ),
    "n_list": (
        {"r1/eval/summary.json": _summary(n=[1])},
        None,
        "summary.json",
        "field 'suites.t1.metrics.success.n' must be an integer or null",
    ),
    "by_group_stat": (
        {
            "r1/eval/summary.json": {
                "suites": {"t2": {"by": {"family": {"x": {"n": 1, "success": 3}}}}}
            }
        },
        None,
        "summary.json",
        "field 'suites.t2.by.family.x.success' must be an object, got integer",
    ),
    "edit_extra_stat": (
        {
            "r1/eval/summary.json": {
                "suites": {"edit": {"extra": {"error": {"before": {"mean": "x"}}}}}
            }
        },
        "edit",
        "summary.json",
        "field 'suites.edit.extra.error.before.mean' must be a number or null",
    ),
    "record_scores_list": (
        {"r1/eval/edit/records.jsonl": [{"id": "a", "scores": [1]}]},
        "edit",
        "records.jsonl: record 1 (id 'a')",
        "field 'scores' must be an object, got list",
    ),
    "record_score_string": (
        {"r1/eval/edit/records.jsonl": [{"id": "a", "scores": {"accuracy": "x"}}]},
        "edit",
        "records.jsonl: record 1 (id 'a')",
        "field 'scores.accuracy' must be a number or null, got string",
    ),
    "record_tag_list": (
        {
            "r1/eval/edit/records.jsonl": [
                {"id": "a", "scores": {"accuracy": 1}, "tags": {"question": [1]}}
            ]
        },
        "edit",
        "records.jsonl: record 1 (id 'a')",
        "field 'tags.question' must be",
    ),
    "record_edit_tag_missing": (
        {"r1/eval/edit/records.jsonl": [{"id": "a", "scores": {"accuracy": 1}}]},
        "edit",
        "records.jsonl: record 'a'",
        "expected tags 'question' and 'edit'",
    ),
    "record_weight_missing": (
        {
            "r1/eval/ifeval/records.jsonl": [
                {"id": "a", "scores": {"instruction_level_strict": 1.0}}
            ]
        },
        "ifeval",
        "records.jsonl: record 1 (id 'a')",
        "score 'instruction_level_strict' without its weight 'n_instructions'",
    ),
    "done_list": (_steps(done=[1]), "steps", "done.json", "got list"),
    "done_seconds_missing": (
        _steps(done={"kind": "train"}),
        "steps",
        "done.json",
        "field 'seconds' is missing",
    ),
    "done_finished_int": (
        _steps(done={"seconds": 1, "finished": 5}),
        "steps",
        "done.json",
        "field 'finished' must be a string or null",
    ),
    "done_seconds_negative": (
        _steps(done={"seconds": -1.0}),
        "steps",
        "done.json",
        "field 'seconds' must be seconds >= 0, got -1.0",
    ),
    "done_seconds_all_nan": (
        _steps(done={"seconds": 1.0, "seconds_all": float("nan")}),
        "steps",
        "done.json",
        "field 'seconds_all' must be seconds >= 0, got nan",
    ),
    "done_seconds_all_string": (
        _steps(done={"seconds": 1.0, "seconds_all": "1 h"}),
        "steps",
        "done.json",
        "field 'seconds_all' must be a number or null, got string",
    ),
    "done_seconds_all_below_last": (
        _steps(done={"seconds": 5.0, "seconds_all": 2.0}),
        "steps",
        "done.json",
        "field 'seconds_all' (2.0) is below 'seconds' (5.0)",
    ),
    "done_attempts_zero": (
        _steps(done={"seconds": 1.0, "attempts": 0}),
        "steps",
        "done.json",
        "field 'attempts' must be >= 1, got 0",
    ),
    "done_attempts_float": (
        _steps(done={"seconds": 1.0, "attempts": 1.5}),
        "steps",
        "done.json",
        "field 'attempts' must be an integer or null",
    ),
    "done_untimed_string": (
        _steps(done={"seconds": 1.0, "untimed_before": "yes"}),
        "steps",
        "done.json",
        "field 'untimed_before' must be true or false or null",
    ),
    "metrics_string_value": (
        _steps(metrics=[{"step": 1, "train/loss": "x"}]),
        "steps",
        "metrics.jsonl: row 1",
        "field 'train/loss' must be a number or null, got string",
    ),
    "metrics_step_float": (
        _steps(metrics=[{"step": 1.5, "train/loss": 1.0}]),
        "steps",
        "metrics.jsonl: row 1",
        "field 'step' must be an integer or null",
    ),
    "replay_runs_dict": (
        {"r1/config.json": HAT_META, "r1/replay/mtp_off/replay.json": {"runs": {}}},
        "latency",
        "replay.json",
        "field 'runs' must be a list",
    ),
    "replay_latency_missing": (
        _replay({k: v for k, v in GOOD_REPLAY.items() if k != "latency_s"}),
        "latency",
        "replay.json",
        "field 'runs[0].summary.latency_s' is missing",
    ),
    "replay_share_string": (
        _replay({**GOOD_REPLAY, "share_under_15s": "all"}),
        "latency",
        "replay.json",
        "field 'runs[0].summary.share_under_15s' must be a number or null",
    ),
    "replay_reply_rate_string": (
        _replay({**GOOD_REPLAY, "reply_rate": "most"}),
        "latency",
        "replay.json",
        "field 'runs[0].summary.reply_rate' must be a number or null",
    ),
    "replay_acceptance_above_one": (
        _replay({**GOOD_REPLAY, "mtp_acceptance_rate": 1.716}, "co_trained"),
        "claims",  # claim 11 reads the HAT run's replays of its two heads
        "replay.json",
        "field 'runs[0].summary.mtp_acceptance_rate' must be in [0, 1], got 1.716",
    ),
    "replay_reply_rate_negative": (
        _replay({**GOOD_REPLAY, "reply_rate": -0.5}),
        "latency",
        "replay.json",
        "field 'runs[0].summary.reply_rate' must be in [0, 1], got -0.5",
    ),
    "trace_header_list": (
        {**_replay(GOOD_REPLAY), "r1/replay/trace.jsonl": [[1]]},
        "latency",
        "trace.jsonl:1",
        "expected a JSON object (the header), got list",
    ),
    "trace_header_rate_missing": (
        {
            **_replay(GOOD_REPLAY),
            "r1/replay/trace.jsonl": [
                {"n_messages": 1, "arrivals": "poisson", "rooms": 1}
            ],
        },
        "latency",
        "trace.jsonl:1",
        "field 'rate' is missing",
    ),
}


def _write(root: Path, files: dict) -> None:
    (root / "r1").mkdir(parents=True)
    (root / "r1" / "run.json").write_text(json.dumps({"status": "done"}))
    for rel, value in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".jsonl"):
            text = "".join(json.dumps(v) + "\n" for v in value)
        else:
            text = json.dumps(value)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_is_one_located_error(tmp_path, capsys, case):
    files, tables, named, what = CASES[case]
    root = tmp_path / "root"
    _write(root, files)
    argv = ["paper", str(root), "--out", str(tmp_path / "out"), "--no-figures"]
    assert main(argv + (["--tables", tables] if tables else [])) == 1
    err = capsys.readouterr().err
    assert err.startswith("hat paper: error: ") and err.count("\n") == 1, err
    assert named in err and what in err, err
    assert str(root) in err and "Traceback" not in err


def test_the_same_root_with_good_files_is_written(tmp_path, capsys):
    """The cases' baseline: a one-run root with well-formed files exits 0."""
    root = tmp_path / "root"
    files = {**_steps(metrics=[{"step": 1, "train/loss": 1.0}]), **_replay(GOOD_REPLAY)}
    files["r1/config.json"] = {**files["r1/config.json"], **HAT_META}
    files["r1/eval/summary.json"] = _summary()
    files["r1/replay/trace.jsonl"] = [
        {"n_messages": 1, "arrivals": "poisson", "rooms": 1, "rate": 0.5}
    ]
    _write(root, files)
    out = tmp_path / "out"
    assert main(["paper", str(root), "--out", str(out), "--no-figures"]) == 0
    assert "1 messages of a poisson trace" in (out / "latency.md").read_text()


@pytest.mark.parametrize("flag", ["--tables", "--figures"])
@pytest.mark.parametrize("value", [",", " ", "nope"])
def test_table_and_figure_names_are_checked_first(tmp_path, capsys, flag, value):
    argv = ["paper", str(tmp_path / "no_such_root"), "--out", str(tmp_path / "o")]
    assert main([*argv, flag, value]) == 1
    err = capsys.readouterr().err
    assert f"hat paper: error: {flag}: " in err and "no such sweep root" not in err


def test_control_characters_in_a_status_are_escaped(tmp_path, capsys):
    root = tmp_path / "root"
    _write(root, {"r1/run.json": {"status": "\x1b[2Jrunning"}})
    assert main(["paper", str(root), "--out", str(tmp_path / "o"), "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert "skipped r1: status \\x1b[2Jrunning" in out and "\x1b" not in out


def test_model_facts_of_a_deeply_nested_config():
    """A config nested past Python's recursion limit is walked, not recursed."""
    config: dict = {"num_hidden_layers": 2, "model_type": "qwen3"}
    for _ in range(5000):
        config = {"x": config}
    assert model_facts(config) == "2-layer qwen3 model"
    overrides: list = ["model.num_hidden_layers=3"]
    for _ in range(5000):
        overrides = [overrides]
    assert model_facts({"steps": overrides}) == "3-layer model"


def test_a_folder_that_is_no_sweep_root_writes_no_tables(tmp_path, capsys):
    from hat_jax.cli.main import main as hat_main

    (tmp_path / "root" / "notes").mkdir(parents=True)
    rc = hat_main(["paper", str(tmp_path / "root"), "--out", str(tmp_path / "o")])
    assert rc == 1 and "not a sweep root" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
