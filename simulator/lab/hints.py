"""``workbench lab validate-hints``: the push study's 103 Early Hints, measured in real Chromium
and predicted by the page-load model.

The 103 is the push study's (``simulator.browser.server.early_hints`` of the page's graph,
policy ``hints``): ``rel=preload`` for every render-blocking sub-resource and ``rel=preconnect``
for the other origins they need (RFC 8297 section 2: informational, sent before the final
response).  In the lab, ``lab-load --policy hints`` has the server send exactly those Link
values on the document's request, before the document's server time; ``--think`` (alias
``--document-think``) sets that server time, since the gain a 103 can give is bounded by it.

For every page: record it at a reference condition with policy ``none`` (the run with the
median onLoad is the reference HAR), then measure every condition (RTT x bandwidth x think)
with policy ``none`` and ``hints``, ``--runs`` times each.  The model predicts both policies
at every condition from that one HAR (``fidelity --at``'s conditions, the document's server
time replaced by the condition's, and ``ServerPlan(hints=...)`` with the same Link values
the lab server sent).  Per condition:

* measured gain: median onLoad without hints minus median onLoad with them (and as % of none);
* the floor: run ``i`` of ``none`` and run ``i`` of ``hints`` are a pair; the gain's floor is
  half the range of the pairs' differences (how far the gain moves from one pair of loads to
  the next on this machine);
* the verdict: the predicted gain is within 20% of the measured gain, or within the floor.

Hand-written here: the statistics and the table; the loads run on the batch runner
(``lab-load``), so a validation resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import InputError
from ..net.conditions import PathConditions

__all__ = [
    "POLICIES",
    "hint_plan",
    "hint_timeline",
    "gain_stats",
    "predict_onload",
    "predict_load",
    "analyse_hints",
    "validate_hints",
    "write_hints_report",
    "within",
]

POLICIES = ("none", "hints")
TOLERANCE = 0.20  # the bar: within 20% of the measured gain (or within the floor)


@dataclass(frozen=True)
class _HintParams:
    """What ``early_hints`` reads of the push study's parameters: the lab serves every origin on
    its own connection (as ``fidelity`` does, ``coalesce="origin"``)."""

    coalesce: str = "origin"


def hint_plan(trace) -> dict:
    """The 103 of ``trace``'s page: ``{"document_url": the document's URL, "links": [Link values]}``,
    the push study's ``early_hints`` of the page's graph (the page the lab rebuilds)."""
    from ..browser.server import early_hints
    from ..traces.pagegraph import page_graph

    graph = page_graph(trace)
    links = [v.decode("latin-1") for v in early_hints(graph, _HintParams())]
    return {"document_url": graph[graph.document].url, "links": links}


def _preloads(links) -> list[str]:
    from .serve import _link_target

    return [url for url, preload in map(_link_target, links) if preload]


def hint_timeline(server_log: list[dict], plan: dict | None) -> dict:
    """What the server saw of a load's 103: whether it sent one, how many hinted preloads there
    were, and how many of them the browser requested before the document's final response
    began (RFC 8297 section 2: the point of the 103 is that it acts before then)."""
    plan = plan or {"document_url": None, "links": []}
    preloads = _preloads(plan["links"])
    doc = next((r for r in server_log if r["url"] == plan["document_url"] and r.get("early_hints_s") is not None), None)
    first_arrival: dict[str, float] = {}
    for r in server_log:
        first_arrival.setdefault(r["url"], r["arrived_s"])
    before = [u for u in preloads if doc is not None and first_arrival.get(u, math.inf) < doc["response_s"]]
    asked = [first_arrival[u] for u in preloads if u in first_arrival]
    return {
        "early_hints_sent": doc is not None,
        "hinted_preloads": len(preloads),
        "hinted_preloads_before_response": len(before),
        # how long after the 103 left the first hinted preload reached the server (the
        # browser's reaction plus a connection's set-up and half a round trip)
        "first_preload_after_103_s": (
            round(min(asked) - doc["early_hints_s"], 4) if doc is not None and asked else None
        ),
    }


# ------------------------------------------------------------------------------ statistics


def gain_stats(none_runs: list[float], hints_runs: list[float], pairs: list[tuple[float, float]] | None = None) -> dict:
    """The measured gain of the hints and its floor, from runs paired by their order (run number),
    or as ``pairs`` (none, hints) gives them when a run is missing on one side.

    ``gain_s``: median(none) - median(hints); ``gain_percent``: that as % of median(none);
    ``pair_gains_s``: each pair's difference; ``floor_s``: half the range of those differences
    (0 with a single pair)."""
    if not none_runs or not hints_runs:
        raise ValueError("the gain needs at least one run of each policy")
    m_none, m_hints = statistics.median(none_runs), statistics.median(hints_runs)
    gain = m_none - m_hints
    pairs = [a - b for a, b in (pairs if pairs is not None else zip(none_runs, hints_runs))]
    floor = (max(pairs) - min(pairs)) / 2 if len(pairs) > 1 else 0.0
    return {
        "median_none_s": round(m_none, 4),
        "median_hints_s": round(m_hints, 4),
        "gain_s": round(gain, 4),
        "gain_percent": round(100.0 * gain / m_none, 3) if m_none else None,
        "pair_gains_s": [round(v, 4) for v in pairs],
        "floor_s": round(floor, 4),
    }


def within(predicted_gain_s: float, measured_gain_s: float, floor_s: float, tolerance: float = TOLERANCE) -> dict:
    """The verdict on one prediction: ``within_tolerance`` (|predicted - measured| at most
    ``tolerance`` of |measured|), ``within_floor`` (at most the floor) and ``ok`` (either)."""
    diff = abs(predicted_gain_s - measured_gain_s)
    in_tol = diff <= tolerance * abs(measured_gain_s) + 1e-12
    in_floor = diff <= floor_s + 1e-12
    return {"within_tolerance": bool(in_tol), "within_floor": bool(in_floor), "ok": bool(in_tol or in_floor)}


# ------------------------------------------------------------------------------ the model


def predict_load(
    har_json: str,
    trace_name: str,
    at: PathConditions,
    protocol: str = "h2",
    *,
    links=(),
    document_think_s: float | None = None,
    seed: int = 1,
    cc: str | None = None,
    priorities=None,
):
    """The model's load of the reference HAR's page at ``at`` over ``protocol``, with the
    document's server time ``document_think_s`` (None: the HAR's own), a 103 of ``links`` on
    the navigation (``ServerPlan.hints``) and ``priorities`` (a ``PriorityPlan``, or a function
    of the page's graph giving one) scheduling every server: (the graph loaded, the
    ``PageLoadResult``, the navigation's offset from the page's start, s)."""
    from ..studies.fidelity.conditions import infer_conditions
    from ..studies.fidelity.study import (
        FidelityParams,
        browser_connections,
        load_event_graph,
        moved_to,
        resource_scheduler,
        simulate_page,
    )
    from .load import H3_DISCOVERY
    from .serve import model_servers
    from ..traces.har import parse_har
    from ..traces.pagegraph import page_graph

    trace = parse_har(json.loads(har_json), path=trace_name)
    page = trace.pages[0]
    if page.on_load_s is None:
        raise InputError("the reference load has no onLoad to predict from.", path=trace_name)
    sub = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s, elsewhere=True)
    params = FidelityParams(
        at=str(at),
        protocol=protocol,
        seed=seed,
        **model_servers(protocol, trace),
        h3_discovery=H3_DISCOVERY,
        **({"cc": cc} if cc else {}),
    )
    cond = moved_to(infer_conditions(sub, page.start_s, protocol), at, protocol)
    if document_think_s is not None:
        cond = replace(cond, think_s={**cond.think_s, sub.document: document_think_s})
    hints = tuple(v.encode("latin-1") if isinstance(v, str) else v for v in links)
    plan = priorities(sub) if callable(priorities) else priorities
    scheduler = resource_scheduler(trace)
    result = simulate_page(
        sub, cond, params, scheduler=scheduler, hints=hints, priorities=plan, **browser_connections(trace, scheduler)
    )
    return sub, result, cond.start_offset_s


def predict_onload(
    har_json: str,
    trace_name: str,
    at: PathConditions,
    protocol: str = "h2",
    *,
    links=(),
    document_think_s: float | None = None,
    seed: int = 1,
    cc: str | None = None,
) -> float:
    """The model's onLoad of the reference HAR's page (``predict_load``).  With neither ``links``
    nor ``document_think_s``, this is ``fidelity --at``'s prediction (``validate``'s) exactly."""
    _, result, offset = predict_load(
        har_json, trace_name, at, protocol, links=links, document_think_s=document_think_s, seed=seed, cc=cc
    )
    return offset + result.metrics["onload_s"]


# ------------------------------------------------------------------------------ the check


def _num(v) -> float | None:
    return None if v is None or v != v else float(v)


def _policy(v) -> str:
    return "none" if v is None or v != v else str(v)


def analyse_hints(out: str, reference: dict, *, seed: int = 1) -> dict:
    """The hints check's figures from a results folder holding the reference and grid loads."""
    from ..batch.store import load
    from ..traces import load as load_trace

    summary = load(out, "summary")
    if not len(summary):
        raise InputError("holds no finished lab load.", path=str(out))
    for col in ("policy", "document_think_s", "cc"):  # cc: None before the lab named it
        if col not in summary.columns:
            summary[col] = None
    rows = summary.to_dict(orient="records")
    ref_rtt, ref_bw = float(reference["rtt_s"]), _num(reference["bandwidth_bps"])
    protocol = reference.get("protocol", "h2")

    def is_ref(r) -> bool:
        return (
            float(r["rtt_s"]) == ref_rtt
            and _num(r["bandwidth_bps"]) == ref_bw
            and str(r["loss"]) == "0"
            and _policy(r["policy"]) == "none"
            and _num(r["document_think_s"]) is None
            and str(r["protocol"]) == protocol
        )

    hars = load(out, "har")
    hars = hars[["job_id", "har_json"]].merge(
        summary[
            [
                "job_id",
                "trace",
                "seed",
                "onload_s",
                "rtt_s",
                "bandwidth_bps",
                "loss",
                "policy",
                "document_think_s",
                "protocol",
                "cc",
            ]
        ],
        on="job_id",
    )
    hars = hars[[is_ref(r) for r in hars.to_dict(orient="records")]].dropna(subset=["onload_s"])
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        if is_ref(r) or _num(r["document_think_s"]) is None or str(r["protocol"]) != protocol:
            continue
        key = (r["trace"], float(r["rtt_s"]), _num(r["bandwidth_bps"]), float(r["document_think_s"]))
        if r["onload_s"] is not None and r["onload_s"] == r["onload_s"]:
            groups.setdefault(key, {"none": [], "hints": []})[_policy(r["policy"])].append(
                (int(r["seed"]), float(r["onload_s"]), r)
            )
    plans: dict[str, dict] = {}
    conditions, failures = [], []
    for key in sorted(groups, key=lambda k: (k[0], k[1], -(k[2] or math.inf), k[3])):
        trace, rtt_s, bw, think_s = key
        runs = groups[key]
        if not runs["none"] or not runs["hints"]:
            continue
        ref = hars[hars["trace"] == trace]
        if ref.empty:
            failures.append(f"{trace}: no reference load to predict from")
            continue
        ref = ref.sort_values(["onload_s", "seed"]).iloc[(len(ref) - 1) // 2]
        none_runs = [v for _, v, _ in sorted(runs["none"])]
        hints_runs = [v for _, v, _ in sorted(runs["hints"])]
        by_seed = {seed_: v for seed_, v, _ in runs["hints"]}
        stats = gain_stats(
            none_runs, hints_runs, [(v, by_seed[seed_]) for seed_, v, _ in sorted(runs["none"]) if seed_ in by_seed]
        )
        at = PathConditions(rtt_s=rtt_s, bandwidth_bps=bw)
        try:
            if trace not in plans:
                plans[trace] = hint_plan(load_trace(trace))
            cc = ref["cc"] if isinstance(ref["cc"], str) else None
            p_none = predict_onload(ref["har_json"], trace, at, protocol, document_think_s=think_s, seed=seed, cc=cc)
            p_hints = predict_onload(
                ref["har_json"],
                trace,
                at,
                protocol,
                links=plans[trace]["links"],
                document_think_s=think_s,
                seed=seed,
                cc=cc,
            )
        except InputError as exc:
            failures.append(f"{trace}: {exc.detail}")
            continue
        predicted = p_none - p_hints
        hinted = [r for _, _, r in sorted(runs["hints"])]
        entry = {
            "trace": trace,
            "condition": str(at),
            "rtt_s": rtt_s,
            "bandwidth_bps": bw,
            "document_think_s": think_s,
            "protocol": protocol,
            "measured_none_s": [round(v, 4) for v in none_runs],
            "measured_hints_s": [round(v, 4) for v in hints_runs],
            **stats,
            "predicted_none_s": round(p_none, 4),
            "predicted_hints_s": round(p_hints, 4),
            "predicted_gain_s": round(predicted, 4),
            "predicted_gain_percent": round(100.0 * predicted / p_none, 3) if p_none else None,
            "difference_s": round(predicted - stats["gain_s"], 4),
            "hinted_preloads": len(_preloads(plans[trace]["links"])),
            "preconnects": len(plans[trace]["links"]) - len(_preloads(plans[trace]["links"])),
            "early_hints_seen": [bool(r.get("har_early_hints")) for r in hinted],
            "preloads_before_response": [
                None
                if _num(r.get("hinted_preloads_before_response")) is None
                else int(r["hinted_preloads_before_response"])
                for r in hinted
            ],
            **within(predicted, stats["gain_s"], stats["floor_s"]),
        }
        conditions.append(entry)
    ok = [c for c in conditions if c["ok"]]
    summary_out = {
        "rows": len(conditions),
        "ok": len(ok),
        "within_tolerance": sum(c["within_tolerance"] for c in conditions),
        "within_floor_only": sum(c["within_floor"] and not c["within_tolerance"] for c in conditions),
        "sign_agreement": sum((c["predicted_gain_s"] > 0) == (c["gain_s"] > 0) for c in conditions),
        "median_abs_difference_s": (
            round(statistics.median(abs(c["difference_s"]) for c in conditions), 4) if conditions else None
        ),
        "median_floor_s": round(statistics.median(c["floor_s"] for c in conditions), 4) if conditions else None,
    }
    return {
        "rows": conditions,
        "summary": summary_out,
        "failures": failures,
        "params": {
            "reference": {
                "conditions": str(PathConditions(rtt_s=ref_rtt, bandwidth_bps=ref_bw)),
                "protocol": protocol,
                "policy": "none",
            },
            "tolerance_percent": 100 * TOLERANCE,
            "results": str(out),
        },
    }


def validate_hints(
    traces,
    *,
    rtts=("20ms", "100ms", "300ms"),
    bws=("50mbit",),
    thinks=("100ms", "500ms"),
    reference: PathConditions,
    protocol: str = "h2",
    runs: int = 3,
    out: str,
    workers: int = 1,
    dask: str | None = None,
    progress: bool = True,
) -> dict:
    """Record the reference loads and every condition x policy in the lab, then ``analyse_hints``."""
    from .validate import check_runs, record, reference_grid

    check_runs(runs)
    # The reference is recorded without loss or a queue limit whatever ``reference`` says (``analyse_hints``).
    plain = PathConditions(rtt_s=reference.rtt_s, bandwidth_bps=reference.bandwidth_bps)
    grid = {"rtt": list(rtts), "bw": list(bws), "protocol": [protocol], "think": list(thinks), "policy": list(POLICIES)}
    failures = record(
        traces, [reference_grid(plain, protocol), grid], runs, out=out, workers=workers, dask=dask, progress=progress
    )
    ref = {"rtt_s": reference.rtt_s, "bandwidth_bps": reference.bandwidth_bps, "protocol": protocol}
    result = analyse_hints(out, ref)
    result["failures"] = sorted(set(result["failures"]) | set(failures.values()))
    return result


# ------------------------------------------------------------------------------ the report


def _name(trace: str) -> str:
    p = Path(trace)
    return p.name if p.is_absolute() or ".." in p.parts else trace


def hints_table(result: dict) -> str:
    """One row per page x condition: measured and predicted gain, difference, floor, verdict."""
    lines = [
        "| page | RTT | think | none (median) | measured gain | predicted gain | difference | floor | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    ms = lambda v: f"{1000 * v:.0f} ms"  # noqa: E731
    for c in result["rows"]:
        verdict = "within 20%" if c["within_tolerance"] else "within the floor" if c["within_floor"] else "**off**"
        lines.append(
            f"| {_name(c['trace'])} | {ms(c['rtt_s'])} | {ms(c['document_think_s'])} | "
            f"{c['median_none_s']:.3f} s | {ms(c['gain_s'])} ({c['gain_percent']:.1f}%) | "
            f"{ms(c['predicted_gain_s'])} ({c['predicted_gain_percent']:.1f}%) | "
            f"{ms(c['difference_s'])} | {ms(c['floor_s'])} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def hints_figure(result: dict):
    """Predicted against measured gain, the floor as the measured gain's range; one colour per think time."""
    from ..report.plots import subplots

    fig, ax = subplots(1, 1, size=(6.4, 5.6))
    colours = {0.1: "tab:blue", 0.5: "tab:orange"}
    marks = {0.02: "o", 0.1: "s", 0.3: "^"}
    lo, hi = 0.0, 0.0
    for c in result["rows"]:
        x, y = 1000 * c["gain_s"], 1000 * c["predicted_gain_s"]
        ax.errorbar(
            x,
            y,
            xerr=1000 * c["floor_s"],
            fmt=marks.get(c["rtt_s"], "o"),
            ms=5,
            alpha=0.85,
            color=colours.get(c["document_think_s"], "grey"),
        )
        lo, hi = min(lo, x - 1000 * c["floor_s"], y), max(hi, x + 1000 * c["floor_s"], y)
    pad = 0.08 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1)
    ax.fill_between([lo, hi], [lo * 0.8, hi * 0.8], [lo * 1.2, hi * 1.2], color="grey", alpha=0.12, lw=0)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    for think, colour in colours.items():
        ax.plot([], [], "o", color=colour, label=f"think {1000 * think:.0f} ms")
    for rtt, mark in marks.items():
        ax.plot([], [], mark, color="black", label=f"RTT {1000 * rtt:.0f} ms")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_xlabel("measured gain of the 103 in the lab (ms; bar: the floor)")
    ax.set_ylabel("predicted gain (ms)")
    ax.set_title("103 Early Hints: onLoad without minus with (grey band: within 20%)")
    return fig


def write_report_files(folder: Path, stem: str, text: str, result: dict, fig) -> list[Path]:
    """A lab check's report: ``STEM.md`` (``text``), ``STEM.json`` (``result``) and ``STEM.png``
    (``fig``, closed once written) in ``folder``; the paths written."""
    import matplotlib.pyplot as plt

    from ..traces._io import atomic_write

    paths = [folder / f"{stem}.md", folder / f"{stem}.json", folder / f"{stem}.png"]
    atomic_write(paths[0], text.encode())
    atomic_write(paths[1], (json.dumps(result, indent=1) + "\n").encode())
    fig.savefig(paths[2], dpi=150, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return paths


def write_hints_report(result: dict, folder) -> list[Path]:
    """``hints.md``, ``hints.json`` and ``hints.png`` into ``folder``; the paths written."""

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    result = {**result, "rows": [{**c, "trace": _name(c["trace"])} for c in result["rows"]]}
    s = result["summary"]
    ref = result["params"]["reference"]
    text = (
        f"# 103 Early Hints: the model's gain against the lab's\n\nEach page was recorded in the lab at "
        f"`{ref['conditions']}` over {ref['protocol']} without hints; every row was measured with and without "
        "the push study's 103 (preload for the render-blocking sub-resources, preconnect for their other "
        "origins) and the document's server time set to the row's think time, and predicted from that one "
        "reference HAR. Gain: median onLoad without the 103 minus median onLoad with it; floor: half the range "
        "of the per-run gains (run i without against run i with). Verdict: the predicted gain within 20% of "
        "the measured one, or within the floor.\n\n"
        + hints_table(result)
        + f"\n{s['ok']} of {s['rows']} rows pass ({s['within_tolerance']} within 20%, {s['within_floor_only']} "
        f"only within the floor); the sign of the gain agrees in {s['sign_agreement']} of {s['rows']}. "
        f"Median |predicted - measured| {1000 * (s['median_abs_difference_s'] or 0):.0f} ms, median floor "
        f"{1000 * (s['median_floor_s'] or 0):.0f} ms.\n\n![predicted against measured gain](hints.png)\n"
    )
    return write_report_files(folder, "hints", text, result, hints_figure(result))
