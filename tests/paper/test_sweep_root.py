"""`hat paper` reads runs inside its sweep root only."""

import json
import os

import pytest

from paper.results import load_sweep


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "link", "not_a_list"])
def test_runs_outside_the_root_are_refused(tmp_path, kind):
    root, outside = tmp_path / "root", tmp_path / "outside" / "evil"
    root.mkdir()
    outside.mkdir(parents=True)
    (outside / "run.json").write_text(json.dumps({"name": "OUTSIDE-SECRET"}))
    runs = {"dotdot": ["../outside/evil"], "absolute": [str(outside)]}
    if kind == "link":
        os.symlink(outside, root / "evil")
        runs["link"] = ["evil"]
    sweep = {"runs": runs.get(kind, "evil")}
    (root / "sweep.json").write_text(json.dumps(sweep))
    with pytest.raises(ValueError, match="sweep"):
        load_sweep(root)
