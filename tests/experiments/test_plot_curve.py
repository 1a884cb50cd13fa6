"""The SVG curve and its first/last summary from a metrics.jsonl."""

import json
import xml.etree.ElementTree as ET

import pytest

from experiments.plot_curve import main, paired_change, summary, svg

ROWS = [
    {"step": 0, "eval/reward": 0.20},
    {"step": 1, "train/loss": 1.0},
    {"step": 5, "train/loss": 0.5, "eval/reward": 0.30},
    {"step": 10, "train/loss": 0.4, "eval/reward": 0.35},
]


def test_summary_first_and_last():
    s = summary(ROWS, ["eval/reward", "train/loss"])
    assert s["eval/reward"]["first"] == 0.2 and s["eval/reward"]["last"] == 0.35
    assert s["eval/reward"]["change"] == pytest.approx(0.15)
    assert s["eval/reward"]["points"] == 3 and s["train/loss"]["first_step"] == 1
    with pytest.raises(ValueError, match="eval/nothing"):
        summary(ROWS, ["eval/nothing"])


def test_svg_is_valid_with_one_polyline_per_key(tmp_path):
    root = ET.fromstring(svg(ROWS, ["eval/reward", "train/loss"], title="a < b"))
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert [len(p.get("points").split()) for p in lines] == [3, 3]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out, js = tmp_path / "c.svg", tmp_path / "c.json"
    assert main([str(path), "--out", str(out), "--summary", str(js)]) == 0
    assert ET.parse(out).getroot().tag.endswith("svg")
    assert json.loads(js.read_text())["eval/reward"]["last_step"] == 10


def test_paired_change_over_the_same_cases(tmp_path):
    d = tmp_path / "eval"
    d.mkdir()
    (d / "0.json").write_text(json.dumps([{"a": 0, "b": 0}, {"a": 1, "b": 0}]))
    (d / "4.json").write_text(json.dumps([{"a": 1, "b": 1}, {"a": 1, "b": 0}]))
    p = paired_change(str(d), 0, 4)
    assert p["n_cases"] == 2 and p["mean_change"] == pytest.approx(0.5)
    assert p["cases_up"] == 1 and p["cases_down"] == 0
    assert p["stderr"] == pytest.approx(0.5)  # std(ddof=1) of [1, 0] / sqrt(2)
    (d / "5.json").write_text(json.dumps([{"a": 1}]))
    with pytest.raises(ValueError, match="differ in size"):
        paired_change(str(d), 0, 5)
