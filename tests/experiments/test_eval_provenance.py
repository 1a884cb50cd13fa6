"""`hat eval run`'s summary.json records where and how it ran."""

import json

from hat_jax.cli.main import main as hat
from tests.provenance_checks import check_provenance


def test_summary_json_holds_provenance(tmp_path):
    out = tmp_path / "oracle"
    argv = ["eval", "run", "--suite", "t1", "--policy", "oracle", "--limit", "2"]
    assert hat([*argv, "--out", str(out), "--no-progress"]) == 0
    p = json.loads((out / "summary.json").read_text())["provenance"]
    check_provenance(p, config=True)
    assert p["config"]["policy"] == "oracle" and p["config"]["suites"] == ["t1"]
    assert p["config"]["limit"] == 2
