"""The priorities notebook's figures and Explore panel (notebook 10): a waterfall per
scheduler on one page, the visual completeness the Speed Index estimate integrates, and
the panel that loads a page once per scheduler (``priorities.run``) per change.

What a panel returns is described in ``panels.py``, which maps every notebook to its panel.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from .explore import Explorer, Inputs, Options, Several, Slider
from .panels_common import _labelled, _load_page, _suptitle, _title

__all__ = ["priorities_panel", "scheduler_waterfalls", "visual_progress", "TYPE_COLORS", "METRIC_LABELS"]

TYPE_COLORS = {
    "document": "#555555",
    "stylesheet": "#9467bd",
    "script": "#ff7f0e",
    "font": "#8c564b",
    "image": "#2ca02c",
    "fetch": "#17becf",
    "xhr": "#17becf",
}
METRIC_LABELS = (
    ("render_blocking_done_s", "render-blocking done (s)"),
    ("lcp_estimate_s", "LCP estimate (s)"),
    ("speed_index_estimate_s", "Speed Index estimate (s)"),
    ("onload_s", "onload (s)"),
)


def visual_progress(resources: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(times, completeness 0..1) of one load's visual completeness as ``metrics`` counts it:
    the document's text at the first paint (the render-blocking set ready), each image when
    it is ready but not before the first paint, each weighing its bytes."""
    first_paint = resources.loc[resources["render_blocking"], "ready_s"].max()
    doc = resources[resources["resource_type"] == "document"].iloc[0]
    steps = [(first_paint, max(int(doc["body_bytes"]), 1))]
    images = resources[
        (resources["resource_type"] == "image") & (resources["body_bytes"] > 0) & resources["ready_s"].notna()
    ]
    steps += [(max(first_paint, t), int(b)) for t, b in zip(images["ready_s"], images["body_bytes"])]
    steps.sort()
    total = sum(w for _, w in steps)
    times = np.array([0.0] + [t for t, _ in steps])
    done = np.cumsum([0] + [w for _, w in steps]) / total
    return times, done


def scheduler_waterfalls(resources: pd.DataFrame, metrics: pd.DataFrame, fig, *, schedulers=None, max_rows: int = 60):
    """One small waterfall per scheduler, side by side on ``fig`` with one time axis: a row
    per response (in request order, the same rows in every panel), a bar from its request
    to its ready time coloured by type; dashed: the render-blocking set done, dotted: the
    LCP estimate (``metrics``: the study's rows, one per scheduler)."""
    from matplotlib.patches import Patch

    schedulers = list(schedulers or dict.fromkeys(resources["scheduler"]))
    axes = fig.subplots(1, len(schedulers), sharey=True, sharex=True, squeeze=False)[0]
    first = resources[resources["scheduler"] == schedulers[0]]
    order = first.sort_values(["requested_s", "index"])["index"].head(max_rows).tolist()
    row_of = {index: y for y, index in enumerate(order)}
    by_name = metrics.set_index("scheduler")
    for ax, name in zip(axes, schedulers):
        df = resources[(resources["scheduler"] == name) & resources["index"].isin(row_of)]
        y = df["index"].map(row_of)
        start = df["requested_s"].fillna(df["arrived_s"])
        ax.barh(
            y,
            (df["ready_s"] - start).clip(lower=0.004),
            left=start,
            height=0.8,
            color=[TYPE_COLORS.get(t, "#1f77b4") for t in df["resource_type"]],
        )
        m = by_name.loc[name]
        ax.axvline(m["render_blocking_done_s"], color="black", linestyle="--", linewidth=1.2)
        ax.axvline(m["lcp_estimate_s"], color="#d62728", linestyle=":", linewidth=1.6)
        _title(ax, name)
        ax.set_xlabel("time (s)")
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks([])
    axes[0].set_ylim(len(order) - 0.5, -0.5)
    axes[0].set_ylabel(f"responses in request order ({len(order)})")
    kinds = [t for t in TYPE_COLORS if t in set(first["resource_type"]) and t != "xhr"]
    handles = [Patch(color=TYPE_COLORS[t]) for t in kinds]
    from matplotlib.lines import Line2D

    handles += [Line2D([], [], color="black", linestyle="--"), Line2D([], [], color="#d62728", linestyle=":")]
    fig.legend(
        handles,
        kinds + ["render-blocking done", "LCP estimate"],
        loc="lower center",
        ncol=len(handles),
        frameon=False,
        bbox_to_anchor=(0.5, -0.02),
    )
    fig.subplots_adjust(bottom=0.22, wspace=0.08)
    return axes


