"""`hat eval show` (hat_jax/eval/browse.py, show.py) on recorded runs."""

import json
import os

import pytest

from hat_jax.cli.main import main as hat
from hat_jax.eval.browse import open_run
from hat_jax.eval.records import read_records
from tests.hat_jax.eval.browse_records import (
    case_record,
    eval_run,
    success_run,
    write_suite,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A real oracle and fixed-sentence t2 eval of 6 cases."""
    root = tmp_path_factory.mktemp("runs")
    return eval_run(root / "oracle", "oracle"), eval_run(root / "fixed", "fixed")


def show(capsys, *argv):
    rc = hat(["eval", "show", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_list_has_one_line_per_case(runs, capsys):
    oracle, fixed = runs
    rc, out, _ = show(capsys, oracle)
    recs = read_records(oracle / "t2" / "records.jsonl")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "t2: 6 cases, success 100.0 % (n=6); 6 shown"
    for r, line in zip(recs, lines[1:], strict=True):
        fields = line.split()
        assert fields[:2] == [r["id"], "ok"]  # family first: the summary's order
        assert fields[2] == "/".join(r["tags"][k] for k in ("family", "intent", "lang"))
        assert line.endswith(r["rationales"]["success"])
    rc, out, _ = show(capsys, fixed, "--failed", "--limit", "2")
    assert out.splitlines()[0] == "t2: 6 cases, success 0.0 % (n=6); 2 shown"
    assert [ln.split()[1] for ln in out.splitlines()[1:]] == ["FAIL", "FAIL"]
    assert show(capsys, oracle, "--failed")[1].splitlines() == [
        "t2: 6 cases, success 100.0 % (n=6); 0 shown"
    ]


def test_failed_and_tag_filters(tmp_path, capsys):
    run = success_run(
        tmp_path, [1, 0, 1, 0, 0], tags=lambda i: {"family": "abc"[i % 3]}
    )
    _, out, _ = show(capsys, run, "--failed")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["c001", "c003", "c004"]
    _, out, _ = show(capsys, run, "--failed", "--family", "b")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["c001", "c004"]
    _, out, _ = show(capsys, run, "--tag", "family=a")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["c000", "c003"]
    assert show(capsys, run, "--tag", "family")[2].startswith(
        "hat eval: error: --tag expects KEY=VALUE"
    )


def test_family_filter_on_a_real_run(runs, capsys):
    oracle, _ = runs
    recs = read_records(oracle / "t2" / "records.jsonl")
    family = recs[0]["tags"]["family"]
    want = [r["id"] for r in recs if r["tags"]["family"] == family]
    _, out, _ = show(capsys, oracle, "--suite", "t2", "--family", family)
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == want


def test_a_case_shows_its_whole_trajectory(runs, capsys):
    oracle, _ = runs
    r = next(
        r
        for r in read_records(oracle / "t2" / "records.jsonl")
        if r["trajectory"]["tool_calls"]
    )
    t = r["trajectory"]
    rc, out, _ = show(capsys, oracle, "--case", r["id"], "--max-chars", 0)
    assert rc == 0 and f"== {r['id']} (suite t2, harness {r['harness']})" in out
    for k, v in r["scores"].items():
        assert f"  {k} {v:g} -- {r['rationales'][k]}" in out
    for section in ("trajectory:", "tool calls:", "hooks:", "reply:"):
        assert f"\n{section}\n" in out
    call = t["tool_calls"][0]
    args = json.dumps(call["arguments"], ensure_ascii=False)
    assert f"    -> {call['name']}({args})" in out  # the assistant's call
    assert f"  [tool {call['name']}] " in out  # the tool result message
    assert f"  {call['name']}({args}) ok: " in out  # the exchange
    hook = t["hook_events"][0]
    assert f"  {hook['hook']} @{hook['checkpoint']} passed" in out
    assert out.rstrip().endswith(t["reply"])
    system = t["messages"][0]["content"]
    assert system.splitlines()[-1] in out  # --max-chars 0: nothing cut
    _, cut, _ = show(capsys, oracle, "--case", r["id"], "--max-chars", 50)
    assert f"... [{len(system) - 50:,} more chars]" in cut
    assert system.splitlines()[-1] not in cut
    _, full, _ = show(capsys, oracle, "--full", "--limit", 2)
    assert full.count("\n== ") + full.startswith("== ") == 2
    rc, _, err = show(capsys, oracle, "--case", "nope")
    assert rc == 1 and "no case 'nope' in" in err and "ids look like 't2-00000'" in err


def test_control_characters_are_escaped(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # the list view cuts lines to the terminal
    evil = "buy now\x1b[2J\x1b]0;pwned\x07\u202eevil\rline\nnext"
    rec = case_record(
        "t1", "c\x1b[31m", {"success": 0.0}, {"lang": "\x1b[1men"}, reply=evil,
        rationales={"success": "said \x1b[5m" + evil},
    )  # fmt: skip
    write_suite(tmp_path, "t1", [rec])
    for argv in ([], ["--full"], ["--case", "c\x1b[31m"]):
        rc, out, _ = show(capsys, tmp_path, *argv)
        assert rc == 0 and "\x1b" not in out and "\x07" not in out
        assert "\u202e" not in out and "\r" not in out
        assert "\\x1b[2J" in out and "\\u202e" in out
    assert "buy now\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil\\rline\n    next" in out


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", ":2: invalid JSON"),
        ("[1, 2]", ":2: not a record (a JSON object with a string id)"),
        ('{"id": "x", "scores": [1]}', ":2: field 'scores' must be an object"),
        ('{"id": "x", "scores": {"success": "yes"}}', ":2: field 'scores.success'"),
        ('{"id": "x", "scores": {"success": true}}', "must be a number, got boolean"),
        ('{"id": "x", "trajectory": {"messages": [1]}}', "'trajectory.messages[0]'"),
        ('{"id": "x", "trajectory": {"messages": [{}]}}', ".role' is missing"),
        ('{"id": "x", "tags": {"k": [1]}}', ":2: field 'tags.k' must be"),
        ('{"id": "a"}', ":2: case id 'a' again (first on line 1)"),
    ],
)
def test_a_bad_line_is_named_by_path_and_line(tmp_path, capsys, line, message):
    path = write_suite(tmp_path, "t1", [case_record("t1", "a", {"success": 1.0})])
    with open(path, "a") as f:
        f.write(line + "\n")
    rc, out, err = show(capsys, tmp_path)
    assert rc == 1 and "Traceback" not in err
    assert err.startswith(f"hat eval: error: {path}{message}") or (
        err.startswith(f"hat eval: error: {path}:2: ") and message in err
    )


def test_a_torn_last_line_is_a_run_still_writing(tmp_path, capsys):
    path = write_suite(tmp_path, "t1", [case_record("t1", "a", {"success": 1.0})])
    with open(path, "a") as f:
        f.write('{"id": "b", "sco')
    assert show(capsys, tmp_path)[1].splitlines()[0].startswith("t1: 1 cases")


def test_what_run_may_name(runs, tmp_path, capsys):
    oracle, _ = runs
    root = tmp_path / "sweep"
    (root / "_steps").mkdir(parents=True)
    os.symlink(oracle, root / "_steps" / "eval-abc")
    (root / "hsa_sft").mkdir()
    os.symlink("../_steps/eval-abc", root / "hsa_sft" / "eval")
    assert open_run(root / "hsa_sft").path == root / "hsa_sft" / "eval"
    assert open_run(oracle / "t2").files == {"t2": oracle / "t2" / "records.jsonl"}
    assert list(open_run(oracle / "t2" / "records.jsonl").files) == ["t2"]
    _, out, _ = show(capsys, root / "hsa_sft", "--suite", "t2", "--limit", 1)
    assert out.startswith("t2: 6 cases")

    (root / "later").mkdir()
    os.symlink("../_steps/eval-def", root / "later" / "eval")
    work = tmp_path / "rl_workdir" / "eval"
    work.mkdir(parents=True)
    (work / "40.json").write_text("{}")
    errors = {
        root: "is a sweep root; name one of its runs, e.g. 'hsa_sft', 'later'",
        root / "later": "/eval links to ../_steps/eval-def, which does not exist",
        work.parent: "/eval holds training-time eval means (STEP.json)",
        tmp_path / "nope": "no such file or folder",
        root / "_steps": "no eval records here",
    }
    for path, message in errors.items():
        rc, _, err = show(capsys, path)
        assert rc == 1 and message in err, err
    rc, _, err = show(capsys, oracle, "--suite", "t9")
    assert "has no suite 't9' (its suites: t2)" in err


def test_compare_two_real_runs(runs, capsys):
    oracle, fixed = runs
    rc = hat(["eval", "compare", str(oracle), str(fixed), "--by", "none"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and out[:2] == [f"A: {oracle} (policy:oracle)",
                                   f"B: {fixed} (policy:fixed)"]  # fmt: skip
    assert out[-1].split() == [
        "t2", "all", "success", "6", "100.0", "0.0", "-100.0",
        "[-100.0,", "-21.9]", "*",  # the score interval of 6 losses in 6
    ]  # fmt: skip


@pytest.mark.parametrize("command", ["", "show", "compare"])
def test_help_prints(command, capsys):
    with pytest.raises(SystemExit) as e:
        hat(["eval", *command.split(), "--help"])
    assert e.value.code == 0 and "usage: hat eval" in capsys.readouterr().out
