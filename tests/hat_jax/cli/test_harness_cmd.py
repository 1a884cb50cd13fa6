"""`hat harness validate|render` on builtins and broken folders."""

import argparse
import shutil

import pytest

from hat_jax.cli import harness_cmd
from hat_jax.harness import builtin_path


def run(*argv):
    p = argparse.ArgumentParser(prog="hat harness")
    harness_cmd.add_arguments(p)
    return harness_cmd.run(p.parse_args(argv))


@pytest.mark.parametrize("name", ["taolive_v1", "taolive_v2"])
def test_validate_builtins(name, capsys):
    assert run("validate", name) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK taolive@") and "skills" in out and "tools" in out


def test_validate_a_folder_path(capsys):
    assert run("validate", str(builtin_path("taolive_v1"))) == 0


def test_validate_broken_folder(tmp_path, capsys):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("turn_limit: 6", "turn_limit: -2"))
    (d / "tools" / "02_check_stock.json").write_text('{"name": "check_stock",\n}')
    assert run("validate", str(d)) == 1
    captured = capsys.readouterr()
    assert f"{m}:32: turn_limit: expected an integer 1..100" in captured.err
    assert f"{d / 'tools' / '02_check_stock.json'}:2: invalid JSON" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_missing_folder(tmp_path, capsys):
    assert run("validate", str(tmp_path / "nope")) == 1
    assert ":1: expected a harness folder" in capsys.readouterr().err


def test_render_prints_the_persona(capsys):
    assert run("render", "taolive_v1") == 0
    out = capsys.readouterr().out
    assert "You are Xiaotao" in out and "<tools>" in out


def test_render_with_room_context_and_format(capsys):
    room = '{"on_screen": "link 3", "viewers": 88}'
    assert run("render", "taolive_v2", "--room-context", room, "--format", "xml") == 0
    out = capsys.readouterr().out
    assert "<room_context" in out and "on_screen: link 3\nviewers: 88" in out
    assert run("render", "taolive_v2", "--room-context", '"flash sale"') == 0
    assert "flash sale" in capsys.readouterr().out


@pytest.mark.parametrize(
    "room", ["{not json", "[1, 2]", '{"a": ' + "[" * 5000 + "]" * 5000 + "}", "NaN"]
)
def test_render_rejects_bad_room_context(room, capsys):
    assert run("render", "taolive_v1", "--room-context", room) == 1
    err = capsys.readouterr().err
    assert err.startswith("--room-context") and "Traceback" not in err


def test_plugs_into_hat_main(monkeypatch, capsys):
    from hat_jax.cli import main

    monkeypatch.setitem(main.COMMANDS, "harness", harness_cmd)
    assert main.main(["harness", "validate", "taolive_v2"]) == 0
    assert capsys.readouterr().out.startswith("OK taolive@2.0")


def test_render_compact(capsys):
    assert run("render", "taolive_v2", "--format", "compact") == 0
    out = capsys.readouterr().out
    assert out.startswith("# Who you are\nYou are Xiaotao") and "<tools>" not in out
    assert "\ncheck_stock(link_id: int>=1, sku?: str) - Check stock" in out
    assert "\nquery_item(item: {link_id: int>=1, fields?: [" in out


def test_printed_names_are_escaped(tmp_path, capsys):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("name: taolive", 'name: "tao\\e]0;x\\alive"'))
    t = d / "tools" / "02_check_stock.json"  # JSON text can hold any control code
    t.write_text(t.read_text().replace('"Check', '"\\u001b[2JCheck', 1))
    assert run("validate", str(d)) == 1  # control codes in harness text: refused
    err = capsys.readouterr().err
    assert "name: holds the control character '\\x1b'" in err and "\x1b" not in err
    assert "02_check_stock.json:3: description: holds the control character" in err
    # run-time text (the room context) may hold them: printed escaped
    room = '{"on_screen": "\\u001b[2Jlink 3"}'
    assert (
        run("render", "taolive_v1", "--room-context", room, "--format", "compact") == 0
    )
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2Jlink 3" in out
    assert "\n" in out.strip()  # line breaks kept


def test_error_count_is_the_total_and_the_dir_is_escaped(tmp_path, capsys):
    d = tmp_path / "h\x1b[2J"
    shutil.copytree(builtin_path("taolive_v1"), d)
    for i in range(250):
        (d / "skills" / f"n{i:03d}.txt").write_text("")
    assert run("validate", str(d)) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert err.endswith(f"250 error(s) in {tmp_path}/h\\x1b[2J\n")
    assert err.count("\n") == 202  # 200 errors, "... and 50 more", the count


def test_local_folder_shadowing_a_builtin(tmp_path, monkeypatch, capsys, caplog):
    shutil.copytree(builtin_path("taolive_v2"), tmp_path / "taolive_v1")
    monkeypatch.chdir(tmp_path)
    assert run("validate", "taolive_v1") == 0
    assert capsys.readouterr().out.startswith("OK taolive@2.0")  # the local one
    assert [r.getMessage() for r in caplog.records] == [
        f"harness 'taolive_v1': loading the folder {tmp_path / 'taolive_v1'}, not "
        "the builtin harness of that name (rename the folder to load the builtin)"
    ]
