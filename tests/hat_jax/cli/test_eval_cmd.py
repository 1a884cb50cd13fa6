"""`hat eval ifeval-score` and the `hat.eval_commands` plugin hook."""

import json
import types

import pytest

from hat_jax.cli import eval_cmd, main
from hat_jax.eval import ifeval


@pytest.fixture(scope="module")
def prompts():
    return ifeval.load_prompts()


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_ifeval_score_writes_records_and_summary(tmp_path, prompts, capsys):
    rows = [
        {"prompt": prompts[1].prompt, "response": "Thou art welcome to Kyoto."},
        {"prompt": prompts[1].prompt.upper(), "response": "x"},  # not an IFEval prompt
    ]
    responses = _write(tmp_path / "responses.jsonl", rows[:1])
    out = tmp_path / "out"
    assert main.main(["eval", "ifeval-score", "--responses", str(responses),
                      "--out", str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "prompt_level_strict=1.0000" in printed and "540 IFEval prompts" in printed
    records = [json.loads(line) for line in open(out / "records.jsonl")]
    assert len(records) == 1 and records[0]["strict"] == [True]
    summary = json.loads((out / "summary.json").read_text())
    assert {m: summary[m] for m in ifeval.METRICS} == dict.fromkeys(ifeval.METRICS, 1.0)
    assert summary["by_instruction"]["punctuation:no_comma"]["n"] == 1
    md = (out / "summary.md").read_text()
    assert "| instruction_level_loose | 1.0000 |" in md

    _write(responses, rows)
    assert main.main(["eval", "ifeval-score", "--responses", str(responses),
                      "--out", str(out)]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert f"{responses}:2: prompt is not one of the IFEval prompts" in err


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"prompt": "a", "response": "b"}\n{"prompt": "a",\n', ":2: invalid JSON"),
        ('["a", "b"]\n', ":1: expected a JSON object with string fields 'prompt' and "),
        ('{"prompt": "a", "answer": "b"}\n', ":1: expected a JSON object with string"),
        ("\n\n", "no responses"),
        (
            '{"prompt": "a", "response": "b", "instruction_id_list": ["x:y"], '
            '"kwargs": [{}]}\n',
            ":1: unknown IFEval instruction 'x:y'",
        ),
    ],
)
def test_malformed_responses_are_reported(tmp_path, capsys, text, message):
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    assert main.main(["eval", "ifeval-score", "--responses", str(f),
                      "--out", str(tmp_path / "o")]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("hat eval: error: ") and message in err
    assert str(f) in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_missing_file_is_reported(tmp_path, capsys):
    argv = ["eval", "ifeval-score", "--responses", str(tmp_path / "nope.jsonl")]
    assert main.main([*argv, "--out", str(tmp_path)]) == 1
    assert "nope.jsonl" in capsys.readouterr().err


def test_plugins_add_subcommands_and_builtins_win(monkeypatch, capsys):
    def add_arguments(p):
        p.add_argument("--suite", default="t1")

    plugin = types.SimpleNamespace(
        __doc__="Run a suite.\n\nMore.",
        add_arguments=add_arguments,
        run=lambda args: print(f"ran {args.suite}") or 0,
    )
    impostor = types.SimpleNamespace(__doc__="x", add_arguments=None, run=None)

    class EP:
        def __init__(self, name, value):
            self.name, self.value = name, value

    objects = {"pkg.run": plugin, "pkg.impostor": impostor}

    def load_object(value):
        if value == "gone.mod":  # its package is not installed: skipped
            raise ModuleNotFoundError("No module named 'gone'", name="gone")
        if value == "pkg.broken":  # installed but broken: listed, says why
            raise ImportError("cannot import name 'x' from 'pkg.dep'")
        return objects[value]

    eps = [EP("run", "pkg.run"), EP("ifeval-score", "pkg.impostor")]
    eps += [EP("gone", "gone.mod"), EP("broken", "pkg.broken")]
    monkeypatch.setattr(eval_cmd, "entry_points", lambda group: eps)
    monkeypatch.setattr(eval_cmd.plugins, "load_object", load_object)
    subs = eval_cmd.subcommands()
    assert subs["run"][0] == "Run a suite." and "gone" not in subs
    assert subs["ifeval-score"] == eval_cmd.SUBCOMMANDS["ifeval-score"]
    assert main.main(["eval", "broken"]) == 1
    err = capsys.readouterr().err
    assert "could not be loaded: ImportError: cannot import name 'x'" in err
    assert main.main(["eval", "run", "--suite", "t2"]) == 0
    assert capsys.readouterr().out == "ran t2\n"
