"""Page-load figures: the waterfall of one load and gain curves (matplotlib, no global state).

``waterfall(resources, ax)`` draws one row per resource of a page load (the
``resources`` table of ``studies.push.run`` for one policy): a thin line from discovery
to the request, a bar from the request (or the push promise) to arrival, coloured by
where the resource came from, render-blocking rows in bold, and vertical lines at the
document, the render-blocking set and onload.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd

__all__ = ["waterfall", "SOURCE_COLORS", "gain_lines"]

SOURCE_COLORS = {"network": "#1f77b4", "hint": "#2ca02c", "push": "#d62728", "cache": "#bbbbbb",
                 "duplicate": "#dddddd"}
POLICY_STYLES = {"none": ("#555555", "-"), "push": ("#d62728", "--"), "hints": ("#2ca02c", "-."),
                 "push+hints": ("#9467bd", ":"), "hints-cdn": ("#8c564b", "-")}


def waterfall(resources: pd.DataFrame, ax=None, *, title: str | None = None, max_rows: int = 40,
              pushes: pd.DataFrame | None = None):
    """The waterfall of one page load (see the module docstring).  Shows the first
    ``max_rows`` resources by discovery time."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    df = resources.sort_values(["discovered_s", "index"]).head(max_rows).reset_index(drop=True)
    promised = {}
    if pushes is not None and len(pushes):
        promised = dict(zip(pushes["url"], pushes["promised_s"]))
    for y, row in df.iterrows():
        color = SOURCE_COLORS.get(row["source"], "#1f77b4")
        start = row["requested_s"]
        if row["source"] == "push":
            start = promised.get(row["url"], row["arrived_s"])
        if math.isnan(start):
            start = row["arrived_s"]
        if not math.isnan(row["discovered_s"]) and row["discovered_s"] < start:
            ax.plot([row["discovered_s"], start], [y, y], color=color, linewidth=0.8, alpha=0.5)
        ax.barh(y, max(row["arrived_s"] - start, 0.002), left=start, height=0.7, color=color,
                edgecolor="black" if row["render_blocking"] else "none", linewidth=1.2 if row["render_blocking"] else 0)
        if not math.isnan(row["ready_s"]) and row["ready_s"] > row["arrived_s"] + 1e-9:
            ax.plot([row["arrived_s"], row["ready_s"]], [y, y], color=color, linewidth=0.8, linestyle=":")
    doc = resources.loc[resources["resource_type"] == "document", "arrived_s"].min()
    blocking = resources.loc[resources["render_blocking"], "ready_s"].max()
    onload = resources["ready_s"].max()
    lines = [ax.axvline(x, color="black", linestyle=style, linewidth=1)
             for x, style in ((doc, ":"), (blocking, "--"), (onload, "-"))]
    line_labels = [f"document {doc:.2f} s", f"render-blocking {blocking:.2f} s", f"onload {onload:.2f} s"]
    ax.set_ylim(len(df) - 0.5, -0.5)
    ax.set_yticks(range(len(df)))
    ax.set_yticklabels([f"{r.resource_type[:6]} {r.url.split('://', 1)[-1][:28]}" for r in df.itertuples()], fontsize=6)
    ax.set_xlabel("time since navigation (s)")
    shown = [s for s in SOURCE_COLORS if s in set(df["source"])]
    handles = [plt.Rectangle((0, 0), 1, 1, color=SOURCE_COLORS[s]) for s in shown]
    ax.legend(handles + lines, shown + line_labels, loc="lower right", fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax


def gain_lines(df: pd.DataFrame, x: str, y: str, ax=None, *, xlabel: str | None = None, ylabel: str | None = None,
               title: str | None = None):
    """One line per policy: the median of ``y`` over seeds against ``x``, with the
    min-max band over seeds."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for policy, g in df.groupby("policy", sort=False):
        stats = g.groupby(x)[y].agg(["median", "min", "max"]).sort_index()
        color, style = POLICY_STYLES.get(policy, (None, "-"))
        ax.plot(stats.index, stats["median"], label=policy, color=color, linestyle=style, marker="o", markersize=3)
        ax.fill_between(stats.index, stats["min"], stats["max"], color=color, alpha=0.12)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax
