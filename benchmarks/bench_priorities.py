"""The cost of a response scheduler (``http.priority``) on a page load of the model, side by
side in one run: the fixed writer (``urgency``, the C writer over the C TCP) against the
same load with ``urgency-rr`` (the same order, through ``ScheduledWriter``), ``rfc9218``
and ``tree``, over h2 and h3.  The issue's bound: at most 15% more wall time (ratio printed)."""

from __future__ import annotations


def run(quick: bool = False) -> dict:
    from simulator.bench import best_time_s
    from simulator.http.browser_priorities import browser_signals
    from simulator.http.network import ModelNetwork
    from simulator.http.priority import PriorityPlan
    from simulator.browser import ClientCache, LoadParams, ServerPlan, load_page, page_graph
    from simulator.traces import load

    graph = page_graph(load("traces/synthetic-page.har"))
    repeats = 2 if quick else 5
    out = {}
    print("page load wall time, best of", repeats, "(ratio against the fixed writer)")
    for protocol in ("h2", "h3"):
        params = LoadParams(protocol=protocol)
        signals, _ = browser_signals(graph, "chromium", protocol)

        def fixed():
            load_page(graph, params, ServerPlan(), ClientCache())
        base = best_time_s(fixed, repeats)
        out[f"{protocol}_fixed_s"] = base
        print(f"{protocol} fixed writer {base * 1000:8.1f} ms")
        for name in ("urgency-rr", "rfc9218", "tree"):
            plan = PriorityPlan(name, signals)

            def scheduled():
                load_page(graph, params, ServerPlan(), ClientCache(),
                          network=lambda sim, p, listener, cls: ModelNetwork(sim, p, listener, priorities=plan))
            t = best_time_s(scheduled, repeats)
            out[f"{protocol}_{name}_ratio"] = t / base
            print(f"{protocol} {name:<12} {t * 1000:8.1f} ms  x{t / base:.2f}")
    return out
