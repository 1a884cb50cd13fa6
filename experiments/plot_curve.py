"""Curves from a run's metrics.jsonl as a figure (matplotlib, Agg): PNG, SVG or
PDF, by the --out file's extension.

    python -m experiments.plot_curve runs/rl_tiny/metrics.jsonl \\
        --keys eval/reward eval/accuracy --out docs/rl_tiny_curve.svg

Each key is drawn over the steps whose rows hold it (train rows and eval rows
share the file), in the style of the paper's figures (paper/figures.py).
``--summary FILE`` writes the first and last value of each key (the numbers the
curve is reported with), the seconds the run spent, the run's config groups
(from the config.json beside the metrics) and, with ``--eval-dir``, the paired
per-case change between the first and the last evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from hat_jax.train.metrics import read_metrics  # noqa: E402

CONFIG_KEYS = ("init_from", "seed", "model", "optim", "train", "rollout", "eval", "rl")
FORMATS = ("png", "svg", "pdf")
STYLE = {  # every figure's style (paper/figures.py uses it too)
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def series(rows: Sequence[dict], key: str) -> list[tuple[int, float]]:
    """(step, value) of every row holding ``key``, in step order."""
    return sorted((int(r["step"]), float(r[key])) for r in rows if key in r)


def summary(rows: Sequence[dict], keys: Sequence[str]) -> dict[str, dict]:
    """Per key: first and last (step, value) and the change.

    Raises:
      ValueError: a key no row holds.
    """
    out = {}
    for k in keys:
        s = series(rows, k)
        if not s:
            raise ValueError(f"no row of the metrics holds {k!r}")
        (s0, v0), (s1, v1) = s[0], s[-1]
        out[k] = {
            "first_step": s0,
            "first": v0,
            "last_step": s1,
            "last": v1,
            "change": v1 - v0,
            "points": len(s),
        }
    return out


def paired_change(eval_dir: str, first: int, last: int) -> dict[str, float]:
    """Per-case change of the mean reward between two evaluations.

    Reads ``eval_dir/<step>.json`` (per-case reward dicts, the same held-out
    cases in the same order, as ``hat_jax.train.rl_run`` writes them).

    Returns:
      n_cases, the mean change of the per-case mean reward, its standard error
      and how many cases went up / down.
    """

    def load(step):
        with open(os.path.join(eval_dir, f"{step}.json"), encoding="utf-8") as f:
            return [float(np.mean(list(case.values()))) for case in json.load(f)]

    a, b = load(first), load(last)
    if len(a) != len(b):
        raise ValueError(f"evaluations {first} and {last} differ in size")
    d = np.asarray(b) - np.asarray(a)
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return {
        "n_cases": len(d),
        "mean_change": float(d.mean()),
        "stderr": se,
        "cases_up": int((d > 0).sum()),
        "cases_down": int((d < 0).sum()),
    }


def figure(rows: Sequence[dict], keys: Sequence[str], *, title: str = "") -> Figure:
    """A line chart of ``keys`` against the step, one line (with markers) per key
    and the legend outside the axes on the right.

    Raises:
      ValueError: no row holds any of ``keys``.
    """
    data = {k: series(rows, k) for k in keys}
    if not any(data.values()):
        raise ValueError(f"no row of the metrics holds any of {list(keys)}")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.0, 4.0))
        for k, s in data.items():
            x, y = zip(*s) if s else ((), ())
            ax.plot(x, y, marker=".", lw=1.6, label=k if s else f"{k} (no rows)")
        lo, hi = ax.get_xlim()
        if hi - lo < 2:  # one or two steps: whole-step ticks around them
            ax.set_xlim(np.floor(lo) - 0.5, np.ceil(hi) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are integers
        ax.set_xlabel("step")
        if title:
            ax.set_title(title)
        ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
        fig.tight_layout()
    return fig


def out_format(path: str) -> str:
    """The figure format a file name asks for: its extension, lower case."""
    return os.path.splitext(path)[1].lower().lstrip(".")


def save(fig: Figure, path: str) -> None:
    """Writes ``fig`` in the format ``path`` names (.png, .svg, .pdf), without a
    timestamp in the file, and closes it."""
    fmt = out_format(path)
    if fmt not in FORMATS:
        plt.close(fig)
        raise ValueError(f"{path!r}: expected a {'/'.join(FORMATS)} file name")
    meta = {"Date": None} if fmt in ("svg", "pdf") else {}
    with plt.rc_context({"svg.hashsalt": "plot_curve"}):  # stable SVG ids
        fig.savefig(path, dpi=150, bbox_inches="tight", metadata=meta)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="plot_curve", description=__doc__)
    p.add_argument("metrics", help="a metrics.jsonl")
    p.add_argument("--keys", nargs="+", default=["eval/reward"])
    p.add_argument(
        "--out", required=True, help="the figure to write: a .png, .svg or .pdf file"
    )
    p.add_argument("--title", default="")
    p.add_argument("--summary", help="also write first/last values as JSON here")
    p.add_argument(
        "--eval-dir",
        help="with --summary: add the paired per-case change between the first "
        "and last evaluation of the first key (its <step>.json files)",
    )
    args = p.parse_args(argv)
    if out_format(args.out) not in FORMATS:
        p.error(f"--out {args.out!r}: expected a {'/'.join(FORMATS)} file name")
    rows = read_metrics(args.metrics)
    save(figure(rows, args.keys, title=args.title), args.out)
    if args.summary:
        out = summary(rows, args.keys)
        if args.eval_dir:
            first = out[args.keys[0]]
            out["paired"] = paired_change(
                args.eval_dir, first["first_step"], first["last_step"]
            )
        out["seconds"] = {  # what the run spent, from its rows
            k: sum(r.get(k, 0.0) for r in rows)
            for k in ("rl/step_s", "eval/seconds")
            if any(k in r for r in rows)
        }
        cfg_path = os.path.join(os.path.dirname(args.metrics), "config.json")
        if os.path.exists(cfg_path):  # the run's settings beside its numbers
            with open(cfg_path, encoding="utf-8") as f:
                cfg = json.load(f)
            out["config"] = {k: cfg[k] for k in CONFIG_KEYS if k in cfg}
        with open(args.summary, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
