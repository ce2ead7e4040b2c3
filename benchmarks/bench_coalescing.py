"""Page loads simulated per wall-clock second by the coalescing study, side by side in one run.

The bundled 300-resource, 102-origin page (``traces/synthetic-many-origins.har``), RTT
100 ms, 50 Mbit/s, 1% loss, the seeded default DNS answers and certificates, p421 0.1.
Candidates: one page load per mode through the study's connection pool (``load_page`` with
``CoalescingPool``: one step), the same page on the plain page-load model without the pool
(one connection per origin, the push study's ``none``: the reference, so the ratio is the
pool's cost), and ``coalescing.run()`` over the four modes as ``workbench coalescing`` runs
it (end to end: graph, topology, four loads, tables).
"""

from __future__ import annotations

from pathlib import Path

from simulator.bench import best_time_s

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "synthetic-many-origins.har"


def run(quick: bool = False) -> dict:
    from simulator.studies import coalescing as co
    from simulator.browser import ClientCache, ServerPlan, load_page, page_graph
    from simulator.traces import load

    trace = load(TRACE)
    graph = page_graph(trace)
    repeats = 1 if quick else 3
    params = co.CoalescingParams(rtt_s=0.1, bandwidth_bps=50e6, loss="0.01", p421=0.1)
    topo = co.topology_for(graph, params)
    lp = params.load_params()
    plan = ServerPlan()

    def with_pool(mode):
        def network(sim, p, listener, inner_cls):
            return co.CoalescingPool(sim, p, listener, inner_cls, mode=mode, topo=topo, cp=params)

        return lambda: load_page(graph, lp, plan, ClientCache(), network=network)

    candidates = {"plain page load (no pool)": lambda: load_page(graph, lp, plan, ClientCache())}
    for mode in co.MODES:
        candidates[f"pool, {mode}"] = with_pool(mode)
    figures = {}
    for name, fn in candidates.items():
        s = best_time_s(fn, repeats)
        figures[name] = {"one_load_s": s, "loads_per_s": 1.0 / s}
    end_to_end = best_time_s(lambda: co.run(trace, params), repeats)
    ref = figures["plain page load (no pool)"]["loads_per_s"]
    print(
        f"page {TRACE.name}: {len(graph)} resources, {len(graph.origins)} origins; RTT 100 ms, 50 Mbit/s, 1% loss, "
        f"p421 0.1 (best of {repeats})"
    )
    print(f"{'candidate':<28}{'one load s':>11}{'loads/s':>9}{'vs plain':>10}")
    for name, f in figures.items():
        f["ratio_vs_plain"] = f["loads_per_s"] / ref
        print(f"{name:<28}{f['one_load_s']:>11.3f}{f['loads_per_s']:>9.2f}{f['ratio_vs_plain']:>9.2f}x")
    print(
        f"end to end: coalescing.run() over {len(co.MODES)} modes {end_to_end:.3f} s "
        f"({len(co.MODES) / end_to_end:.2f} page loads/s)"
    )
    print("one load = load_page alone (one step); end to end = coalescing.run(), as `workbench coalescing` runs it")
    return {
        "trace": TRACE.name,
        "candidates": figures,
        "end_to_end_s": end_to_end,
        "end_to_end_loads_per_s": len(co.MODES) / end_to_end,
    }
