"""The paper's tables (Markdown + LaTeX) and figures (PNG) from run workdirs.

Reads only a sweep root's result files and config metadata (``paper.results``);
``hat paper ROOT --out paper/out`` writes everything (``paper.paper_cmd``).
"""

from paper.render import Table, escape_latex
from paper.results import Run, Stat, Sweep, load_sweep

__all__ = ["Run", "Stat", "Sweep", "Table", "escape_latex", "load_sweep"]
