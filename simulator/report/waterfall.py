"""Page-load figures: the waterfall of one load and gain curves (matplotlib, no global state).

``waterfall(resources, ax)`` draws one row per resource of a page load (the
``resources`` table of ``studies.push.run`` for one policy): a thin line from discovery
to the request, a bar from the request (or the push promise) to arrival, coloured by
where the resource came from, render-blocking rows in bold, and vertical lines at the
document, the render-blocking set and onload.
"""

from __future__ import annotations

import ipaddress
import math
import re
from urllib.parse import urlsplit

import matplotlib.pyplot as plt
import pandas as pd

__all__ = ["waterfall", "row_labels", "SOURCE_COLORS", "gain_lines"]

SOURCE_COLORS = {
    "network": "#1f77b4",
    "hint": "#2ca02c",
    "push": "#d62728",
    "cache": "#bbbbbb",
    "duplicate": "#dddddd",
    "internal": "#eeeeee",
}
POLICY_STYLES = {
    "none": ("#555555", "-"),
    "push": ("#d62728", "--"),
    "hints": ("#2ca02c", "-."),
    "push+hints": ("#9467bd", ":"),
    "hints-cdn": ("#8c564b", "-"),
    "hints-cdn, edge seen": ("#8c564b", ":"),
}


_TYPE_SHORT = {
    "document": "doc",
    "stylesheet": "css",
    "script": "js",
    "font": "font",
    "image": "img",
    "fetch": "fetch",
    "xhr": "xhr",
    "media": "media",
    "other": "other",
}
_FINGERPRINT = re.compile(r"[.-][0-9a-f]{6,}(?=[.-]|$)")


def _host(url: str) -> str:
    host = urlsplit(url).hostname or ""
    try:
        ipaddress.ip_address(host)
        return host  # an address stays whole
    except ValueError:
        pass
    parts = host.split(".")
    if parts[:1] == ["www"]:
        parts = parts[1:]
    return ".".join(parts[:-1] if len(parts) > 1 else parts)  # the top-level domain says nothing


def _middle_cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: keep - keep // 2] + "\u2026" + text[len(text) - keep // 2 :]


def row_labels(urls, resource_types, *, width: int = 34) -> list[str]:
    """What each waterfall row is: short type, host (no www, no TLD) and the end of the path
    without build fingerprints (``js static.news-site/culture.js``); more of the path where
    two rows would read the same."""
    paths = []
    for url in urls:
        parts = urlsplit(url)
        segs = [_FINGERPRINT.sub("", s) for s in parts.path.split("/") if s]
        paths.append(segs)
    depth = [1] * len(paths)
    for i, segs in enumerate(paths):  # an extension-less last segment (gtag/js) needs its parent
        if segs and "." not in segs[-1]:
            depth[i] = 2

    def label(i: int) -> str:
        segs = paths[i]
        tail = "/".join(segs[-depth[i] :]) if segs else ""
        kind = _TYPE_SHORT.get(resource_types[i], str(resource_types[i])[:5])
        host = _host(urls[i])
        if len(host) + len(tail) >= width and not host[-1:].isdigit():  # too long: the site's own name,
            host = host.split(".")[-1]  # then cut the path's middle
        return f"{kind} {host}/" + _middle_cut(tail, max(8, width - len(host) - 1))

    labels = [label(i) for i in range(len(paths))]
    for _ in range(4):  # lengthen the paths of rows that read the same
        seen: dict[str, list[int]] = {}
        for i, text in enumerate(labels):
            seen.setdefault(text, []).append(i)
        clashes = [rows for rows in seen.values() if len(rows) > 1]
        if not clashes:
            break
        for rows in clashes:
            for i in rows:
                depth[i] += 1
                labels[i] = label(i)
    counts: dict[str, int] = {}
    for i, text in enumerate(labels):  # still the same (same path, other query): number them
        counts[text] = counts.get(text, 0) + 1
        if counts[text] > 1:
            labels[i] = f"{text} #{counts[text]}"
    return labels


