"""A table as Markdown and LaTeX (booktabs), and how its cells are written.

Cells are plain Unicode text ("80.3 [71.0, 87.4]", "–", "−7.7"); ``to_latex``
escapes LaTeX's special characters and maps the few Unicode signs to math. Values
are fractions in the results and percentages (or percentage points) in the
cells. A difference whose 95 % interval excludes 0 ends in ``MARK`` (" *").
"""

from __future__ import annotations

import dataclasses

from paper.results import Stat

MISSING = "–"
MARK = "*"  # a difference (or reduction) whose 95 % interval excludes 0
WIDE = 7  # columns from which a LaTeX table is set as table* in a smaller font
RULE = None  # a row that is a horizontal rule (a midrule in LaTeX)

_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "±": r"$\pm$",
    "–": "--",
    "—": "---",
    "−": "$-$",
    "Δ": r"$\Delta$",
    "→": r"$\rightarrow$",
    "×": r"$\times$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
}


def escape_latex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (one pass per char)."""
    return "".join(_LATEX.get(c, c) for c in str(text))


def escape_md(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return str(text).replace("|", r"\|").replace("*", r"\*").replace("\n", " ")


def _signed(x: float) -> str:
    return f"{x:+.1f}".replace("-", "−")


def _mark(s: Stat) -> str:
    return f" {MARK}" if s.excludes_zero else ""


def diff(s: Stat | None) -> str:
    """A difference in points: "+1.2 [−0.5, +3.0]" (95 % interval), with " *"
    when the interval excludes 0, or "–"."""
    if s is None or s.mean is None:
        return MISSING
    text = _signed(100 * s.mean)
    if s.lo is None:
        return text
    return f"{text} [{_signed(100 * s.lo)}, {_signed(100 * s.hi)}]" + _mark(s)


def ci(s: Stat | None, mark: bool = False) -> str:
    """A value in % with its interval: "51.7 [40.2, 60.3]" (signs as −), with
    " *" when ``mark`` and the interval excludes 0, or "–"."""
    if s is None or s.mean is None:
        return MISSING
    text = f"{100 * s.mean:.1f}"
    if s.lo is not None:
        text += f" [{100 * s.lo:.1f}, {100 * s.hi:.1f}]"
    return text.replace("-", "−") + (_mark(s) if mark else "")


def level(s: Stat | None, n: int | None = None) -> str:
    """A mean in % with its interval ("62.5 [47.1, 76.0]"), its case count
    appended when it differs from the row's ``n`` ("… (n=36)"), or "–"."""
    text = ci(s)
    if s is not None and s.mean is not None and n is not None and s.n != n:
        text += f" (n={s.n})"
    return text


def count(n: int | None) -> str:
    """A case count, or "–"."""
    return MISSING if n is None else str(n)


def paper_cell(x: float | None, signed: bool = False) -> str:
    """A number from the paper (already in % or points), at the paper's own
    precision: one decimal at least, more where the paper gives them (92.55,
    not a rounded 92.5)."""
    if x is None:
        return MISSING
    places = next((k for k in (1, 2) if abs(round(x, k) - x) < 1e-9), 3)
    text = f"{x:.{places}f}"  # 94.6 - 75.4 (19.1999...) prints 19.2
    return ("−" if x < 0 else "+") + text.lstrip("-") if signed else text


@dataclasses.dataclass
class Table:
    """A rendered table.

    Attributes:
      name: the registry name (file stem).
      title: a heading.
      caption: what the numbers are, the scale, the source of the paper's ones.
      header: column names.
      rows: cell rows; ``RULE`` (None) draws a rule between row groups.
      notes: footnotes.
      align: LaTeX column alignment ("l" + "r" per further column by default).

    Tables wider than ``WIDE`` columns span both columns of a two-column page
    (``table*``) in a smaller font.
    """

    name: str
    title: str
    caption: str
    header: list[str]
    rows: list[list[str] | None]
    notes: list[str] = dataclasses.field(default_factory=list)
    align: str | None = None

    def to_markdown(self) -> str:
        lines = [f"## {self.title}", "", self.caption, ""]
        lines.append("| " + " | ".join(map(escape_md, self.header)) + " |")
        lines.append("|" + "|".join(["---"] + ["--:"] * (len(self.header) - 1)) + "|")
        for row in self.rows:
            if row is not RULE:
                lines.append("| " + " | ".join(map(escape_md, row)) + " |")
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        align = self.align or "l" + "r" * (len(self.header) - 1)
        caption = escape_latex(f"{self.title}. {self.caption}")
        env = "table*" if len(self.header) > WIDE else "table"
        lines = [
            "% requires \\usepackage{booktabs}",
            rf"\begin{{{env}}}[t]",
            r"\centering",
            r"\scriptsize" if env == "table*" else r"\small",
            rf"\caption{{{caption}}}",
            rf"\label{{tab:{self.name}}}",
            rf"\begin{{tabular}}{{{align}}}",
            r"\toprule",
            " & ".join(map(escape_latex, self.header)) + r" \\",
            r"\midrule",
        ]
        for row in self.rows:
            if row is RULE:
                lines.append(r"\midrule")
            else:
                lines.append(" & ".join(map(escape_latex, row)) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        if self.notes:
            lines.append(r"\par\smallskip\footnotesize")
            lines += [escape_latex(n) + r"\par" for n in self.notes]
        lines.append(rf"\end{{{env}}}")
        return "\n".join(lines) + "\n"
