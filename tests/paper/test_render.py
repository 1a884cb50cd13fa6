"""LaTeX and Markdown rendering: escaping, booktabs, missing values."""

from paper.render import MISSING, RULE, Table, ci, diff, escape_latex, paper_cell
from paper.results import Stat, Sweep, load_sweep, model_facts
from paper.tables import TABLES, get


def test_escape_latex_specials_and_unicode():
    got = escape_latex(r"a & b_1 50% {x} #$ ~^ \ ± – − Δ")
    want = (
        r"a \& b\_1 50\% \{x\} \#\$ \textasciitilde{}\textasciicircum{} "
        r"\textbackslash{} $\pm$ -- $-$ $\Delta$"
    )
    assert got == want


def test_paper_figures_keep_the_papers_precision():
    # PAPER.md's evolution figures have two decimals: 92.55 must not print as
    # a rounded 92.5 (repr(92.55) is exact, f"{92.55:.1f}" is "92.5").
    assert [paper_cell(x) for x in (92.55, 82.40, 94.8, 0.780, 100.0)] == [
        "92.55",
        "82.4",
        "94.8",
        "0.78",
        "100.0",
    ]
    assert [
        paper_cell(x, signed=True) for x in (94.6 - 75.4, -7.7, 8.5, 0.0, -0.25)
    ] == [
        "+19.2",
        "−7.7",
        "+8.5",
        "+0.0",
        "−0.25",
    ]
    assert paper_cell(None) == MISSING and paper_cell(None, signed=True) == MISSING


def test_table_renders_booktabs_and_escapes_cells():
    t = Table(
        name="demo",
        title="Demo & test",
        caption="95 % CI; tiny_scale",
        header=["run", "acc. (%)"],
        rows=[["HSA-SFT & OPD_1", ci(Stat(0.5, 0.4, 0.6, 10))], RULE, ["a|b", "–"]],
        notes=["see PAPER.md #3"],
    )
    tex = t.to_latex()
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\caption{Demo \& test. 95 \% CI; tiny\_scale}" in tex
    assert r"HSA-SFT \& OPD\_1 & 50.0 [40.0, 60.0] \\" in tex
    assert r"see PAPER.md \#3\par" in tex
    assert tex.count(r"\midrule") == 2  # under the header, and the RULE row
    md = t.to_markdown()
    assert "| HSA-SFT & OPD_1 | 50.0 [40.0, 60.0] |" in md
    assert r"| a\|b | – |" in md


def test_diff_and_missing_cells():
    assert diff(Stat(-0.077, -0.1, -0.05, 40)) == "−7.7 [−10.0, −5.0] *"
    assert diff(Stat(0.02)) == "+2.0"
    assert ci(None) == diff(None) == "–"
    assert ci(Stat(0.803)) == "80.3"


def test_tables_of_an_empty_sweep_render_dashes(tmp_path):
    sweep = Sweep(tmp_path, {}, [], [("base", "status failed")])
    for name in TABLES:
        t = get(name)(sweep)
        assert t.to_latex() and t.to_markdown()
        assert any("base (status failed)" in n for n in t.notes)
    main = get("main")(sweep)
    assert main.rows[0][:2] == ["T1", "base (not done)"]
    assert set(main.rows[0][2:-1]) == {"–"} and main.rows[0][-1] == "80.3"  # paper


def test_missing_summary_reads_as_dashes(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.json").write_text('{"status": "done"}')
    sweep = load_sweep(tmp_path)
    assert [r.name for r in sweep.runs] == ["r"] and sweep.runs[0].summary is None
    row = get("main")(sweep).rows[0]  # meta-less run: base pipeline
    assert row[1] == "r" and set(row[2:-1]) == {"–"}
    assert "unknown scale" in get("main")(sweep).caption


def test_model_facts_from_driver_overrides():
    config = {
        "steps": {
            "tokenizer": {"kind": "tokenizer"},
            "base": {
                "overrides": [
                    "tokenizer=@tokenizer/tokenizer",
                    "model.hidden_size=128",
                    "model.num_hidden_layers=2",
                ]
            },
        }
    }
    assert model_facts(config) == "2-layer model (hidden 128)"
    assert model_facts({"model": {"num_hidden_layers": 1}}) == "1-layer model"
    assert model_facts({"seed": 0}) == ""
