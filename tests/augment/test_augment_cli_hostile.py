"""`hat augment` and `python -m augment.diversity` on bad flags and op specs: a
usage error naming the flag and the spec's op (exit 2), before any work."""

from __future__ import annotations

import pytest

from augment import parse_spec
from augment.diversity import main as diversity_main
from hat_jax.cli.main import main

# spec -> what the message says (after "argument --ops: ")
BAD_SPECS = {
    " ": "expected an op spec like 'rename_tools|format(xml)', got ' '",
    "reorder_skill_rules(numbered=true,keep=-5)": "keep=-5: expected 0 to 50",
    "reorder_skill_rules(keep=1000000)": "keep=1000000: expected 0 to 50",
    "add_distractor_tools(n=-1)": "n=-1: expected 0 to 8",
    "format(xml))": "spec op 1 ('format(xml))'): unexpected ')' at column 4",
    "format((xml)": "unexpected '(' at column 1 of the arguments",
    "format(xml)(plain)": "unexpected ')' at column 4 of the arguments",
    "format(xml|rename_tools": "unbalanced '(': a ')' is missing",
    "rename_tools)|format": "spec op 1 ('rename_tools)|format'): expected name or",
    "format(')": "unclosed quote ' in the arguments",
    "format(colour=red)": "format has no param 'colour' (params: fmt)",
    "rename_tools(frac=1e999)": "frac: number 1e999 is out of range",
    "rename_tools(frac=nan)": "frac: expected a number, got 'nan'",
    "add_distractor_tools(n=" + "9" * 40 + ")": "n: number 999",
    "add_distractor_tools(n=" + "9" * 5000 + ")": "spec: 5024 characters, expected",
    "add_distractor_tools(n=٣)": "n: expected an integer, got '٣'",
    "add_distractor_tools(n=1_000)": "n: expected an integer, got '1_000'",
    "format(fmt=)": "fmt: no value after '=' (leave fmt out, or '')",
    "nest_args(wrapper= )": "wrapper: no value after '='",
    "format(xml,)": "empty argument (two ',' in a row?)",
    "rename_tools||format": "spec op 2 (''): empty op",
    "|".join(["rename_tools"] * 65): "spec: 65 ops, expected at most 64",
    "sign_off_skills(tag=nope)": "... (600 in all)]",
}


def _usage_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("usage: hat augment")
    return err


@pytest.mark.parametrize("spec", sorted(BAD_SPECS), ids=lambda s: s[:40])
def test_bad_specs_are_usage_errors(tmp_path, capsys, spec):
    out = tmp_path / "aug"
    err = _usage_error(
        capsys, ["augment", "taolive_v1", "--ops", spec, "--out", str(out)]
    )
    assert "argument --ops: " in err and BAD_SPECS[spec] in err, err
    assert len(err) < 1000  # a huge spec is not echoed whole
    assert not out.exists()


@pytest.mark.parametrize(
    "flag, value, what",
    [
        ("--seed", "-1", "argument --seed: expected an integer 0..4294967295, got -1"),
        ("--seed", "x", "argument --seed: expected an integer, got 'x'"),
        ("--family", "nope", "argument --family: unknown family 'nope'; have "),
        ("--out", " ", "argument --out: expected a non-empty value"),
    ],
)
def test_bad_flags_are_usage_errors(tmp_path, capsys, flag, value, what):
    argv = ["augment", "taolive_v1", "--out", str(tmp_path / "a"), flag, value]
    if flag != "--family":
        argv += ["--ops", "rename_tools"]
    assert what in _usage_error(capsys, argv)


def test_the_spec_parser_keeps_well_formed_specs():
    """The strict grammar still reads what ``format_spec`` writes."""
    spec = "rename_tools(frac=.5)|nest_args(frac=1.,wrapper='args')|format()"
    assert parse_spec(spec) == [
        ("rename_tools", {"frac": 0.5}),
        ("nest_args", {"frac": 1.0, "wrapper": "args"}),
        ("format", {}),
    ]
    assert parse_spec("reorder_skill_rules(numbered=true,keep=50)") == [
        ("reorder_skill_rules", {"numbered": True, "keep": 50})
    ]
    assert parse_spec("format(fmt='')|add_sign_off(tag='')") == [
        ("format", {"fmt": ""}),
        ("add_sign_off", {"tag": ""}),
    ]


@pytest.mark.parametrize(
    "argv, what",
    [
        (["taolive_v1", "--seed", "-1"], "argument --seed: expected an integer 0.."),
        (["taolive_v1", "--n", "0"], "argument --n: expected an integer 1..1000000"),
        (["taolive_v1", "--n", "-5"], "argument --n: expected an integer 1.."),
    ],
)
def test_diversity_flags_are_usage_errors(capsys, argv, what):
    with pytest.raises(SystemExit) as e:
        diversity_main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err


def test_diversity_of_a_missing_harness_is_one_error(tmp_path, capsys):
    assert diversity_main([str(tmp_path / "nope"), "--n", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("augment.diversity: error: ") and "nope" in err
