"""`hat augment` round trip, and augmentation diversity floors."""

import json

import pytest

from augment import Mapping, all_ops
from augment.diversity import measure
from hat_jax.cli.main import main
from hat_jax.harness.loader import load_harness


def test_cli_writes_a_loadable_harness_and_mapping(tmp_path, capsys):
    out = tmp_path / "aug"
    spec = "rename_tools|nest_args(frac=1.0)|rename_skills|format(xml)"
    assert (
        main(["augment", "taolive_v1", "--ops", spec, "--seed", "2", "--out", str(out)])
        == 0
    )
    h = load_harness(out)
    m = Mapping.from_json((out / "mapping.json").read_text())
    src = load_harness("taolive_v1")
    assert [t.name for t in h.tools] == [m.tools[t.name] for t in src.tools]
    assert {s.name for s in h.skills} == set(m.skills.values())
    assert h.layout.format == "xml" and h.version.startswith("1.0+hsa.")
    assert m.ops[0].startswith("rename_tools")
    # An existing folder is not overwritten unless asked.
    assert main(["augment", "taolive_v1", "--ops", spec, "--out", str(out)]) == 1
    assert "already holds a harness" in capsys.readouterr().err


def test_cli_family_and_listing(tmp_path, capsys):
    out = tmp_path / "fam"
    assert (
        main(["augment", "taolive_v2", "--family", "everything", "--out", str(out)])
        == 0
    )
    load_harness(out)
    json.loads((out / "mapping.json").read_text())
    assert main(["augment", "--list-ops"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in all_ops())
    with pytest.raises(SystemExit) as e:  # a usage error, before any work
        main(["augment", "taolive_v1", "--ops", "bogus", "--out", str(out)])
    assert e.value.code == 2
    assert "argument --ops: spec op 1 ('bogus')" in capsys.readouterr().err


def test_diversity_floors(harnesses):
    for h in harnesses.values():
        stats = measure(h, n=200, seed=1)
        assert stats["tool_names"] > 60, stats
        assert stats["tool_name_sets"] > 40, stats
        assert stats["tool_schemas"] > 60, stats
        assert stats["prompt_layouts"] > 30, stats
        assert stats["skill_name_sets"] > 30, stats
