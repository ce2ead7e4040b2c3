"""The cost of a response scheduler (``http.priority``) on a page load of the model, side by
side in one run: the fixed writer (``urgency``, the C writer over the C TCP) against the
same load with every built-in scheduler (``urgency-rr`` gives the same order, through the
scheduler) with Chromium's signals, and ``tree`` with Firefox's and Safari's too (their
trees have weighted siblings, which take turns a chunk at a time: ``tree/firefox``,
``tree/safari``), over h2 and h3 (where no tree is signalled: the three ``tree`` rows are
one load there).  The issue's bound: at most 15% more.

CPU time of this process (``time.process_time``), not wall time: the machine is shared, and
the wall clock counts the time other processes held the core.  The variants take turns
within each round, starting one later each round (a variant's place in the round moved its
time by up to 20%: what the load before it left in the caches and the collector), so a slow
stretch of the machine falls on all of them alike, and each variant's best round is kept.
An h3 load takes ten times an h2 one: fewer rounds there, the whole under a minute.

The cyclic collector: each load leaves 2,000-3,000 objects in reference cycles (the
connections' endpoints, streams and callbacks), which a collection frees later.  Left to
itself the collector ran its generation-1 pass over ten loads' garbage inside the same
variant's time every round (``fifo`` over h3: about 20 ms of its 40, so
x1.8 of the fixed writer for a load that costs what the fixed one does when timed alone).
So the garbage the loads before left is collected before a load, outside its time, and the
load's own is collected at its end, inside it; what the warm-up left (the page's graph, the
plans) is frozen first (``gc.freeze``) so those passes do not walk it."""

from __future__ import annotations

import gc
import time

from simulator.http.priority import SCHEDULERS as _TABLE

SCHEDULERS = ("urgency-rr",) + tuple(name for name in _TABLE if name != "urgency-rr")
# (scheduler, browser) beyond Chromium's signals: the trees with weighted siblings
OTHER_BROWSERS = (("tree", "firefox"), ("tree", "safari"))


def _cpu_s(fn) -> float:
    gc.collect()  # the loads before: outside this one's time
    t0 = time.process_time()
    fn()
    gc.collect()  # this load's own cycles: inside it
    return time.process_time() - t0


def run(quick: bool = False) -> dict:
    from simulator.browser import ClientCache, LoadParams, ServerPlan, load_page, page_graph
    from simulator.browser.priorities import browser_signals
    from simulator.http.network import ModelNetwork
    from simulator.http.priority import PriorityPlan
    from simulator.traces import load

    graph = page_graph(load("traces/synthetic-page.har"))
    out = {}
    print(
        "page-load CPU time (process time), best of 40 (h2) and 5 (h3) interleaved rounds; "
        "ratio against the fixed writer"
    )
    for protocol in ("h2", "h3"):
        rounds = 3 if quick else 40 if protocol == "h2" else 5
        params = LoadParams(protocol=protocol)
        variants = {"fixed": lambda: load_page(graph, params, ServerPlan(), ClientCache())}
        rows = [(name, "chromium") for name in SCHEDULERS] + list(OTHER_BROWSERS)
        for name, browser in rows:
            signals, _ = browser_signals(graph, browser, protocol)
            plan = PriorityPlan(name, signals)
            label = name if browser == "chromium" else f"{name}/{browser}"
            variants[label] = lambda plan=plan: load_page(
                graph,
                params,
                ServerPlan(),
                ClientCache(),
                network=lambda sim, p, listener, cls: ModelNetwork(sim, p, listener, priorities=plan),
            )
        for fn in variants.values():
            fn()  # warm-up: caches of flight and header sizes
        gc.collect()
        gc.freeze()  # what stays to the end: not walked by the collections of _cpu_s
        best = dict.fromkeys(variants, float("inf"))
        names = list(variants)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                best[name] = min(best[name], _cpu_s(variants[name]))
        gc.unfreeze()
        base = best["fixed"]
        out[f"{protocol}_fixed_cpu_s"] = base
        cells = [f"fixed {base * 1000:.1f} ms"]
        for label in names[1:]:
            out[f"{protocol}_{label.replace('/', '_')}_ratio"] = best[label] / base
            cells.append(f"{label} x{best[label] / base:.2f}")
        print(f"{protocol}: " + "  ".join(cells))
    return out
