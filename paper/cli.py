"""Write the paper's tables and figures from a sweep root.

Reads the runs under ROOT (``sweep.json``, each run's ``config.json``,
``run.json``, ``eval/summary.json``, eval records and stage ``metrics.jsonl``)
and writes every registered table as Markdown and LaTeX (booktabs) and every
figure as PNG into --out, then prints the files written. Runs that are not
done are left out and named. The output folder is generated: keep it out of
version control.

Examples:
  hat paper runs/hat_tiny --out paper/out
  hat paper runs/hat_tiny --out paper/out --tables main,ifeval --no-figures
  python -m paper.cli runs/hat_tiny --out paper/out
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from paper.results import load_sweep
from paper.tables import TABLES, get


def _names(text: str | None, registry: dict) -> list[str]:
    if text is None:
        return list(registry)
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in registry:
            raise ValueError(f"unknown name {n!r}; have {', '.join(registry)}")
    return names


def add_arguments(p) -> None:
    p.add_argument("root", help="sweep root (e.g. runs/hat_tiny)")
    p.add_argument("--out", default="paper/out", help="output folder (paper/out)")
    p.add_argument(
        "--tables", help=f"comma-separated, default all: {', '.join(TABLES)}"
    )
    p.add_argument("--figures", help="comma-separated figure names, default all")
    p.add_argument("--no-figures", action="store_true", help="tables only")


def run(args) -> int:
    sweep = load_sweep(args.root)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{sweep.root}: {len(sweep.runs)} runs done ({sweep.scale_note()})")
    for name, why in sweep.skipped:
        print(f"  skipped {name}: {why}")
    written = []
    for name in _names(args.tables, TABLES):
        table = get(name)(sweep)
        for ext, text in (("md", table.to_markdown()), ("tex", table.to_latex())):
            path = out / f"{name}.{ext}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    if not args.no_figures:
        from paper import figures  # matplotlib only when figures are wanted

        for name in _names(args.figures, figures.FIGURES):
            fig = figures.FIGURES[name](sweep)
            if fig is None:
                print(f"  figure {name}: nothing to plot")
                continue
            written.append(figures.save(fig, out / f"{name}.png"))
    print("wrote:")
    for path in written:
        print(f"  {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``hat paper`` on its own (``python -m paper.cli``)."""
    parser = argparse.ArgumentParser(
        prog="hat paper",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
