"""Fidelity figures: simulated against measured onLoad, and one page real vs simulated.

``onload_scatter(pages, ax)`` draws one point per page (log axes, the diagonal and the
+-20% band), coloured by the HAR's producer, with Spearman's rho and the MAPE in the title.
``waterfall_compare(graph, simulated, ax)`` draws each resource of one page twice: the
capture's request as it was measured (grey, from the HAR's start and timings) and the
model's (blue, from the ``resources`` table of ``browser.load_page``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .plots import plain_log_ticks, slides_on, subplots
from .waterfall import row_labels

__all__ = ["onload_scatter", "waterfall_compare", "errors_by"]

_PHASES = ("blocked", "dns", "connect", "send", "wait", "receive")


def onload_scatter(pages: pd.DataFrame, summary: dict, ax=None, *, hue: str = "creator"):
    """Simulated against measured onLoad per page (log-log), with the 20% band and the summary in the title."""
    if ax is None:
        _, ax = subplots(size=(6, 6))
    for name, group in pages.groupby(pages[hue].fillna("?").str.split().str[0] if hue in pages else "all"):
        ax.scatter(group["measured_onload_s"], group["simulated_onload_s"], label=name, s=28, alpha=0.8)
    lo = 0.8 * min(pages["measured_onload_s"].min(), pages["simulated_onload_s"].min())
    hi = 1.25 * max(pages["measured_onload_s"].max(), pages["simulated_onload_s"].max())
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, color="black", linewidth=1)
    ax.fill_between(xs, 0.8 * xs, 1.2 * xs, color="grey", alpha=0.15, label="within 20%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    plain_log_ticks(ax)
    ax.set_xlabel("measured onLoad (s)")
    ax.set_ylabel("simulated onLoad (s)")
    rho = summary.get("spearman_rho")
    ax.set_title(
        f"{summary['pages']} pages: Spearman rho {f'{rho:.2f}' if rho is not None else 'n/a'}, "
        f"MAPE {summary['mape_percent']:.1f}%"
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small", loc="upper left")
    return ax


def waterfall_compare(
    graph,
    simulated: pd.DataFrame,
    start_offset_s: float,
    page_start_s: float | None,
    ax=None,
    *,
    max_rows: int | None = None,
    title: str | None = None,
):
    """Measured (grey) and simulated (blue) request-to-arrival bars of each resource (the
    first ``max_rows`` requested: default 30, 20 on a slide); rows named as ``row_labels`` does."""
    if ax is None:
        _, ax = subplots(size=(9, 6))
    if max_rows is None:
        max_rows = 20 if slides_on() else 30
    base = page_start_s if page_start_s is not None else (graph[0].start_s or 0.0)
    rows = simulated.sort_values(["requested_s", "index"]).head(max_rows).reset_index(drop=True)
    urls, types = [], []
    for y, row in rows.iterrows():
        r = graph[int(row["index"])]
        if r.start_s is not None and r.timings:
            start = r.start_s - base
            total = sum(v for k, v in r.timings.items() if k in _PHASES and isinstance(v, (int, float)) and v > 0)
            ax.barh(y - 0.2, max(total / 1000.0, 0.002), left=start, height=0.38, color="#999999")
        if row["requested_s"] == row["requested_s"]:
            ax.barh(
                y + 0.2,
                max(row["arrived_s"] - row["requested_s"], 0.002),
                left=row["requested_s"] + start_offset_s,
                height=0.38,
                color="#1f77b4",
            )
        urls.append(r.url)
        types.append(r.resource_type)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(row_labels(urls, types))
    ax.set_xlabel("time since the page's start (s)")
    ax.legend(
        [plt.Rectangle((0, 0), 1, 1, color="#999999"), plt.Rectangle((0, 0), 1, 1, color="#1f77b4")],
        ["measured (HAR)", "simulated"],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax


def errors_by(pages: pd.DataFrame, column: str, ax=None, *, title: str | None = None):
    """Absolute percentage error per group of ``column`` (a box per group, the points over it)."""
    if ax is None:
        _, ax = subplots(size=(6, 3.5))
    groups = [(name, g["error_percent"].abs().to_numpy()) for name, g in pages.groupby(column)]
    ax.boxplot([g for _, g in groups], showfliers=False)
    ax.set_xticks(range(1, len(groups) + 1), [str(n) for n, _ in groups], rotation=15)
    for i, (_, values) in enumerate(groups, start=1):
        ax.scatter(np.full(len(values), i), values, s=12, alpha=0.6, color="#1f77b4")
    ax.set_ylabel("absolute error of onLoad (%)")
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax
