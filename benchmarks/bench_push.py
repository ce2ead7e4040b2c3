"""Page loads simulated per wall-clock second: the push study on the transport models and
on the real stacks, side by side in one run.

The bundled synthetic page (79 resources, 15 origins) under the ``push+hints`` policy
(pushes, a 103, preconnects: every path of the page-load model), cold cache, 1% loss,
RTT 100 ms, 10 Mbit/s, cleartext h2 so the real h2 stack can run it.  Two figures per
candidate: one page load alone (``load_page``: one step) and what a user runs end to end
(``workbench push``'s ``run()``: the graph, the cache and every policy of the default set).
Ratios are against the real aioquic stack.  The candidates are timed in turn, round after
round (``ONE_LOAD_ROUNDS`` rounds of one load each, ``repeats`` of the study), and each keeps
its best: a few-millisecond load on a shared machine reads the machine as much as the code,
and interleaving puts every candidate through the same spells of load.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import time

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "synthetic-page.har"
ONE_LOAD_ROUNDS = 15  # one load takes 5-60 ms: many rounds, each candidate's best kept


def _interleaved_best_s(fns: dict, rounds: int) -> dict:
    """Each of ``fns``' shortest wall time over ``rounds`` rounds, every round calling each once, in turn."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


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
    one_rounds = 3 if quick else ONE_LOAD_ROUNDS

    def one_load(params):
        plan = push.server_plan(graph, "push+hints", params)
        return lambda: load_page(graph, params.load_params(), plan, ClientCache(), backend=params.backend)

    def study(params):
        return lambda: push.run(trace, params)

    for fn in map(one_load, candidates.values()):
        fn()  # warm: imports, memos, the C cores' first calls
    ones = _interleaved_best_s({name: one_load(p) for name, p in candidates.items()}, one_rounds)
    studies = _interleaved_best_s({name: study(p) for name, p in candidates.items()}, repeats)
    figures = {}
    for name, params in candidates.items():
        one, run_s = ones[name], studies[name]
        figures[name] = {
            "one_load_s": one,
            "loads_per_s": 1.0 / one,
            "study_run_s": run_s,
            "policies": len(params.policies),
            "study_runs_per_s": 1.0 / run_s,
        }
    ref = figures["h3 real aioquic"]
    print(
        f"page {TRACE.name}: {len(graph)} resources, {len(graph.origins)} origins; push+hints, cold cache, "
        f"1% loss, RTT 100 ms, 10 Mbit/s (candidates in turn; best of {one_rounds} rounds for one load, "
        f"{repeats} for end to end)"
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
    h2, h3 = figures["h2 model (TCP)"], figures["h3 model (QUIC)"]
    print(
        "one load = load_page alone (one step); end to end = push.run() over the default policies "
        f"({', '.join(base.policies)}), as `workbench push` runs it\n"
        f"h2 model over h3 model, loads/s: one load {h2['loads_per_s'] / h3['loads_per_s']:.2f}x, "
        f"end to end {h2['study_runs_per_s'] / h3['study_runs_per_s']:.2f}x"
    )
    return {"trace": TRACE.name, "candidates": figures}
