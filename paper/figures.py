"""The paper's figures as PNG (matplotlib, Agg): training curves, RL reward
curves, the HSA ablation as bars with 95 % intervals, and the paper's claims
as a forest plot (our estimates' intervals, the paper's figures beside).

Each builder in ``FIGURES`` maps a sweep to a figure, or None when the sweep
holds nothing to plot. Runs that share a stage workdir (a later pipeline reusing
an earlier stage) are drawn once, labelled with every run that uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from experiments.plot_curve import STYLE  # noqa: E402  (one figure style)
from paper.results import Sweep  # noqa: E402
from paper.tables.ablation import DIMENSION_NAMES, SUITES, effects, groups  # noqa: E402
from paper.tables.claims import estimate  # noqa: E402
from paper.tables.claims_data import CLAIMS  # noqa: E402

STAGES = ("base", "sft", "opd", "rl")
STAGE_TITLES = {"base": "base", "sft": "SFT", "opd": "OPD", "rl": "RL"}
LOSS_UNITS = {  # what train/loss is in each stage
    "base": "cross-entropy (nats / token)",
    "sft": "cross-entropy (nats / token)",
    "opd": "KL to the base (nats / token)",
    "rl": "policy loss (surrogate)",
}
SMOOTH_FROM = 50  # points; longer curves get a smoothed line over the faint raw one

Builder = Callable[[Sweep], Figure | None]
FIGURES: dict[str, Builder] = {}


def register(name: str) -> Callable[[Builder], Builder]:
    """Registers a figure builder ``sweep -> Figure | None`` under ``name``."""

    def wrap(fn: Builder) -> Builder:
        FIGURES[name] = fn
        return fn

    return wrap


def metric_value(row: dict, key: str) -> float | None:
    """``row[key]``, or else the mean of its sub-keys ``key/*`` (the RL stage
    logs ``rl/reward/<name>`` per reward), or None."""
    if row.get(key) is not None:
        return float(row[key])
    subs = [v for k, v in row.items() if k.startswith(key + "/") and v is not None]
    return float(np.mean(subs)) if subs else None


def curves(sweep: Sweep, stage: str, key: str) -> list[tuple[list[str], np.ndarray]]:
    """(runs, [N, 2] step/value rows) of ``key`` in each distinct ``stage``
    workdir, with the runs sharing it."""
    by_path: dict[Path, tuple[list[str], np.ndarray]] = {}
    for run in sweep.runs:
        path = run.stages().get(stage)
        if path is None:
            continue
        path = path.resolve()
        if path in by_path:
            by_path[path][0].append(run.name)
            continue
        rows = [
            (m["step"], v)
            for m in run.stage_metrics(stage)
            if m.get("step") is not None and (v := metric_value(m, key)) is not None
        ]
        if rows:
            by_path[path] = ([run.name], np.asarray(rows, float))
    return list(by_path.values())


def _label(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} (shared by {len(names)} runs)"


def _smooth(y: np.ndarray) -> np.ndarray:
    """A centred moving average (no lag; shorter windows at the ends)."""
    k = np.ones(max(3, (len(y) // SMOOTH_FROM * 2) | 1))
    return np.convolve(y, k, "same") / np.convolve(np.ones_like(y), k, "same")


def _plot(ax, label: str, xy: np.ndarray, color) -> None:
    x, y = xy[:, 0], xy[:, 1]
    if len(y) >= SMOOTH_FROM:
        ax.plot(x, y, color=color, alpha=0.25, lw=0.8)
        ax.plot(x, _smooth(y), color=color, lw=1.6, label=label)
    else:
        ax.plot(
            x, y, color=color, lw=1.6, marker="." if len(y) < 15 else None, label=label
        )


def _panels(
    sweep: Sweep, panels: list[tuple[str, str, str, str]], title: str
) -> Figure | None:
    """One axis per (stage, key, title, y label) that has data, one legend
    outside the axes."""
    data = [(t, y, curves(sweep, s, k)) for s, k, t, y in panels]
    data = [(t, y, c) for t, y, c in data if c]
    if not data:
        return None
    names = [r.name for r in sweep.runs]
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    colors = {n: cmap(i % cmap.N) for i, n in enumerate(names)}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(data), figsize=(4.2 * len(data) + 2.6, 3.8), squeeze=False
        )
        for ax, (t, ylabel, cs) in zip(axes[0], data):
            for runs, xy in cs:
                _plot(ax, _label(runs), xy, colors[runs[0]])
            ax.set_title(t)
            ax.set_xlabel("step")
            lo, hi = ax.get_xlim()
            if hi - lo < 2:  # one or two steps: whole-step ticks around them
                ax.set_xlim(np.floor(lo) - 0.5, np.ceil(hi) + 0.5)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(ylabel)
        handles = {}
        for ax in axes[0]:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.legend(
            handles.values(),
            handles.keys(),
            title="run",
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            frameon=False,
        )
        fig.suptitle(f"{title} ({sweep.scale_note()})")
        fig.tight_layout()
    return fig


@register("training_curves")
def training_curves(sweep: Sweep) -> Figure | None:
    """train/loss per stage, one line per run."""
    panels = [
        (s, "train/loss", f"{STAGE_TITLES[s]} stage", LOSS_UNITS[s]) for s in STAGES
    ]
    return _panels(sweep, panels, "Training loss (train/loss)")


@register("reward_curves")
def reward_curves(sweep: Sweep) -> Figure | None:
    """RL rollout reward and held-out eval reward over RL steps."""
    panels = [
        ("rl", "rl/reward", "rollout reward (training)", "mean reward (rl/reward/*)"),
        ("rl", "eval/reward", "eval reward (held out)", "mean reward (eval/reward)"),
    ]
    return _panels(sweep, panels, "HSA-RL reward")


@register("ablation")
def ablation_bars(sweep: Sweep) -> Figure | None:
    """Δ success (else accuracy) per left-out HSA dimension, bars with 95 %
    intervals."""
    found = groups(sweep)
    if not found:
        return None
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(found), figsize=(7.5 * len(found), 3.8), squeeze=False
        )
        for ax, (ref, runs) in zip(axes[0], found):
            dims = sorted(
                runs,
                key=lambda d: (
                    list(DIMENSION_NAMES).index(d)
                    if d in DIMENSION_NAMES
                    else len(DIMENSION_NAMES)
                ),
            )
            y = np.arange(len(dims))
            height = 0.8 / len(SUITES)
            # success where the records have it (runs before it: accuracy)
            metric = "success"
            if all(e is None for d in dims for e in effects(ref, runs[d]).values()):
                metric = "accuracy"
            for j, (suite, title) in enumerate(SUITES):
                eff = [effects(ref, runs[d], metric)[suite] for d in dims]
                mean = np.array([100 * e.mean if e else np.nan for e in eff])
                lo = np.array(
                    [
                        100 * (e.mean - e.lo) if e and e.lo is not None else 0.0
                        for e in eff
                    ]
                )
                hi = np.array(
                    [
                        100 * (e.hi - e.mean) if e and e.hi is not None else 0.0
                        for e in eff
                    ]
                )
                ax.barh(
                    y + (j - (len(SUITES) - 1) / 2) * height,
                    mean,
                    height,
                    xerr=[lo, hi],
                    capsize=3,
                    label=f"{title} {metric}",
                    color=f"C{j}",
                )
            ax.axvline(0, color="black", lw=0.8)
            ax.set_yticks(y, [DIMENSION_NAMES.get(d, d) for d in dims])
            ax.invert_yaxis()
            ax.grid(axis="y", visible=False)
            ref_name = ref.meta.row if ref else "reference (not done)"
            ax.set_xlabel(f"Δ {metric} vs {ref_name} (points, 95 % CI)")
            ax.set_title("HSA dimension left out")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(
            handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False
        )
        fig.suptitle(f"HSA-dimension ablation ({sweep.scale_note()})")
        fig.tight_layout()
    return fig


@register("claims")
def claims_forest(sweep: Sweep) -> Figure | None:
    """Each claim of the claims table with an estimate: ours with its 95 %
    interval (a dot alone without one), the paper's figure as a diamond (grey
    beside a proxy row: the real IFEval's figure); the
    differences in points in one panel, the relative error reductions in %
    in another."""
    found = [(c, s) for c in CLAIMS if (s := estimate(sweep, c)) is not None]
    panels = [
        (title, [(c, s) for c, s in found if c.relative == rel])
        for rel, title in (
            (False, "difference (points)"),
            (True, "relative error reduction after the edit (%)"),
        )
    ]
    panels = [(t, rows) for t, rows in panels if rows]
    if not panels:
        return None
    sizes = [len(rows) for _, rows in panels]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            len(panels), 1, figsize=(9.0, 1.2 + 0.38 * sum(sizes)),
            height_ratios=sizes, squeeze=False,
        )  # fmt: skip
        for ax, (title, rows) in zip(axes[:, 0], panels):
            y = np.arange(len(rows))
            for i, (c, s) in enumerate(rows):
                lo, hi = (s.lo, s.hi) if s.lo is not None else (s.mean, s.mean)
                ax.plot([100 * lo, 100 * hi], [i, i], color="C0", lw=2.5)
                ax.plot(100 * s.mean, i, "o", color="C0", ms=5)
                if c.paper is not None:  # a proxy row's: the real IFEval's (grey)
                    color = "0.55" if c.proxy else "C3"
                    ax.plot(c.paper, i, "D", color=color, ms=6, mfc="none")
            ax.axvline(0, color="black", lw=0.8)
            ax.set_yticks(y, [c.short() for c, _ in rows])
            ax.invert_yaxis()
            ax.grid(axis="y", visible=False)
            ax.set_xlabel(title)
        ours = plt.Line2D([], [], color="C0", marker="o", lw=2.5)
        paper = plt.Line2D([], [], color="C3", marker="D", mfc="none", ls="none")
        real = plt.Line2D([], [], color="0.55", marker="D", mfc="none", ls="none")
        names = [
            "ours (bar: 95 % CI; dot alone: none)",
            "paper",
            "paper's real IFEval (proxy rows)",
        ]
        fig.legend(
            [ours, paper, real], names, loc="upper center",
            bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False,
        )  # fmt: skip
        fig.suptitle(f"The paper's claims ({sweep.scale_note()})", y=1.04)
        fig.tight_layout()
    return fig


def save(fig: Figure, path: Path) -> Path:
    """Writes ``fig`` as PNG (legend outside the axes kept) and closes it."""
    fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return path
