"""`hat paper ROOT --out DIR`: every table and figure written and listed."""

import argparse

from paper import figures
from paper import paper_cmd as cli
from paper.results import load_sweep

PNG = b"\x89PNG\r\n\x1a\n"


def _args(root, out, *extra):
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    return p.parse_args([str(root), "--out", str(out), *extra])


def test_writes_every_table_and_figure(sweep_root, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.run(_args(sweep_root, out)) == 0
    printed = capsys.readouterr().out
    names = {"main", "ifeval", "ablation", "edit", "latency", "paired", "steps"}
    names |= {"evolution", "claims"}
    want = {f"{n}.{e}" for n in names for e in ("md", "tex")}
    want |= {f"{n}.png" for n in figures.FIGURES}
    assert {p.name for p in out.iterdir()} == want
    for name in want:
        path = out / name
        assert path.stat().st_size > 200, name
        assert str(path) in printed
        if name.endswith(".png"):
            assert path.read_bytes()[:8] == PNG
    assert "skipped abl_prompt: status running" in printed
    assert r"\begin{tabular}" in (out / "main.tex").read_text()


def test_curves_share_stage_workdirs(sweep_root):
    sweep = load_sweep(sweep_root)
    base = figures.curves(sweep, "base", "train/loss")
    assert len(base) == 1 and base[0][0][:2] == ["base", "sft_fixed"]
    assert len(base[0][1]) == 60
    assert len(base[0][0]) == 8  # every done run uses the base stage
    sft = [runs for runs, _ in figures.curves(sweep, "sft", "train/loss")]
    assert ["sft_hsa"] in sft  # its stage path is absolute
    evals = figures.curves(sweep, "rl", "eval/reward")
    assert [runs for runs, _ in evals] == [["hat"]] and len(evals[0][1]) == 6
    ((_, reward),) = figures.curves(sweep, "rl", "rl/reward")  # mean of rl/reward/*
    assert reward.shape == (30, 2) and abs(reward[3, 1] - 0.43) < 1e-9


def test_selected_tables_without_figures(sweep_root, tmp_path):
    out = tmp_path / "o"
    assert (
        cli.main(
            [str(sweep_root), "--out", str(out), "--tables", "main", "--no-figures"]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == ["main.md", "main.tex"]


def test_module_entry_reports_bad_input_in_one_line(tmp_path, capsys):
    """`python -m paper.paper_cmd` (run_module) answers a missing root the way
    `hat paper` does: one line on stderr and status 1, not a traceback."""
    missing = tmp_path / "no_root"
    assert cli.main([str(missing), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err == f"hat paper: error: {missing}: no such sweep root\n"
    assert not (tmp_path / "o").exists()
