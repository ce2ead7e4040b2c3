"""``workbench lab validate-priorities``: the priorities study's schedulers behind real Chromium,
measured in the lab and predicted by the page-load model.

For every page: record it at a reference condition with the servers' own order (the run with
the median onLoad is the reference HAR), then load it at every condition (RTT x bandwidth)
with every scheduler, ``--runs`` times each (``lab-load --scheduler``: the lab's servers send
in that scheduler's order, with the signals Chromium sent, ``lab.schedule``).  The model
predicts every scheduler at every condition from the one reference HAR (``fidelity --at``'s
conditions, and the scheduler on every server with the ``chromium`` profile's signals,
``browser.priorities.browser_signals``, no reprioritization): it never sees a load of the
scheduler or condition it predicts.

Per page x condition x scheduler: the lab's median onLoad, first contentful paint and largest
contentful paint, and the model's onLoad, render-blocking set done (the first paint's floor)
and LCP estimate (``studies.priorities.metrics``).  What is held against the lab is each
scheduler's cost against the baseline scheduler (``rfc9218``), per metric: measured (median
of the scheduler's runs minus the baseline's; the floor is half the range of the run pairs'
differences, run i with run i, as ``validate-hints``), predicted, their sign, and whether the
predicted cost is within 20% of the measured or within the floor; and per page x condition
Kendall's tau-b between the model's order of the schedulers and the lab's, per metric.

Hand-written here: the table and the statistics; the loads run on the batch runner
(``lab-load``), so a validation resumes where it stopped.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ..errors import InputError
from ..net.conditions import PathConditions
from .hints import _name  # a trace as a report names it

__all__ = ["validate_priorities", "analyse_priorities", "priorities_table", "write_priorities_report", "METRICS"]

BASELINE = "rfc9218"
# (name, the lab's column, the model's metric)
METRICS = (
    ("onload", "onload_s", "onload_s"),
    ("fcp", "fcp_s", "render_blocking_done_s"),
    ("lcp", "lcp_s", "lcp_estimate_s"),
)


def _num(v) -> float | None:
    return None if v is None or v != v else float(v)


def _scheduler(v) -> str | None:
    return None if v is None or v != v else str(v)


def predict_metrics(
    har_json: str, trace: str, at: PathConditions, protocol: str, scheduler: str, *, seed: int = 1, cc=None
) -> dict:
    """The model's onLoad, render-blocking set done and LCP estimate of the reference HAR's page at
    ``at`` with ``scheduler`` on every server (seconds from the page's start)."""
    from ..browser.priorities import browser_signals
    from ..http.priority import PriorityPlan
    from ..studies.priorities.metrics import visual_metrics
    from .hints import predict_load

    def plan(graph):
        signals, _ = browser_signals(graph, "chromium", protocol, reprioritize=False)
        return PriorityPlan(scheduler, signals)

    graph, result, offset = predict_load(har_json, trace, at, protocol, seed=seed, cc=cc, priorities=plan)
    metrics = visual_metrics(result.resources, graph)
    return {model: round(offset + metrics[model], 4) for _, _, model in METRICS}


def analyse_priorities(out: str, reference: dict, *, seed: int = 1) -> dict:
    """The check's figures from a results folder holding the reference and grid loads."""
    from ..batch.store import load
    from ..studies.priorities.compare import kendall_tau_b
    from .hints import gain_stats, within

    summary = load(out, "summary")
    if not len(summary):
        raise InputError("holds no finished lab load.", path=str(out))
    for col in ("scheduler", "cc"):
        if col not in summary.columns:
            summary[col] = None
    protocol = reference.get("protocol", "h2")
    ref_rtt, ref_bw = float(reference["rtt_s"]), _num(reference["bandwidth_bps"])
    rows = [r for r in summary.to_dict(orient="records") if str(r["protocol"]) == protocol]

    def is_ref(r) -> bool:
        return (
            float(r["rtt_s"]) == ref_rtt and _num(r["bandwidth_bps"]) == ref_bw and _scheduler(r["scheduler"]) is None
        )

    hars = load(out, "har")[["job_id", "har_json"]].merge(summary, on="job_id")
    hars = hars[[is_ref(r) and str(r["protocol"]) == protocol for r in hars.to_dict(orient="records")]]
    hars = hars.dropna(subset=["onload_s"])
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        name = _scheduler(r["scheduler"])
        if name is None or _num(r["onload_s"]) is None:
            continue
        key = (r["trace"], float(r["rtt_s"]), _num(r["bandwidth_bps"]))
        groups.setdefault(key, {}).setdefault(name, []).append(r)
    entries, failures = [], []
    for key in sorted(groups, key=lambda k: (k[0], k[1], -(k[2] or math.inf))):
        trace, rtt_s, bw = key
        runs = groups[key]
        if BASELINE not in runs:
            failures.append(f"{trace}: no {BASELINE} loads at {PathConditions(rtt_s=rtt_s, bandwidth_bps=bw)}")
            continue
        ref = hars[hars["trace"] == trace]
        if ref.empty:
            failures.append(f"{trace}: no reference load to predict from")
            continue
        ref = ref.sort_values(["onload_s", "seed"]).iloc[(len(ref) - 1) // 2]
        at = PathConditions(rtt_s=rtt_s, bandwidth_bps=bw)
        cc = ref["cc"] if isinstance(ref["cc"], str) else None
        predicted, measured = {}, {}
        try:
            for name in sorted(runs):
                predicted[name] = predict_metrics(ref["har_json"], trace, at, protocol, name, seed=seed, cc=cc)
        except InputError as exc:
            failures.append(f"{trace}: {exc.detail}")
            continue
        for name, rs in runs.items():
            rs = sorted(rs, key=lambda r: int(r["seed"]))
            measured[name] = {lab: [v for r in rs if (v := _num(r[lab])) is not None] for _, lab, _ in METRICS}
            measured[name]["seeds"] = [int(r["seed"]) for r in rs]
        base = measured[BASELINE]
        for name in sorted(runs):
            row = {"trace": trace, "condition": str(at), "rtt_s": rtt_s, "bandwidth_bps": bw, "protocol": protocol}
            row["scheduler"] = name
            row["runs"] = len(measured[name]["seeds"])
            for metric, lab, model in METRICS:
                vals = measured[name][lab]
                row[f"measured_{metric}_s"] = round(statistics.median(vals), 4) if vals else None
                row[f"predicted_{metric}_s"] = predicted[name][model]
                if name == BASELINE or not vals or not base[lab]:
                    continue
                by_seed = dict(zip(base["seeds"], base[lab]))
                pairs = [(v, by_seed[s]) for s, v in zip(measured[name]["seeds"], vals) if s in by_seed]
                stats = gain_stats(vals, base[lab], pairs or None)  # "gain": the scheduler's cost
                cost = predicted[name][model] - predicted[BASELINE][model]
                row[f"measured_{metric}_cost_s"] = stats["gain_s"]
                row[f"predicted_{metric}_cost_s"] = round(cost, 4)
                row[f"{metric}_floor_s"] = stats["floor_s"]
                row[f"{metric}_sign_agrees"] = (cost > 0) == (stats["gain_s"] > 0)
                row[f"{metric}_ok"] = within(cost, stats["gain_s"], stats["floor_s"])["ok"]
            entries.append(row)
    taus = []
    for key in sorted({(e["trace"], e["condition"]) for e in entries}):
        group = [e for e in entries if (e["trace"], e["condition"]) == key]
        tau = {"trace": key[0], "condition": key[1]}
        for metric, _, _ in METRICS:
            pairs = [(e[f"predicted_{metric}_s"], e[f"measured_{metric}_s"]) for e in group]
            pairs = [p for p in pairs if p[1] is not None]
            t = kendall_tau_b([p for p, _ in pairs], [m for _, m in pairs]) if len(pairs) > 2 else math.nan
            tau[f"{metric}_tau_b"] = None if t != t else round(t, 3)  # NaN: one side constant
        taus.append(tau)
    costs = [e for e in entries if e["scheduler"] != BASELINE]
    summary_out = {"rows": len(costs)}
    for metric, _, _ in METRICS:
        have = [e for e in costs if f"{metric}_ok" in e]
        summary_out[f"{metric}_sign_agreement"] = sum(e[f"{metric}_sign_agrees"] for e in have)
        summary_out[f"{metric}_ok"] = sum(e[f"{metric}_ok"] for e in have)
        summary_out[f"{metric}_compared"] = len(have)
    for metric, _, _ in METRICS:
        vals = [t[f"{metric}_tau_b"] for t in taus if t[f"{metric}_tau_b"] is not None]
        summary_out[f"median_{metric}_tau_b"] = round(statistics.median(vals), 3) if vals else None
    return {
        "rows": entries,
        "rankings": taus,
        "summary": summary_out,
        "failures": failures,
        "params": {
            "reference": {"conditions": str(PathConditions(rtt_s=ref_rtt, bandwidth_bps=ref_bw)), "protocol": protocol},
            "baseline": BASELINE,
            "results": str(out),
        },
    }


def validate_priorities(
    traces,
    *,
    schedulers=("rfc9218", "fifo", "rr", "lifo"),
    rtts=("100ms",),
    bws=("5mbit",),
    reference: PathConditions,
    protocol: str = "h2",
    runs: int = 3,
    out: str,
    workers: int = 1,
    dask: str | None = None,
    progress: bool = True,
) -> dict:
    """Record the reference loads and every condition x scheduler in the lab, then ``analyse_priorities``."""
    from .validate import check_runs, record, reference_grid

    check_runs(runs)
    if BASELINE not in schedulers:
        raise InputError(f"--scheduler must include {BASELINE}, the baseline every other is held against.")
    grid = {"rtt": list(rtts), "bw": list(bws), "protocol": [protocol], "scheduler": list(schedulers)}
    failures = record(
        traces,
        [reference_grid(reference, protocol), grid],
        runs,
        out=out,
        workers=workers,
        dask=dask,
        progress=progress,
    )
    ref = {"rtt_s": reference.rtt_s, "bandwidth_bps": reference.bandwidth_bps, "protocol": protocol}
    result = analyse_priorities(out, ref)
    result["failures"] = sorted(set(result["failures"]) | set(failures.values()))
    return result


# ------------------------------------------------------------------------------ the report


def priorities_table(result: dict) -> str:
    """One row per page x condition x scheduler: measured and predicted metrics, and the costs
    against the baseline with their floors."""
    ms = lambda v: "-" if v is None else f"{1000 * v:.0f}"  # noqa: E731
    lines = [
        f"| page | condition | scheduler | onLoad lab / model (ms) | FCP lab / first paint model | LCP lab / model | "
        f"onLoad cost vs {BASELINE}: lab ± floor / model | FCP cost (model: first paint floor) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in result["rows"]:
        cost = lambda m: (  # noqa: E731
            "-"
            if f"measured_{m}_cost_s" not in e
            else f"{ms(e[f'measured_{m}_cost_s'])} ± {ms(e[f'{m}_floor_s'])} / {ms(e[f'predicted_{m}_cost_s'])}"
            + ("" if e[f"{m}_ok"] else " **off**")
        )
        lines.append(
            f"| {_name(e['trace'])} | {e['condition']} | {e['scheduler']} | "
            f"{ms(e['measured_onload_s'])} / {ms(e['predicted_onload_s'])} | "
            f"{ms(e['measured_fcp_s'])} / {ms(e['predicted_fcp_s'])} | "
            f"{ms(e['measured_lcp_s'])} / {ms(e['predicted_lcp_s'])} | {cost('onload')} | {cost('fcp')} |"
        )
    return "\n".join(lines) + "\n"


def priorities_figure(result: dict):
    """Predicted against measured cost of each scheduler against the baseline (onLoad and LCP),
    the floor as the measured cost's range."""
    from ..report.plots import subplots

    fig, axes = subplots(1, 2, size=(11, 5))
    for ax, metric in zip(axes, ("onload", "fcp")):
        rows = [e for e in result["rows"] if f"measured_{metric}_cost_s" in e]
        for e in rows:
            x, y, f = e[f"measured_{metric}_cost_s"], e[f"predicted_{metric}_cost_s"], e[f"{metric}_floor_s"]
            ax.errorbar([x * 1e3], [y * 1e3], xerr=[[f * 1e3], [f * 1e3]], fmt="o", capsize=3)
            ax.annotate(e["scheduler"], (x * 1e3, y * 1e3), fontsize=7, xytext=(3, 3), textcoords="offset points")
        if rows:
            lo = min(min(e[f"measured_{metric}_cost_s"], e[f"predicted_{metric}_cost_s"]) for e in rows) * 1e3
            hi = max(max(e[f"measured_{metric}_cost_s"], e[f"predicted_{metric}_cost_s"]) for e in rows) * 1e3
            ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8)
        ax.axhline(0, color="grey", linewidth=0.5)
        ax.axvline(0, color="grey", linewidth=0.5)
        ax.set_xlabel(f"measured {metric} cost against {BASELINE} (ms)")
        ax.set_ylabel("predicted (ms)")
        ax.set_title(f"{metric}: {result['params']['reference']['protocol']}")
    return fig


def write_priorities_report(result: dict, folder) -> list[Path]:
    """``priorities.md`` (the table), ``priorities.json`` and ``priorities.png`` into ``folder``."""
    from .hints import write_report_files

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result = {**result, "rows": [{**e, "trace": _name(e["trace"])} for e in result["rows"]]}
    s, ref = result["summary"], result["params"]["reference"]
    text = (
        f"# Schedulers behind real Chromium: the model's cost of each against the lab's\n\nEach page was "
        f"recorded in the lab at `{ref['conditions']}` over {ref['protocol']} with the servers' own order; every "
        "row was loaded with the lab's servers sending in that scheduler's order (Chromium's own signals) and "
        "predicted from that one reference HAR with the model's Chromium profile. Cost: the scheduler's median "
        f"minus {BASELINE}'s; floor: half the range of the per-run differences (run i against run i). The "
        "model's FCP column is the render-blocking set done, FCP's floor.\n\n"
        + priorities_table(result)
        + f"\n{s['rows']} rows against {BASELINE}: the onLoad cost's sign agrees in {s['onload_sign_agreement']} "
        f"of {s['onload_compared']} (within 20% or the floor: {s['onload_ok']}); FCP's in {s['fcp_sign_agreement']} "
        f"of {s['fcp_compared']} ({s['fcp_ok']}); LCP's in {s['lcp_sign_agreement']} of {s['lcp_compared']} "
        f"({s['lcp_ok']}). Median Kendall's tau-b of the schedulers' order, model against lab: onLoad "
        f"{s['median_onload_tau_b']}, FCP {s['median_fcp_tau_b']}, LCP {s['median_lcp_tau_b']}.\n\n"
        "![predicted against measured cost](priorities.png)\n"
    )
    return write_report_files(folder, "priorities", text, result, priorities_figure(result))
