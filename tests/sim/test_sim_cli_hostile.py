"""`hat sim generate` / `hat sim report` on bad flags and files: a usage error
naming the flag (exit 2) or one error line (exit 1), before any simulation."""

from __future__ import annotations

import json

import pytest

from hat_jax.cli.main import main
from hat_jax.harness import LOAD_SKILL, load_harness
from sim.datasets import generate, make_cases, write_dataset


def _generate(tmp_path, *flags: str) -> list[str]:
    out = str(tmp_path / "d.jsonl")
    return [
        "sim",
        "generate",
        "--harness",
        "taolive_v1",
        "--n",
        "2",
        *flags,
        "--out",
        out,
    ]


@pytest.mark.parametrize(
    "flag, value, what",
    [
        (
            "--ops",
            "nope",
            "argument --ops: spec op 1 ('nope'): unknown op 'nope'; have [",
        ),
        ("--ops", " ", "argument --ops: expected an op spec"),
        ("--ops", "format(xml", "unbalanced '(': a ')' is missing"),
        ("--family", "nope", "argument --family: unknown family 'nope'; have "),
        ("--seed", "-1", "argument --seed: expected an integer 0..4294967295, got -1"),
        ("--n", "0", "argument --n: expected an integer 1..10000000, got 0"),
        ("--n", str(10**12), "argument --n: expected an integer 1..10000000"),
        ("--fault-rate", "nan", "argument --fault-rate: expected a finite number"),
        ("--fault-rate", "-1", "argument --fault-rate: expected a number >= 0"),
        ("--fault-rate", "2", "argument --fault-rate: expected a number <= 1"),
        ("--messages-per-room", "0", "argument --messages-per-room: expected an"),
        ("--harness", "", "argument --harness: expected a non-empty value"),
        ("--out", " ", "argument --out: expected a non-empty value"),
    ],
)
def test_bad_generate_flags_are_usage_errors(tmp_path, capsys, flag, value, what):
    with pytest.raises(SystemExit) as e:
        main([*_generate(tmp_path), flag, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err, err
    assert not (tmp_path / "d.jsonl").exists()


def test_out_a_folder_is_refused_before_simulating(tmp_path, capsys):
    argv = _generate(tmp_path)
    argv[-1] = str(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        err == f"hat sim: error: --out {tmp_path} is a folder (expected a JSONL file)\n"
    )


def test_report_escapes_control_characters_of_skill_names(tmp_path, capsys):
    """Skill names come from the file: a terminal escape is shown, not sent."""
    h = load_harness("taolive_v1")
    (traj,) = generate(h, make_cases("dev", 0, 1))
    load = next(c for c in traj.tool_calls if c.name == LOAD_SKILL)
    load.arguments["name"] = "\x1b[2Jevil\u202e"
    path = tmp_path / "d.jsonl"
    write_dataset([traj], path)
    for extra, esc in (([], "\\x1b"), (["--json"], "\\u001b")):
        assert main(["sim", "report", str(path), *extra]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out
        assert f"{esc}[2Jevil\\u202e" in out
    assert json.loads(out)["skills"] == {"\x1b[2Jevil\u202e": 1}  # still JSON
