"""Plugin commands and stages: an absent package is skipped, a broken one is
listed and reports its import error when run (hat_jax/cli/plugins.py)."""

import json
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from hat_jax.cli import main as hat_main
from hat_jax.cli import plugins, train_cmd

GOOD = '''"""A fine plugin."""


def add_arguments(p):
    p.add_argument("--n", type=int, default=1)


def run(args):
    print(f"good {args.n}")
    return 0
'''
BODIES = {  # module text -> the reason its command reports
    "raise RuntimeError('boom at import')\n": "RuntimeError: boom at import",
    "import hat_no_such_dependency_xyz\n": (
        "ModuleNotFoundError: No module named 'hat_no_such_dependency_xyz'"
    ),
    "from os import no_such_name_xyz\n": "ImportError: cannot import name",
    "def broken(:\n": "SyntaxError: ",
}


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """Writes packages under tmp_path (importable), forgets them afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def write(package: str, text: str) -> str:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "cmd.py").write_text(text)
        made.append(package)
        return f"{package}.cmd"

    yield write
    for name in list(sys.modules):
        if name.split(".")[0] in made:
            del sys.modules[name]


def _commands(monkeypatch, **values):
    eps = [EntryPoint(n, v, hat_main.COMMAND_GROUP) for n, v in values.items()]
    monkeypatch.setattr(hat_main, "entry_points", lambda group: eps)


def test_absent_package_is_skipped_and_good_plugin_runs(
    plugin_dir, monkeypatch, capsys
):
    _commands(
        monkeypatch, good=plugin_dir("hat_tp_good", GOOD), ghost="hat_tp_absent.cmd"
    )
    assert hat_main.main(["good", "--n", "3"]) == 0
    assert capsys.readouterr().out == "good 3\n"
    with pytest.raises(SystemExit):  # not installed here: not a command at all
        hat_main.main(["ghost"])
    assert "invalid choice: 'ghost'" in capsys.readouterr().err


@pytest.mark.parametrize("body", list(BODIES))
def test_broken_plugin_is_listed_and_reports_its_error(
    plugin_dir, monkeypatch, capsys, body
):
    package = f"hat_tp_broken{list(BODIES).index(body)}"
    good, broken = plugin_dir("hat_tp_good", GOOD), plugin_dir(package, body)
    _commands(monkeypatch, good=good, broken=broken)
    assert hat_main.main(["broken", "--any", "args", "--help"]) == 1
    err = capsys.readouterr().err
    prefix = "hat broken: error: the command could not be loaded: "
    assert err.startswith(prefix + BODIES[body]) and "Traceback" not in err
    assert hat_main.main(["good"]) == 0  # the others still work


def test_help_lists_a_broken_plugin_with_a_note(plugin_dir, monkeypatch, capsys):
    _commands(monkeypatch, broken=plugin_dir("hat_tp_help", "1 / 0\n"))
    with pytest.raises(SystemExit) as exit_:
        hat_main.main(["--help"])
    assert exit_.value.code == 0
    out, err = capsys.readouterr()
    assert "broken" in out and "could not be loaded: ZeroDivisionError" in out
    assert err == (
        "hat: note: broken could not be loaded: ZeroDivisionError: division by zero\n"
    )


def test_is_absent_only_for_the_plugins_own_package():
    def missing(name):
        return ModuleNotFoundError(f"No module named {name!r}", name=name)

    assert plugins.is_absent("pkg.cli", missing("pkg"))
    assert plugins.is_absent("pkg.cli:obj", missing("pkg"))
    assert not plugins.is_absent("pkg.cli", missing("pkg.cli"))  # installed, broken
    assert not plugins.is_absent("pkg.cli", missing("numpy_xyz"))  # its dependency
    assert not plugins.is_absent("pkg.cli", ImportError("pkg"))


def test_load_entry_points_keeps_objects_and_reasons(plugin_dir):
    eps = [
        EntryPoint("obj", "json:dumps", "g"),
        EntryPoint("gone", "hat_tp_nowhere.mod", "g"),
        EntryPoint("bad", plugin_dir("hat_tp_bad", "raise KeyError('k')\n"), "g"),
    ]
    loaded, broken = plugins.load_entry_points(eps)
    assert loaded == {"obj": json.dumps}
    assert broken == {"bad": plugins.Broken("bad", "hat_tp_bad.cmd", "KeyError: 'k'")}


def test_broken_stage_reports_its_error(plugin_dir, monkeypatch, tmp_path, capsys):
    value = plugin_dir("hat_tp_stage", "raise RuntimeError('stage boom')\n")
    eps = [EntryPoint("boom", f"{value}:run", train_cmd.STAGE_GROUP)]
    monkeypatch.setattr(train_cmd, "entry_points", lambda group: eps)
    cfg = Path(__file__).resolve().parents[3] / "experiments/configs/sft_tiny.py"
    argv = ["train", "boom", f"--config={cfg}", "--workdir", str(tmp_path / "w")]
    assert hat_main.main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "hat train: error: stage 'boom' could not be loaded: RuntimeError: stage boom\n"
    )