def priorities_panel(trace: str = "synthetic-page.har", base=None) -> Explorer:
    """RTT, bandwidth, loss, protocol, browser profile and the schedulers: one
    ``priorities.run`` (one load per scheduler, same seed) per change."""
    from ..browser.priorities import profile_names
    from ..http.priority import scheduler_names
    from ..studies import priorities as pr

    base = base or pr.PrioritiesParams(browsers=("chromium",))
    controls = {
        "rtt_ms": Slider("RTT", 10, 400, 10, round(base.rtt_s * 1000), unit="ms"),
        "bandwidth_mbit": Options("bandwidth", (1, 2, 5, 10, 20, 50), 10, style="slider", unit="Mbit/s"),
        "loss": Options("loss", (("none", "0"), ("0.5%", "0.005"), ("1%", "0.01"), ("2%", "0.02")), "0"),
        "protocol": Options("protocol", (("HTTP/2", "h2"), ("HTTP/3", "h3")), base.protocol),
        "browser": Options("browser signals", tuple(p for p in profile_names() if p != "trace"), base.browsers[0]),
        "schedulers": Several("schedulers", scheduler_names(), tuple(base.schedulers)),
    }

    def run(v, graph):
        if not v["schedulers"]:
            from ..errors import InputError

            raise InputError("no scheduler ticked: tick at least one under schedulers")
        return pr.run(
            graph,
            replace(
                base,
                rtt_s=v["rtt_ms"] / 1000,
                bandwidth_bps=v["bandwidth_mbit"] * 1e6,
                loss=v["loss"],
                protocol=v["protocol"],
                browsers=(v["browser"],),
                schedulers=tuple(v["schedulers"]),
            ),
        )

    def draw(r, v, fig):
        s = r.summary
        left, right = fig.subplots(1, 2, width_ratios=(3, 2))
        y = np.arange(len(s))
        height = 0.8 / 3
        for k, (col, label) in enumerate(METRIC_LABELS[:3]):
            left.barh(
                y + (k - 1) * height,
                s[col],
                height,
                label=label.replace(" (s)", ""),
                color=("#555555", "#d62728", "#1f77b4")[k],
            )
        left.set_yticks(y, s["scheduler"])
        left.invert_yaxis()
        left.set_xlabel("time since navigation (s)")
        left.grid(axis="x", alpha=0.3)
        left.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
        _title(left, "visual metrics per scheduler")
        for name in s["scheduler"]:
            times, done = visual_progress(r.resources[r.resources["scheduler"] == name])
            right.step(times, done * 100, where="post", label=name)
        right.set_xlabel("time (s)")
        right.set_ylabel("visually complete (%)")
        right.grid(alpha=0.3)
        right.legend(fontsize="small", loc="lower right")
        _title(right, "visual completeness (Speed Index: area above)")
        protocol = controls["protocol"].text(v["protocol"])
        notes = f"; {'; '.join(r.notes)}" if getattr(r, "notes", None) else ""
        _suptitle(
            fig,
            f"{protocol}, RTT {v['rtt_ms']} ms, {v['bandwidth_mbit']} Mbit/s, loss "
            f"{controls['loss'].text(v['loss'])}, {v['browser']} signals{notes}",
            width=140,
        )
        table = _labelled(s.set_index("scheduler"), METRIC_LABELS, index="scheduler")
        return table

    return Explorer(
        "Which response next: one page load per scheduler per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_page,
            suffixes=(".har",),
            default=trace,
            note="HAR page loads; the 300-resource page takes a few seconds per update.",
        ),
        figsize=(10, 4.0),
    )
