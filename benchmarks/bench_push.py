"""Page loads simulated per wall-clock second: the push study on the transport models and
on the real stacks, side by side in one run.

The bundled synthetic page (79 resources, 15 origins) under the ``push+hints`` policy
(pushes, a 103, preconnects: every path of the page-load model), cold cache, 1% loss,
RTT 100 ms, 10 Mbit/s, cleartext h2 so the real h2 stack can run it.  Two figures per
candidate: one page load alone (``load_page``: one step) and what a user runs end to end
(``workbench push``'s ``run()``: the graph, the cache and every policy of the default set).
Ratios are against the real aioquic stack.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from simulator.bench import best_time_s

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "synthetic-page.har"


def run(quick: bool = False) -> dict:
    from simulator.studies import push
    from simulator.browser import ClientCache, load_page, page_graph
    from simulator.traces import load

    trace = load(TRACE)
    graph = page_graph(trace)
    repeats = 1 if quick else 3
    base = push.PushParams(loss="0.01", rtt_s=0.1, bandwidth_bps=10e6, tls=False)
    candidates = {
        "h2 model (TCP)": replace(base, protocol="h2"),
        "h3 model (QUIC)": replace(base, protocol="h3"),
        "h2 real stack": replace(base, protocol="h2", backend="stacks"),
        "h3 real aioquic": replace(base, protocol="h3", backend="stacks"),
    }
    figures = {}
    for name, params in candidates.items():
        plan = push.server_plan(graph, "push+hints", params)
        one = best_time_s(
            lambda: load_page(graph, params.load_params(), plan, ClientCache(), backend=params.backend), repeats
        )
        study = best_time_s(lambda: push.run(trace, params), repeats)
        figures[name] = {
            "one_load_s": one,
            "loads_per_s": 1.0 / one,
            "study_run_s": study,
            "policies": len(params.policies),
            "study_runs_per_s": 1.0 / study,
        }
    ref = figures["h3 real aioquic"]
    print(
        f"page {TRACE.name}: {len(graph)} resources, {len(graph.origins)} origins; push+hints, cold cache, "
        f"1% loss, RTT 100 ms, 10 Mbit/s (best of {repeats})"
    )
    print(
        f"{'candidate':<20}{'one load s':>11}{'loads/s':>9}{'vs h3':>7}   {'end to end s':>12}{'runs/s':>8}{'vs h3':>7}"
    )
    for name, f in figures.items():
        f["loads_ratio_vs_h3"] = f["loads_per_s"] / ref["loads_per_s"]
        f["study_ratio_vs_h3"] = f["study_runs_per_s"] / ref["study_runs_per_s"]
        print(
            f"{name:<20}{f['one_load_s']:>11.3f}{f['loads_per_s']:>9.1f}{f['loads_ratio_vs_h3']:>6.1f}x   "
            f"{f['study_run_s']:>12.3f}{f['study_runs_per_s']:>8.2f}{f['study_ratio_vs_h3']:>6.1f}x"
        )
    print(
        "one load = load_page alone (one step); end to end = push.run() over the default policies "
        f"({', '.join(base.policies)}), as `workbench push` runs it"
    )
    return {"trace": TRACE.name, "candidates": figures}
