"""Curves from a run's metrics.jsonl as a standalone SVG (no plotting library).

    python -m experiments.plot_curve runs/rl_tiny/metrics.jsonl \\
        --keys eval/reward eval/accuracy --out docs/rl_tiny_curve.svg

Each key is drawn over the steps whose rows hold it (train rows and eval rows
share the file). ``--summary FILE`` writes the first and last value of each key
(the numbers the curve is reported with), the seconds the run spent, the run's
config groups (from the config.json beside the metrics) and, with
``--eval-dir``, the paired per-case change between the first and the last
evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from html import escape

import numpy as np

from hat_jax.train.metrics import read_metrics

CONFIG_KEYS = ("init_from", "seed", "model", "optim", "train", "rollout", "eval", "rl")
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
W, H = 700, 400  # canvas
LEFT, RIGHT, TOP, BOTTOM = 60, 190, 40, 50  # margins (legend on the right)


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
    cases in the same order, as ``experiments/rl_sim.py`` writes them).

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


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def svg(rows: Sequence[dict], keys: Sequence[str], *, title: str = "") -> str:
    """An SVG line chart of ``keys`` against the step."""
    data = {k: series(rows, k) for k in keys}
    pts = [p for s in data.values() for p in s]
    if not pts:
        raise ValueError(f"no row of the metrics holds any of {list(keys)}")
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    pad = (y1 - y0) * 0.05 or 0.05
    y0, y1 = y0 - pad, y1 + pad
    x1 = x1 if x1 > x0 else x0 + 1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(x):
        return LEFT + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return TOP + (1 - (y - y0) / (y1 - y0)) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
        'stroke="#444"/>',
    ]
    for y in _ticks(y0, y1):
        out.append(
            f'<line x1="{LEFT - 4}" x2="{LEFT + pw}" y1="{sy(y):.1f}" '
            f'y2="{sy(y):.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">'
            f"{y:.3f}</text>"
        )
    for x in sorted({round(v) for v in _ticks(x0, x1)}):  # steps are integers
        out.append(
            f'<text x="{sx(x):.1f}" y="{TOP + ph + 18}" text-anchor="middle">'
            f"{x:.0f}</text>"
        )
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{H - 12}" text-anchor="middle">step</text>'
    )
    for i, (k, s) in enumerate(data.items()):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
        )
        out.extend(
            f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>'
            for x, y in s
        )
        ly = TOP + 14 + 18 * i
        out.append(
            f'<line x1="{LEFT + pw + 12}" x2="{LEFT + pw + 32}" y1="{ly - 4}" '
            f'y2="{ly - 4}" stroke="{color}" stroke-width="2"/>'
            f'<text x="{LEFT + pw + 38}" y="{ly}">{escape(k)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="plot_curve", description=__doc__)
    p.add_argument("metrics", help="a metrics.jsonl")
    p.add_argument("--keys", nargs="+", default=["eval/reward"])
    p.add_argument("--out", required=True, help="the SVG file to write")
    p.add_argument("--title", default="")
    p.add_argument("--summary", help="also write first/last values as JSON here")
    p.add_argument(
        "--eval-dir",
        help="with --summary: add the paired per-case change between the first "
        "and last evaluation of the first key (its <step>.json files)",
    )
    args = p.parse_args(argv)
    rows = read_metrics(args.metrics)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(svg(rows, args.keys, title=args.title))
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
