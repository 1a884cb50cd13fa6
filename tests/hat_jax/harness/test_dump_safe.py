"""`dump_harness` never writes or deletes through a link, replaces only what
`load_harness` reads, and leaves the target as it was when it fails."""

import os

import pytest

from hat_jax.cli.main import main
from hat_jax.harness import dump, dump_harness, load_harness
from hat_jax.harness.spec import Skill


@pytest.fixture(scope="module")
def v1():
    return load_harness("taolive_v1")


@pytest.fixture(scope="module")
def v2():
    return load_harness("taolive_v2")


def snapshot(root):
    """Every entry under ``root`` (links not followed): path -> bytes or kind."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = f.read()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture
def old(tmp_path, v1):
    """A dumped v1, and a copy of it outside that links point at."""
    out = dump_harness(v1, tmp_path / "out")
    dump_harness(v1, tmp_path / "elsewhere")
    return out


def test_symlinked_target_folder_is_refused(tmp_path, v1, v2):
    target = dump_harness(v1, tmp_path / "real")
    before = snapshot(tmp_path)
    os.symlink(target, tmp_path / "link")
    with pytest.raises(ValueError) as info:
        dump_harness(v2, tmp_path / "link", overwrite=True)
    assert str(info.value) == (
        f"{tmp_path / 'link'}: is a symbolic link, expected a folder (links are not "
        "followed); nothing was written or deleted"
    )
    after = snapshot(tmp_path)
    assert after.pop("link") == ("link", str(target)) and after == before


@pytest.mark.parametrize("sub", ["skills", "tools"])
def test_symlinked_subfolder_is_refused(tmp_path, old, v2, sub):
    elsewhere = tmp_path / "elsewhere"
    (old / sub).rename(tmp_path / "moved")
    os.symlink(elsewhere / sub, old / sub)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=f"^{old / sub}: is a symbolic link, "):
        dump_harness(v2, old, overwrite=True)
    assert snapshot(tmp_path) == before  # nothing deleted, here or elsewhere
    assert load_harness(elsewhere) == load_harness("taolive_v1")


def test_symlinked_file_inside_is_refused(tmp_path, old, v2):
    victim = tmp_path / "elsewhere" / "skills" / "01_item_qa.md"
    (old / "skills" / "01_item_qa.md").unlink()
    os.symlink(victim, old / "skills" / "01_item_qa.md")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as info:
        dump_harness(v2, old, overwrite=True)
    assert str(info.value) == (
        f"{old / 'skills' / '01_item_qa.md'}: is a symbolic link (links are not "
        "followed); nothing was written or deleted"
    )
    assert snapshot(tmp_path) == before


def test_symlinked_manifest_is_not_written_through(tmp_path, old, v2):
    victim = tmp_path / "elsewhere" / "manifest.yaml"
    (old / "manifest.yaml").unlink()
    os.symlink(victim, old / "manifest.yaml")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="manifest.yaml: is a symbolic link"):
        dump_harness(v2, old, overwrite=True)
    assert snapshot(tmp_path) == before


def test_fifo_and_foreign_files_stop_the_dump(tmp_path, old, v2):
    os.mkfifo(old / "tools" / "09_pipe.json")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="09_pipe.json: is a fifo, not a harness"):
        dump_harness(v2, old, overwrite=True)
    assert snapshot(tmp_path) == before
    os.unlink(old / "tools" / "09_pipe.json")
    (old / "skills" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="notes.txt: is not a \\*.md file"):
        dump_harness(v2, old, overwrite=True)
    assert (old / "skills" / "notes.txt").read_text() == "mine"


def test_target_is_a_file(tmp_path, v1):
    (tmp_path / "f").write_text("keep")
    with pytest.raises(ValueError, match="is a regular file, expected a folder"):
        dump_harness(v1, tmp_path / "f")
    assert (tmp_path / "f").read_text() == "keep"


def test_failed_new_dump_leaves_nothing(tmp_path, v1):
    bad = Skill("bad", "strategy", "Bad.", "lone \ud800 surrogate")
    with pytest.raises(ValueError) as info:
        dump_harness(v1.replace(skills=(*v1.skills, bad)), tmp_path / "new")
    assert str(info.value) == (
        "skills/06_bad.md: cannot be written as UTF-8 (character \\ud800); "
        "nothing was written"
    )
    assert os.listdir(tmp_path) == []


def test_failure_while_writing_keeps_the_old_harness(
    tmp_path, old, v1, v2, monkeypatch
):
    (old / "README.txt").write_text("notes")
    before = snapshot(tmp_path)
    real = dump._write_tree

    def half(root, files):  # writes part of the new content, then the disk is full
        real(root, dict(list(files.items())[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dump, "_write_tree", half)
    with pytest.raises(OSError, match="No space left"):
        dump_harness(v2, old, overwrite=True)
    assert snapshot(tmp_path) == before  # no temporary folder left either
    assert load_harness(old) == v1
    with pytest.raises(OSError, match="No space left"):
        dump_harness(v2, tmp_path / "fresh")
    assert snapshot(tmp_path) == before


def test_overwrite_replaces_only_the_harness(tmp_path, old, v2):
    (old / "README.txt").write_text("notes")
    (old / "skills" / ".hidden").write_text("x")
    dump_harness(v2, old, overwrite=True, extra={"mapping.json": "{}\n"})
    assert load_harness(old) == v2
    assert (old / "README.txt").read_text() == "notes"
    assert (old / "mapping.json").read_text() == "{}\n"
    assert sorted(os.listdir(old)) == [
        "README.txt",
        "manifest.yaml",
        "mapping.json",
        "skills",
        "tools",
    ]
    assert len(os.listdir(old / "skills")) == len(v2.skills)  # old files gone
    assert sorted(os.listdir(tmp_path)) == ["elsewhere", "out"]  # no temporaries


def test_new_folder_permissions_follow_the_umask(tmp_path, v1):
    out = dump_harness(v1, tmp_path / "a" / "b")
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~mask
    assert load_harness(out) == v1


def test_extra_file_names_are_plain(tmp_path, v1):
    for name in ["../x.json", "skills", "manifest.yaml", ".hidden", ""]:
        with pytest.raises(ValueError, match="extra file name"):
            dump_harness(v1, tmp_path / "o", extra={name: "x"})
    assert os.listdir(tmp_path) == []


def test_existing_empty_folder_needs_no_overwrite(tmp_path, v1):
    (tmp_path / "empty").mkdir()
    assert load_harness(dump_harness(v1, tmp_path / "empty")) == v1


UNWRITABLE = [
    "/proc/hat-dump-test",  # a new folder: its temporary sibling cannot be made
    "/proc/sys",  # an existing folder: nothing can be made inside it
    "/proc/hat-dump-test/a/b",  # its parents cannot be made either
]


@pytest.mark.skipif(not os.path.isdir("/proc/sys"), reason="needs Linux /proc")
@pytest.mark.parametrize("target", UNWRITABLE)
def test_unwritable_destination_is_named(v1, target):
    with pytest.raises(OSError) as e:
        dump_harness(v1, target)
    msg = str(e.value)  # the errno's words depend on the kernel
    assert msg.startswith(f"{target}: cannot write the harness there (")
    assert msg.endswith("); nothing was written") and ".tmp-" not in msg


@pytest.mark.skipif(not os.path.isdir("/proc/sys"), reason="needs Linux /proc")
def test_augment_cli_names_an_unwritable_out(capsys):
    out = "/proc/hat-dump-test"
    assert main(["augment", "taolive_v1", "--ops", "rename_tools", "--out", out]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and ".tmp-" not in err
    assert f"hat augment: error: {out}: cannot write the harness there (" in err
