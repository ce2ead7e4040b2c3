"""A validation's table and figure (``workbench lab validate --report DIR``, ``make validate``).

``validation.md`` (and ``validation.json``, the whole result): per condition the model's
out-of-sample MAPE, median APE and Spearman's rho beside the lab's run-to-run floor, and
the overall line; ``validation.png``: predicted against measured onLoad for every page and
condition (each measurement's runs as a range), and per condition the model's MAPE beside the floor.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["write_report", "table_markdown", "resent_markdown", "figure"]


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _span(v) -> str:
    return "n/a" if not v else f"{v[0]:.1f}-{v[1]:.1f}%"


def table_markdown(result: dict) -> str:
    """The validation as a Markdown table (one row per condition, the reference first)."""
    lines = [
        "| condition | protocol | pages | MAPE | median APE | rho | floor (run to run) | MAPE / floor "
        "| MAPE from each reference run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = ([(result["reference"], True)] if result.get("reference") else []) + [
        (c, False) for c in result["conditions"]
    ]
    for c, is_ref in rows:
        cond = c["condition"]
        ratio = (
            f"{c['mape_percent'] / c['floor_mape_percent']:.2f}x"
            if c["mape_percent"] is not None and c["floor_mape_percent"]
            else "n/a"
        )
        label = f"`{cond['conditions']}`" + (" (reference, in sample)" if is_ref else "")
        lines.append(
            f"| {label} | {cond['protocol']} | {len(c['pages'])} | {_pct(c['mape_percent'])} | "
            f"{_pct(c['median_ape_percent'])} | "
            f"{c['spearman_rho'] if c['spearman_rho'] is not None else 'n/a'} | "
            f"{_pct(c['floor_mape_percent'])} | {ratio} | {_span(c.get('reference_spread_mape_percent'))} |"
        )
    s = result["summary"]
    lines.append(
        f"| **out of sample, all {s.get('conditions', len(result['conditions']))} conditions** | | "
        f"{s['pages']} | **{_pct(s['mape_percent'])}** | {_pct(s['median_ape_percent'])} | "
        f"{s['spearman_rho'] if s['spearman_rho'] is not None else 'n/a'} | "
        f"{_pct(s['floor_mape_percent'])} | | {_span(s.get('reference_spread_mape_percent'))} |"
    )
    return "\n".join(lines) + "\n"


def _g(v) -> str:
    return "n/a" if v is None else f"{v:g}"


def resent_markdown(result: dict) -> str:
    """What was resent, per condition: the lab server's kernel TCP segments resent per load
    (RetransSegs in its namespace; HTTP/2 only) beside the model's timeouts per load (RTOs and
    PTOs, and how many of them it found spurious); empty when no condition carries the counts."""
    rows = [
        c for c in ([result["reference"]] if result.get("reference") else []) + result["conditions"] if c.get("resent")
    ]
    if not rows:
        return ""
    lines = [
        "| condition | protocol | lab: segments resent per load (median, most) | "
        "model: timeouts per load (median, most) | model: found spurious (all loads) | "
        "model: packets lost per load (median) |",
        "|---|---|---|---|---|---|",
    ]

    def pair(r: dict, key: str) -> str:
        return "n/a" if f"{key}_median" not in r else f"{r[f'{key}_median']:g}, {r[f'{key}_max']:g}"

    for c in rows:
        r = c["resent"]
        lines.append(
            f"| `{c['condition']['conditions']}` | {c['condition']['protocol']} | "
            f"{pair(r, 'lab_server_tcp_retransmits')} | {pair(r, 'model_timeouts')} | "
            f"{r.get('model_spurious_timeouts', 'n/a')} | {_g(r.get('model_packets_lost_median'))} |"
        )
    return "\n".join(lines) + "\n"


def figure(result: dict):
    """Predicted against measured onLoad (runs as a range), and MAPE beside the floor per condition."""
    from ..report.plots import predicted_vs_measured, subplots

    fig, (ax, bars) = subplots(1, 2, size=(12, 4.8))
    colours = {"h2": "tab:blue", "h3": "tab:orange"}
    predicted_vs_measured(
        ax, [(p, colours.get(c["condition"]["protocol"], "grey")) for c in result["conditions"] for p in c["pages"]]
    )
    ax.set_xlabel("measured onLoad in the lab (s; median, runs as range)")
    ax.set_ylabel("predicted from the reference load (s)")
    for proto, colour in colours.items():
        ax.plot([], [], "o", color=colour, label=proto)
    ax.legend(loc="upper left")
    ax.set_title("out of sample: every point a page at a condition it was not recorded at")
    labels = [f"{c['condition']['conditions']}\n{c['condition']['protocol']}" for c in result["conditions"]]
    x = range(len(labels))
    bars.bar(
        [i - 0.2 for i in x],
        [c["mape_percent"] or 0 for c in result["conditions"]],
        width=0.4,
        label="model MAPE",
        color="tab:red",
    )
    bars.bar(
        [i + 0.2 for i in x],
        [c["floor_mape_percent"] or 0 for c in result["conditions"]],
        width=0.4,
        label="lab floor (run to run)",
        color="tab:grey",
    )
    bars.set_xticks(list(x))
    bars.set_xticklabels(labels, rotation=60, ha="right")
    bars.set_ylabel("onLoad error (%)")
    bars.legend(loc="upper left")
    return fig


def _inside(result: dict) -> dict:
    """The result with each page named by its file name alone when its path leaves the
    folder it was run from (``..`` or absolute): a report names what it measured, not
    where one machine kept it."""

    def name(trace: str) -> str:
        p = Path(trace)
        return p.name if p.is_absolute() or ".." in p.parts else trace

    def entry(e: dict) -> dict:
        return {**e, "pages": [{**page, "trace": name(page["trace"])} for page in e["pages"]]}

    out = {**result, "conditions": [entry(c) for c in result["conditions"]]}
    if result.get("reference"):
        out["reference"] = entry(result["reference"])
    return out


def write_report(result: dict, folder: str | Path) -> list[Path]:
    """``validation.md``, ``validation.json`` and ``validation.png`` into ``folder``; the paths written."""
    from ..traces._io import atomic_write

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result = _inside(result)
    md = folder / "validation.md"
    ref = result["params"]["reference"]
    text = (
        f"# The page-load model against the lab\n\nEach page was recorded in the lab at `{ref['conditions']}` "
        f"over {ref['protocol']}, and every other condition was predicted from that one HAR "
        "(`workbench fidelity --at`) and measured. Errors are of onLoad against the median of the runs; the "
        "floor is the same metric between repeated real loads.  The reference HAR is the run with the median "
        "onLoad of its condition; the last column is the MAPE with every page predicted from its fastest, "
        "and from its slowest, reference run instead: how much the choice of one reference run moves it.\n\n"
        + table_markdown(result)
        + "\n![predicted against measured](validation.png)\n"
    )
    resent = resent_markdown(result)
    if resent:
        text += (
            "\n## What was resent\n\nWith nothing lost on the link, a sender should resend about nothing: the "
            "lab counts its server's kernel TCP segments resent (tail loss probes included), the model its "
            "retransmission timeouts and PTOs and those it found spurious and undid.\n\n" + resent
        )
    atomic_write(md, text.encode())
    atomic_write(folder / "validation.json", (json.dumps(result, indent=1) + "\n").encode())
    fig = figure(result)
    png = folder / "validation.png"
    fig.savefig(png, dpi=150, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return [md, folder / "validation.json", png]
