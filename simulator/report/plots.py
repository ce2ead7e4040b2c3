"""Figures shared by the CLI, the notebooks and the slides (matplotlib, no global state).

Each function draws on an ``ax`` it is given (or a new figure) and returns the axes, so a
notebook can compose them and ``savefig`` writes PNG and PDF side by side.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg") if not matplotlib.get_backend().lower().startswith(("module://", "inline", "nbagg", "widget", "ipympl")) else None

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["hol_cdf", "scheme_bars", "metric_with_band", "savefig", "SCHEME_COLORS"]

SCHEME_COLORS = {"hpack": "#d62728", "qpack": "#1f77b4", "qcram": "#2ca02c", "qcram-blocking": "#9467bd",
                 "hpack over TCP": "#ff7f0e"}


def _ax(ax):
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    return ax


def hol_cdf(blocks: pd.DataFrame, ax=None, *, title: str | None = None):
    """Empirical CDF of per-block HOL delay (ms) for each scheme.

    Most blocks are never blocked, so the y axis starts just below the smallest
    fraction of unblocked blocks: the part of the curve that differs is what shows.
    """
    ax = _ax(ax)
    lowest = 1.0
    styles = ["-", "--", "-.", ":"]
    for n, (scheme, df) in enumerate(blocks.groupby("scheme", sort=False)):
        x = np.sort(df["hol_delay_ms"].to_numpy())
        y = np.arange(1, len(x) + 1) / len(x)
        blocked = int((x > 1e-6).sum())
        lowest = min(lowest, 1 - blocked / len(x))
        ax.step(np.concatenate([[0.0], x]), np.concatenate([[1 - blocked / len(x)], y]), where="post",
                label=f"{scheme} ({blocked} of {len(x)} blocked)", color=SCHEME_COLORS.get(scheme),
                linestyle=styles[n % len(styles)], linewidth=1.8)
    ax.set_xlabel("HOL delay per header block (ms)")
    ax.set_ylabel("fraction of header blocks")
    ax.set_ylim(max(0.0, lowest - 0.05), 1.005)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    if title:
        ax.set_title(title)
    return ax


def scheme_bars(summary: pd.DataFrame, column: str, ax=None, *, ylabel: str | None = None):
    """One bar per scheme for a summary column (e.g. blocked, ratio)."""
    ax = _ax(ax)
    names = list(summary.index)
    ax.bar(names, summary[column], color=[SCHEME_COLORS.get(n, "grey") for n in names])
    ax.set_ylabel(ylabel or column)
    ax.grid(axis="y", alpha=0.3)
    return ax


def metric_with_band(runs: pd.DataFrame, x: str, y: str, ax=None, *, hue: str = "scheme",
                     xlabel: str | None = None, ylabel: str | None = None, level: float = 0.95):
    """Mean of ``y`` against ``x`` per ``hue`` with a bootstrap confidence band over seeds."""
    from ..stats import confidence_band

    ax = _ax(ax)
    for key, df in runs.groupby(hue, sort=False):
        xs, mean, lo, hi = [], [], [], []
        for xv, g in df.groupby(x):
            m, l, h = confidence_band(g[y], level=level)
            xs.append(xv); mean.append(m); lo.append(l); hi.append(h)
        (line,) = ax.plot(xs, mean, marker="o", label=str(key), color=SCHEME_COLORS.get(key))
        ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())      # the band in its line's colour
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def savefig(fig, path: str | Path) -> list[Path]:
    """Write ``path`` as PNG and PDF side by side; returns both paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in (".png", ".pdf"):
        target = path.with_suffix(ext)
        fig.savefig(target, dpi=150, bbox_inches="tight")
        out.append(target)
    return out
