"""The curve figure (matplotlib) and its first/last summary from a metrics.jsonl."""

import json
import xml.etree.ElementTree as ET

import matplotlib.pyplot as plt
import pytest

from experiments.plot_curve import figure, main, paired_change, summary

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


def test_figure_has_one_line_per_key_over_its_steps():
    fig = figure(ROWS, ["eval/reward", "train/loss", "eval/none"], title="a < b")
    (ax,) = fig.axes
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines) == ["eval/reward", "train/loss", "eval/none (no rows)"]
    assert list(lines["eval/reward"].get_xdata()) == [0, 5, 10]
    assert list(lines["train/loss"].get_ydata()) == [1.0, 0.5, 0.4]
    assert ax.get_title() == "a < b" and ax.get_xlabel() == "step"
    plt.close(fig)
    with pytest.raises(ValueError, match="eval/none"):
        figure(ROWS, ["eval/none"])


def test_cli_writes_svg_and_png_and_the_summary(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out, js = tmp_path / "c.svg", tmp_path / "c.json"
    assert main([str(path), "--out", str(out), "--summary", str(js)]) == 0
    assert ET.parse(out).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    assert json.loads(js.read_text())["eval/reward"]["last_step"] == 10
    first = out.read_bytes()
    assert main([str(path), "--out", str(out)]) == 0
    assert out.read_bytes() == first  # no timestamp or random ids in the SVG
    png = tmp_path / "c.png"
    assert main([str(path), "--out", str(png), "--keys", "train/loss"]) == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_cli_refuses_an_unknown_format(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "c.txt")])
    assert "expected a png/svg/pdf file name" in capsys.readouterr().err


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