def waterfall(
    resources: pd.DataFrame,
    ax=None,
    *,
    title: str | None = None,
    max_rows: int | None = None,
    pushes: pd.DataFrame | None = None,
    only=None,
    xlim: tuple[float, float] | None = None,
):
    """The waterfall of one page load (see the module docstring).  Shows the resources
    whose index is in ``only`` (default: all), the first ``max_rows`` by discovery time
    (default 40, 20 on a slide); the legend sits beside the axes."""
    from .plots import legend_outside, slides_on, subplots

    if ax is None:
        _, ax = subplots(size=(10, 7))
    if max_rows is None:
        max_rows = 20 if slides_on() else 40
    shown = resources if only is None else resources[resources["index"].isin(list(only))]
    df = shown.sort_values(["discovered_s", "index"]).head(max_rows).reset_index(drop=True)
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
            ax.plot([row["discovered_s"], start], [y, y], color=color, linewidth=1.0, alpha=0.5)
        ax.barh(
            y,
            max(row["arrived_s"] - start, 0.002),
            left=start,
            height=0.7,
            color=color,
            edgecolor="black" if row["render_blocking"] else "none",
            linewidth=1.2 if row["render_blocking"] else 0,
        )
        if not math.isnan(row["ready_s"]) and row["ready_s"] > row["arrived_s"] + 1e-9:
            ax.plot([row["arrived_s"], row["ready_s"]], [y, y], color=color, linewidth=1.0, linestyle=":")
    doc = resources.loc[resources["resource_type"] == "document", "arrived_s"].min()
    blocking = resources.loc[resources["render_blocking"], "ready_s"].max()
    onload = resources["ready_s"].max()
    lines = [
        ax.axvline(x, color="black", linestyle=style, linewidth=1.2)
        for x, style in ((doc, ":"), (blocking, "--"), (onload, "-"))
    ]
    line_labels = [f"document {doc:.2f} s", f"render-blocking {blocking:.2f} s", f"onload {onload:.2f} s"]
    ax.set_ylim(len(df) - 0.5, -0.5)
    ax.set_yticks(range(len(df)))
    ax.set_yticklabels(row_labels(list(df["url"]), list(df["resource_type"])))
    for tick, blocking_row in zip(ax.get_yticklabels(), df["render_blocking"]):
        if blocking_row:
            tick.set_fontweight("bold")
    ax.set_xlabel("time since navigation (s)")
    if xlim is not None:
        ax.set_xlim(*xlim)
    kinds = [s for s in SOURCE_COLORS if s in set(df["source"])]
    handles = [plt.Rectangle((0, 0), 1, 1, color=SOURCE_COLORS[s]) for s in kinds]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", linewidth=1.2))
    legend_outside(
        ax,
        handles + lines,
        [f"{s} fetch" if s in ("network", "hint") else s for s in kinds] + ["render-blocking (bold)"] + line_labels,
    )
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax


def gain_lines(
    df: pd.DataFrame,
    x: str,
    y: str,
    ax=None,
    *,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    legend: bool = True,
):
    """One line per policy: the median of ``y`` over seeds against ``x``, with the
    min-max band over seeds; the legend (``legend=False``: none) beside the axes."""
    from .plots import legend_outside, subplots

    if ax is None:
        _, ax = subplots(size=(7, 4))
    for policy, g in df.groupby("policy", sort=False):
        stats = g.groupby(x)[y].agg(["median", "min", "max"]).sort_index()
        color, style = POLICY_STYLES.get(policy, (None, "-"))
        ax.plot(stats.index, stats["median"], label=policy, color=color, linestyle=style, marker="o")
        ax.fill_between(stats.index, stats["min"], stats["max"], color=color, alpha=0.12)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.grid(alpha=0.3)
    if legend:
        legend_outside(ax)
    if title:
        ax.set_title(title)
    return ax
