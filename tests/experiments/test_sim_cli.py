"""`hat sim generate` and `hat sim report` (called through experiments.sim_cmd)."""

import json

import pytest

from augment import apply_spec, validate_augmented
from experiments.sim_cmd import augment_all, main
from hat_jax.harness import load_harness, read_jsonl
from sim.datasets import generate, make_cases


def _gen(tmp_path, name, *extra):
    out = tmp_path / name
    argv = ["generate", "--harness", "taolive_v1", "--n", "20", "--seed", "5"]
    assert main([*argv, "--split", "dev", *extra, "--out", str(out)]) == 0
    return out


def test_generate_then_report(tmp_path, capsys):
    out = _gen(tmp_path, "dev.jsonl", "--fault-rate", "0.3")
    summary = capsys.readouterr().out
    assert summary.startswith(f"wrote 20 trajectories to {out}")
    for part in ("intents product_question=", "langs zh=", "status {'ok': 20}"):
        assert part in summary
    again = _gen(tmp_path, "again.jsonl", "--fault-rate", "0.3")
    assert out.read_bytes() == again.read_bytes()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"{out}: 20 lines" in text
    for label in ("intent mix:", "language mix:", "status:", "tool calls:", "skill"):
        assert label in text
    assert main(["report", str(out), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["n"] == r["lines"] == 20 and r["bytes"] == out.stat().st_size
    assert abs(sum(r["intent"].values()) - 1) < 1e-3 and r["status"] == {"ok": 20}


def test_ops_augments_every_trajectory_validly(tmp_path, capsys):
    out = _gen(tmp_path, "ops.jsonl", "--ops", "rename_tools|reorder_sections")
    assert "hsa ok 20, failed 0" in capsys.readouterr().out
    trajs = read_jsonl(out)
    base = load_harness("taolive_v1")
    names = {c.name for t in trajs for c in t.tool_calls}
    assert "get_product_info_by_link_id" not in names  # renamed everywhere
    golds = generate(base, make_cases("dev", 5, 20))
    for gold, traj in zip(golds, trajs):
        hsa = traj.meta["hsa"]
        assert hsa["spec"] == "rename_tools|reorder_sections"
        assert traj.harness_id == hsa["harness_id"] != base.id
        # The augmented harness is reproducible from (spec, seed) alone.
        h2, t2, m = apply_spec(base, gold, hsa["spec"], hsa["seed"])
        assert m.to_dict() == hsa["mapping"]
        assert validate_augmented(base, gold, h2, traj, m) == []


def test_family_samples_a_spec_per_trajectory(tmp_path, capsys):
    out = _gen(tmp_path, "fam.jsonl", "--family", "hook_shift")
    assert "failed 0" in capsys.readouterr().out
    specs = {t.meta["hsa"]["spec"] for t in read_jsonl(out)}
    assert len(specs) > 3


def test_invalid_augmentations_are_counted_and_kept_as_gold():
    base = load_harness("taolive_v1")
    golds = generate(base, make_cases("dev", 0, 3))
    trajs, failures = augment_all(base, golds, seed=0, ops="no_such_op")
    assert failures == 3 and [t.harness_id for t in trajs] == [base.id] * 3
    assert all(t.meta["hsa"]["problems"] for t in trajs)


def test_bad_arguments_fail_cleanly(tmp_path, capsys):
    out = str(tmp_path / "x.jsonl")
    with pytest.raises(SystemExit) as e:
        main(["generate", "--harness", "taolive_v1", "--n", "0", "--out", out])
    assert e.value.code == 2 and "argument --n" in capsys.readouterr().err


def test_compact_world_flags_match_the_library(tmp_path, capsys):
    out = _gen(
        tmp_path, "compact.jsonl", "--prompt-format", "compact", "--compact-results"
    )
    harness = load_harness("taolive_v1").in_format("compact")
    golds = generate(harness, make_cases("dev", 5, 20), compact_results=True)
    trajs = read_jsonl(out)
    assert [t.messages for t in trajs] == [g.messages for g in golds]
    plain = read_jsonl(_gen(tmp_path, "plain.jsonl"))
    assert plain[0].messages[0]["content"] != trajs[0].messages[0]["content"]
    assert len(trajs[0].messages[0]["content"]) < len(plain[0].messages[0]["content"])


def test_skills_first_flag_matches_the_library(tmp_path, capsys):
    flags = ("--prompt-format", "compact", "--compact-results", "--skills-first")
    trajs = read_jsonl(_gen(tmp_path, "first.jsonl", *flags))
    harness = load_harness("taolive_v1").in_format("compact")
    cases = make_cases("dev", 5, 20)
    golds = generate(harness, cases, compact_results=True, skills_first=True)
    assert [t.messages for t in trajs] == [g.messages for g in golds]
    plain = generate(harness, cases, compact_results=True)
    assert [t.messages for t in trajs] != [g.messages for g in plain]
