"""Hostile harness folders: links, fifos, huge files, YAML aliases, lone
surrogates, terminal escapes in names. Each is refused with a `path:line:` error
and nothing outside the folder is read."""

import logging
import os
import re
import shutil
import threading

import pytest

from hat_jax.harness import HarnessError, builtin_path, load_harness
from hat_jax.harness.loader import MAX_ERRORS
from hat_jax.harness.sourcemap import MAX_FILE_BYTES, read_text
from hat_jax.printable import shown

M, QA, STOCK = "manifest.yaml", "skills/01_item_qa.md", "tools/02_check_stock.json"
LINK = "is a symbolic link (harness files must be regular files inside the folder)"
ERROR_LINE = re.compile(r"^(.+):(\d+): \S")
SURROGATE = (
    "text cannot be encoded as UTF-8: lone surrogate '\\u{}' (an unpaired \\u "
    "escape; in YAML a character above U+FFFF is one \\U0001F600-style escape)"
)


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "h"
    shutil.copytree(builtin_path("taolive_v1"), d)
    return d


@pytest.fixture
def outside(tmp_path):
    """A copy of the harness outside the folder: loading through a link to it
    would succeed, so only a refusal passes the tests."""
    d = tmp_path / "outside"
    shutil.copytree(builtin_path("taolive_v1"), d)
    return d


def errors_of(folder):
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    errors = info.value.errors
    assert errors and all(ERROR_LINE.match(e) for e in errors), errors
    return errors


def in_thread(fn, timeout=20.0):
    """Runs ``fn``; fails (instead of hanging the suite) if it blocks."""
    out = {}
    t = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked (a fifo was opened?)"
    return out.get("r")


def relink(path, target):
    path.unlink()
    os.symlink(target, path)


# --- Links ------------------------------------------------------------------------


def test_skill_linked_outside_is_refused(folder, outside):
    secret = outside / "secret.md"
    secret.write_text((folder / QA).read_text().replace("Answer", "SECRET Answer"))
    relink(folder / QA, secret)
    errors = errors_of(folder)
    assert errors == [f"{folder / QA}:1: {LINK}"]


def test_manifest_linked_outside_is_refused(folder, outside):
    relink(folder / M, outside / M)  # a valid manifest: following it would load
    assert errors_of(folder) == [f"{folder / M}:1: {LINK}"]


def test_manifest_linked_to_a_system_file_is_not_read(folder):
    relink(folder / M, "/proc/self/environ")
    (error,) = errors_of(folder)
    assert error == f"{folder / M}:1: {LINK}"


def test_skills_folder_linked_outside_is_one_error(folder, outside):
    shutil.rmtree(folder / "skills")
    os.symlink(outside / "skills", folder / "skills")
    errors = errors_of(folder)
    assert errors[0] == f"{folder / 'skills'}:1: {LINK}"
    assert not any(str(outside) in e for e in errors), errors  # nothing listed


def test_tools_folder_linked_to_etc_lists_nothing_of_etc(folder):
    shutil.rmtree(folder / "tools")
    os.symlink("/etc", folder / "tools")
    errors = errors_of(folder)
    assert errors == [f"{folder / 'tools'}:1: {LINK}"]


def test_tool_file_linked_to_a_folder_or_file(folder, outside):
    relink(folder / STOCK, outside / STOCK)
    os.symlink("/etc", folder / "tools" / "09_etc.json")
    errors = errors_of(folder)
    assert f"{folder / STOCK}:1: {LINK}" in errors
    assert f"{folder / 'tools' / '09_etc.json'}:1: {LINK}" in errors


def test_hidden_links_are_never_followed(folder):
    os.symlink("/etc/passwd", folder / "skills" / ".passwd.md")
    assert load_harness(folder) == load_harness(builtin_path("taolive_v1"))


def test_read_text_refuses_a_link_itself(folder, outside):
    relink(folder / QA, outside / QA)
    errors = []
    assert read_text(folder / QA, errors) is None
    assert errors == [f"{folder / QA}:1: {LINK}"]


# --- Fifos, devices, folders --------------------------------------------------------


def test_fifo_skill_is_refused_without_opening(folder):
    os.mkfifo(folder / "skills" / "09_fifo.md")
    errors = in_thread(lambda: errors_of(folder))
    assert errors == [
        f"{folder / 'skills' / '09_fifo.md'}:1: is a fifo, expected a regular file "
        "(harness files must be regular files inside the folder)"
    ]


