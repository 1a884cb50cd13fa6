"""The premise checks (thresholds, intervals, n) and the release folder."""

import json

import pytest

from experiments.world.premise import premise_checks, premise_markdown
from experiments.world.release import verify_release, write_release


def _m(mean, n):
    return {"mean": mean, "ci": [max(0, mean - 0.1), min(1, mean + 0.1)], "n": n}


def summary(t1=0.5, t2=0.4, fam=0.3, ifp=0.25, valid=0.95, sign=0.8, n=300):
    fams = ("all_identifiers", "reshaped_rewritten", "prompt_under_hooks")
    fams += ("everything",)
    by = {f: {"n": n // 4, "success": _m(fam, n // 4)} for f in fams}
    return {
        "suites": {
            "t1": {"metrics": {"success": _m(t1, n)}},
            "t2": {"metrics": {"success": _m(t2, n)}, "by": {"family": by}},
            "ifeval_proxy": {"metrics": {"prompt_level_strict": _m(ifp, n)}},
            "apps": {"metrics": {"valid_tools": _m(valid, n), "sign_off": _m(sign, n)}},
        }
    }


def _held(s):
    return {c.name: c.passed for c in premise_checks(s)}


def test_a_base_that_holds_the_premise_passes_every_check():
    checks = premise_checks(summary())
    assert len(checks) == 10 and all(c.passed for c in checks)
    t1 = checks[0]
    assert t1.ci[0] < 0.5 < t1.ci[1] and t1.ci[1] - t1.ci[0] < 0.12  # Wilson, n 300
    assert "| T1 success | 50.0 |" in premise_markdown(checks)


@pytest.mark.parametrize(
    "kw, fails",
    [
        ({"t1": 0.0, "t2": 0.0}, "T1 success"),  # the old base: reads nothing
        ({"t1": 0.9}, "T1 success"),  # no room for SFT to show a gain
        ({"t2": 0.1}, "T2 success"),
        ({"fam": 0.05}, "T2 everything"),
        ({"t1": 0.7, "t2": 0.3}, "T2 / T1"),  # a memoriser of v1: T2 far below T1
        ({"ifp": 0.1}, "IFEval proxy prompt-level"),
        ({"valid": 0.8}, "apps: calls naming a valid tool"),
        ({"sign": 0.5}, "apps: replies with the sign-off"),
        ({"n": 100}, "T1 success"),  # too few cases decide nothing
    ],
)
def test_each_threshold_can_fail(kw, fails):
    assert _held(summary(**kw))[fails] is False


def test_missing_suites_fail_rather_than_pass():
    checks = premise_checks({"suites": {}})
    assert checks and not any(c.passed for c in checks)


def test_release_folder_is_whole_and_its_sums_catch_tampering(tmp_path, tiny_hf):
    ev = tmp_path / "eval"
    ev.mkdir()
    (ev / "summary.json").write_text(json.dumps(summary(t1=0.1)))
    data = tmp_path / "data"
    data.mkdir()
    (data / "done.json").write_text(json.dumps({"info": {"app": 7, "instruct": 3}}))
    out = tmp_path / "release"
    info = write_release(
        model=tiny_hf, evaluation=ev, data_steps={"base_data": data}, out=out
    )
    assert info["premise_holds"] is False
    names = {p.name for p in out.iterdir()}
    assert {"README.md", "premise.json", "SHA256SUMS", "config.json"} <= names
    assert "tokenizer.json" in names and not (tmp_path / "release.partial").exists()
    card = (out / "README.md").read_text()
    assert "base_data: app 7, instruct 3" in card and "| T1 success | 10.0 |" in card
    assert verify_release(out) == []
    (out / "config.json").write_text("{}")
    (out / "stray.txt").write_text("x")
    problems = verify_release(out)
    assert any("config.json does not match" in p for p in problems)
    assert any("stray.txt: not in SHA256SUMS" in p for p in problems)
