"""Figures shared by the CLI, the notebooks and the slides (matplotlib).

Each function draws on an ``ax`` it is given (or a new figure) and returns the axes, so a
notebook can compose them and ``savefig`` writes PNG and PDF side by side.

Slides: ``workbench slides`` runs a notebook with the *slide style* on
(``use_slide_style()``; ``slide_style()`` is the same as a ``with`` block).  The same
plotting code then draws for a 1280x720 slide: ``subplots()`` makes every figure the
size of a slide's figure area (``SLIDE_FIGSIZE``, about 100 px per inch on the slide)
whatever size the notebook asks for, and the style's fonts (``SLIDE_RC``) are 13 to
16 pt, 18 to 22 px on the slide (``"small"`` text, 11.7 pt, about 16 px).
Functions here size their text from the style (never a fixed small ``fontsize``) and put
legends beside the axes, not over the data.
"""

from __future__ import annotations

import statistics
from contextlib import contextmanager
from pathlib import Path

import matplotlib

if not matplotlib.get_backend().lower().startswith(("module://", "inline", "nbagg", "widget", "ipympl")):
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = [
    "hol_cdf",
    "scheme_bars",
    "metric_with_band",
    "savefig",
    "SCHEME_COLORS",
    "subplots",
    "slide_style",
    "use_slide_style",
    "slides_on",
    "legend_outside",
    "data_ticks",
    "plain_log_ticks",
    "SLIDE_FIGSIZE",
    "SLIDE_RC",
    "predicted_vs_measured",
]

# A slide is 1280x720 px; under its title a figure has about 1230x600 px.  At 12.3x6.0 in
# a figure is shown at 100 px per inch, so a font of P points is P * 100 / 72 px tall.
SLIDE_FIGSIZE = (12.3, 6.0)
SLIDE_RC = {
    "figure.figsize": SLIDE_FIGSIZE,
    "font.size": 14,
    "axes.titlesize": 16,
    "axes.labelsize": 15,
    "xtick.labelsize": 13,
    "ytick.labelsize": 13,
    "legend.fontsize": 13,
    "legend.title_fontsize": 13,
    "figure.titlesize": 16,
    "lines.linewidth": 2.2,
    "lines.markersize": 7,
    "axes.titlepad": 8,
}
_SLIDES = {"on": False}


def slides_on() -> bool:
    """True while figures are drawn for a deck (``use_slide_style``/``slide_style``)."""
    return _SLIDES["on"]


def use_slide_style() -> None:
    """Draw every following figure for a 16:9 slide (what ``workbench slides`` does)."""
    plt.rcParams.update(SLIDE_RC)
    _SLIDES["on"] = True


@contextmanager
def slide_style():
    """``with slide_style():`` figures drawn inside are sized and lettered for a slide."""
    was = _SLIDES["on"]
    with plt.rc_context(SLIDE_RC):
        _SLIDES["on"] = True
        try:
            yield
        finally:
            _SLIDES["on"] = was


def subplots(nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] = (7, 4), **kwargs):
    """``plt.subplots`` with constrained layout: ``size`` (inches) in a notebook, the
    slide's figure area (``SLIDE_FIGSIZE``) when drawing for a deck."""
    figsize = SLIDE_FIGSIZE if slides_on() else size
    kwargs.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=figsize, **kwargs)


def legend_outside(ax, *args, **kwargs):
    """A legend to the right of the axes, so it never covers bars or lines."""
    kwargs.setdefault("loc", "upper left")
    kwargs.setdefault("bbox_to_anchor", (1.01, 1.0))
    kwargs.setdefault("borderaxespad", 0.0)
    return ax.legend(*args, **kwargs)


def data_ticks(ax, values, axis: str = "x", fmt="{:g}"):
    """Label an axis at the data's own values only (``fmt``: a format string or a function):
    a log axis that spans less than a decade labels its minor ticks too, and a linear one
    in slide fonts can carry more labels than fit; either way the labels collide."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator

    values = sorted(set(float(v) for v in values))
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    label = fmt if callable(fmt) else fmt.format
    target.set_major_formatter(FixedFormatter([label(v) for v in values]))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
    return ax


SCHEME_COLORS = {
    "hpack": "#d62728",
    "qpack": "#1f77b4",
    "qcram": "#2ca02c",
    "qcram-blocking": "#9467bd",
    "hpack over TCP": "#ff7f0e",
}


def plain_log_ticks(ax, axis: str = "both"):
    """Label a log axis with plain numbers (0.1, 1, 10, 100) and no minor labels: the
    ``10^n`` labels' exponents are too small to read on a slide, and minor labels collide."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for target, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if axis not in ("both", target.axis_name) or scale != "log":
            continue
        target.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        target.set_minor_formatter(NullFormatter())
    return ax


def _ax(ax):
    if ax is None:
        _, ax = subplots(size=(6, 4))
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
        ax.step(
            np.concatenate([[0.0], x]),
            np.concatenate([[1 - blocked / len(x)], y]),
            where="post",
            label=f"{scheme} ({blocked} of {len(x)} blocked)",
            color=SCHEME_COLORS.get(scheme),
            linestyle=styles[n % len(styles)],
            linewidth=1.8,
        )
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


def metric_with_band(
    runs: pd.DataFrame,
    x: str,
    y: str,
    ax=None,
    *,
    hue: str = "scheme",
    xlabel: str | None = None,
    ylabel: str | None = None,
    level: float = 0.95,
):
    """Mean of ``y`` against ``x`` per ``hue`` with a bootstrap confidence band over seeds."""
    from ..stats import confidence_band

    ax = _ax(ax)
    for key, df in runs.groupby(hue, sort=False):
        xs, mean, lo, hi = [], [], [], []
        for xv, g in df.groupby(x):
            m, low, high = confidence_band(g[y], level=level)
            xs.append(xv)
            mean.append(m)
            lo.append(low)
            hi.append(high)
        (line,) = ax.plot(xs, mean, marker="o", label=str(key), color=SCHEME_COLORS.get(key))
        ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())  # the band in its line's colour
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


def predicted_vs_measured(ax, pages) -> None:
    """Predicted against measured onLoad, one point per ``(page, colour)`` (its runs as a
    range), on equal axes from 0 with the diagonal (a perfect prediction): the lab's validation
    figure (``lab.report``) and its Explore panel (``panels_lab``) draw the same one."""
    top = 0.0
    for p, colour in pages:
        if p["predicted_onload_s"] is None:
            continue
        runs = p["measured_onload_s"]
        median = statistics.median(runs)
        ax.errorbar(
            median,
            p["predicted_onload_s"],
            xerr=[[median - min(runs)], [max(runs) - median]],
            fmt="o",
            ms=4,
            alpha=0.8,
            color=colour,
        )
        top = max(top, max(runs), p["predicted_onload_s"])
    top = top * 1.1 or 1.0
    ax.plot([0, top], [0, top], color="grey", lw=1)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