def test_fifo_manifest_is_refused_without_opening(folder):
    (folder / M).unlink()
    os.mkfifo(folder / M)
    errors = in_thread(lambda: errors_of(folder))
    assert errors[0].startswith(f"{folder / M}:1: is a fifo, expected a regular file")


def test_read_text_of_a_fifo_does_not_block(tmp_path):
    # The race: a regular file swapped for a fifo after the folder was listed.
    os.mkfifo(tmp_path / "f")
    errors = []
    assert in_thread(lambda: read_text(tmp_path / "f", errors)) is None
    assert errors[0].startswith(f"{tmp_path / 'f'}:1: is a fifo")


def test_device_linked_is_refused(folder):
    os.symlink("/dev/zero", folder / "skills" / "09_zero.md")
    errors = in_thread(lambda: errors_of(folder))
    assert errors == [f"{folder / 'skills' / '09_zero.md'}:1: {LINK}"]


def test_tools_is_a_file(folder):
    shutil.rmtree(folder / "tools")
    (folder / "tools").write_text("not a folder")
    assert errors_of(folder) == [
        f"{folder / 'tools'}:1: is a regular file, expected a folder of *.json files "
        "(harness files must be regular files inside the folder)"
    ]


def test_subfolder_in_skills(folder):
    (folder / "skills" / "more.md").mkdir()
    p = folder / "skills" / "more.md"
    assert errors_of(folder) == [f"{p}:1: unexpected: skills/ holds only *.md files"]


# --- Size, aliases, surrogates -------------------------------------------------------


def test_huge_file_is_refused_unread(folder):
    p = folder / "skills" / "09_huge.md"
    head = "---\nname: huge\nkind: strategy\ndescription: Big.\n---\n\n"
    p.write_text(head + "x" * MAX_FILE_BYTES)
    assert errors_of(folder) == [
        f"{p}:1: file too large ({len(head) + MAX_FILE_BYTES:,} bytes; a harness "
        "file holds at most 1,000,000)"
    ]


def test_file_at_the_size_limit_loads(folder):
    p = folder / "skills" / "09_big.md"
    head = "---\nname: big\nkind: strategy\ndescription: Big.\n---\n\n"
    p.write_text(head + "x" * (MAX_FILE_BYTES - len(head) - 1) + "\n")
    assert len(load_harness(folder).skill("big").body) == MAX_FILE_BYTES - len(head) - 1


def test_yaml_anchor_and_alias_are_refused(folder):
    m = folder / M
    text = m.read_text()
    assert text.count("\nrules:\n") == 1
    m.write_text(text.replace("\nrules:\n", "\nrules: &r\n") + "extra: *r\n")
    line = text[: text.index("\nrules:\n")].count("\n") + 2
    assert errors_of(folder) == [
        f"{m}:{line}: invalid YAML: &r: anchors and aliases are not allowed in "
        "harness files (write the value out)"
    ]


def test_yaml_alias_bomb_is_refused_before_expanding(folder):
    bomb = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    bomb += [
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}]"
        for p, c in zip("abcdefgh", "bcdefghi")
    ]
    (folder / M).write_text("\n".join(bomb) + "\n")
    (error,) = errors_of(folder)
    assert error.startswith(f"{folder / M}:1: invalid YAML: &a: anchors and aliases")


def test_alias_in_skill_front_matter_has_the_file_line(folder):
    p = folder / QA
    text = p.read_text()
    p.write_text(text.replace("kind: reply", "kind: &k reply\nalso: *k", 1))
    assert errors_of(folder) == [
        f"{p}:3: invalid YAML: &k: anchors and aliases are not allowed in harness "
        "files (write the value out)"
    ]


def test_lone_surrogate_in_json_is_refused(folder):
    p = folder / STOCK
    text = p.read_text()
    line = text[: text.index('"description"')].count("\n") + 1
    p.write_text(text.replace('"description": "', '"description": "\\ud800', 1))
    assert errors_of(folder) == [f"{p}:{line}: " + SURROGATE.format("d800")]


def test_lone_surrogate_in_a_json_key(folder):
    p = folder / STOCK
    p.write_text(p.read_text().replace('"link_id": {', '"link\\udfff": {', 1))
    errors = errors_of(folder)
    assert any(
        e.startswith(f"{p}:") and "key cannot be encoded as UTF-8: '\\udfff'" in e
        for e in errors
    ), errors


