"""`hat augment --out`: links in the output folder are refused, nothing is written
or deleted through them, and mapping.json is written with the harness."""

import os
import shutil

import pytest

from hat_jax.cli.main import main
from hat_jax.harness import builtin_path, load_harness

SPEC = "rename_tools|format(xml)"


def augment(out, *more):
    return main(["augment", "taolive_v1", "--ops", SPEC, "--out", str(out), *more])


def tree(root):
    return sorted(
        (os.path.relpath(os.path.join(d, n), root), os.path.islink(os.path.join(d, n)))
        for d, dirs, files in os.walk(root)
        for n in dirs + files
    )


@pytest.fixture
def target(tmp_path):
    d = tmp_path / "victim"
    shutil.copytree(builtin_path("taolive_v2"), d)
    return d


def test_out_is_a_link(tmp_path, target, capsys):
    os.symlink(target, tmp_path / "out")
    before = tree(target)
    assert augment(tmp_path / "out", "--overwrite") == 1
    err = capsys.readouterr().err
    assert err == (
        f"hat augment: error: {tmp_path / 'out'}: is a symbolic link, expected a "
        "folder (links are not followed); nothing was written or deleted\n"
    )
    assert tree(target) == before and load_harness(target) == load_harness("taolive_v2")


def test_overwrite_through_a_linked_skills_folder(tmp_path, target, capsys):
    out = tmp_path / "out"
    assert augment(out) == 0
    shutil.rmtree(out / "skills")
    os.symlink(target / "skills", out / "skills")
    before = tree(target)
    assert augment(out, "--overwrite") == 1
    assert f"{out / 'skills'}: is a symbolic link" in capsys.readouterr().err
    assert tree(target) == before


def test_mapping_json_link_is_not_written_through(tmp_path, capsys):
    out = tmp_path / "out"
    assert augment(out) == 0
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    (out / "mapping.json").unlink()
    os.symlink(victim, out / "mapping.json")
    assert augment(out, "--overwrite") == 1
    assert f"{out / 'mapping.json'}: is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep"


def test_overwrite_replaces_harness_and_mapping(tmp_path):
    out = tmp_path / "out"
    assert augment(out) == 0
    first = (out / "mapping.json").read_text()
    assert augment(out, "--overwrite", "--seed", "5") == 0
    assert (out / "mapping.json").read_text() != first
    assert load_harness(out).layout.format == "xml"
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no temporary folder left


@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_out_may_not_overlap_the_source(tmp_path, capsys, where):
    from hat_jax.cli.main import main as hat_main
    from hat_jax.harness.builtin import builtin_path

    src = tmp_path / "src" / "h"
    shutil.copytree(builtin_path("taolive_v1"), src)
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    out = {"same": src, "inside": src / "skills", "parent": src.parent}[where]
    argv = ["augment", str(src), "--ops", "rename_tools", "--out", str(out)]
    assert hat_main([*argv, "--overwrite"]) == 1
    assert "overlaps the source harness" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before