def test_lone_surrogate_in_yaml_is_refused(folder):
    m = folder / M
    text = m.read_text()
    assert text.count('version: "1.0"') == 1
    line = text[: text.index("version:")].count("\n") + 1
    m.write_text(text.replace('version: "1.0"', 'version: "1.0\\ud83d"'))
    assert errors_of(folder) == [f"{m}:{line}: " + SURROGATE.format("d83d")]


def test_surrogate_pairs(folder):
    # JSON pairs \u escapes into one character; YAML does not (it has \U).
    p = folder / STOCK
    edit = p.read_text().replace('"description": "', '"description": "\\ud83d\\ude00')
    p.write_text(edit)
    assert load_harness(folder).tool("check_stock").description[0] == "\U0001f600"
    m = folder / M
    m.write_text(m.read_text().replace('version: "1.0"', 'version: "1.0\\U0001F600"'))
    assert load_harness(folder).version == "1.0\U0001f600"
    m.write_text(m.read_text().replace("1.0\\U0001F600", "1.0\\ud83d\\ude00"))
    assert errors_of(folder)[0].endswith(SURROGATE.format("d83d"))


# --- Printing, shadowing, bounded errors ---------------------------------------------


def test_terminal_escapes_in_file_names_are_shown_escaped(folder):
    (folder / "skills" / "a\x1b]0;pwned\x07b.txt").write_text("hi")
    (folder / "skills" / "c\u202ed.txt").write_text("hi")
    errors = errors_of(folder)
    assert not any(re.search("[\x00-\x1f\x7f-\x9f\u202e]", e) for e in errors)
    assert f"{folder / 'skills'}/a\\x1b]0;pwned\\x07b.txt:1: unexpected" in errors[0]
    assert f"{folder / 'skills'}/c\\u202ed.txt:1: unexpected" in errors[1]


def test_non_utf8_file_name_can_be_printed(folder):
    name = os.fsdecode(b"bad\xffname.txt")  # a lone surrogate in Python
    (folder / "skills" / name).write_text("hi")
    (error,) = errors_of(folder)
    assert "bad\\udcffname.txt:1: unexpected" in error
    error.encode("utf-8")  # printable: no lone surrogate left


def test_escape_codes_in_values_are_shown_escaped(folder):
    p = folder / QA
    p.write_text(p.read_text().replace("name: item_qa", 'name: "item\\e[2Jqa"', 1))
    errors = errors_of(folder)
    assert not any("\x1b" in e for e in errors)
    assert any("name: holds the control character '\\x1b'" in e for e in errors)


def test_shown():
    assert shown("plain 中文 😀 \\x") == "plain 中文 😀 \\x"
    assert (
        shown("a\x1b[31mb\x7f\x9b\n\t\r\x00") == "a\\x1b[31mb\\x7f\\x9b\\n\\t\\r\\x00"
    )
    assert shown("\u202eevil\u2066") == "\\u202eevil\\u2066"
    assert shown("x\ud800") == "x\\ud800"
    assert shown("a\nb\tc\x1b", keep="\n\t") == "a\nb\tc\\x1b"
    assert shown(shown("a\x1b")) == shown("a\x1b")


def test_local_folder_shadowing_a_builtin_says_so(tmp_path, monkeypatch, caplog):
    local = tmp_path / "taolive_v1"
    shutil.copytree(builtin_path("taolive_v2"), local)  # a different harness
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="hat_jax.harness.loader"):
        h = load_harness("taolive_v1")
    assert h.version == load_harness(builtin_path("taolive_v2")).version
    (record,) = caplog.records
    assert record.getMessage() == (
        f"harness 'taolive_v1': loading the folder {local}, not the builtin harness "
        "of that name (rename the folder to load the builtin)"
    )
    caplog.clear()
    monkeypatch.chdir(tmp_path / "taolive_v1" / "skills")  # no local copy here
    assert load_harness("taolive_v1") == load_harness(builtin_path("taolive_v1"))
    assert not caplog.records


def test_errors_are_capped(folder):
    for i in range(MAX_ERRORS + 50):
        (folder / "skills" / f"n{i:03d}.txt").write_text("")
    with pytest.raises(HarnessError) as info:
        load_harness(folder)
    e = info.value
    assert e.total == MAX_ERRORS + 50 and len(e.errors) == MAX_ERRORS + 1
    assert e.errors[-1] == f"{folder}:1: ... and 50 more errors (first 200 shown)"
    assert all(ERROR_LINE.match(x) for x in e.errors)
