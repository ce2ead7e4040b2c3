"""Wall time of one HOL-study run: 383 header lists, HPACK + QPACK + QCRAM, 1% loss.

Uses the bundled traces/qif/fb-req-hq.qif (383 request header lists), or the bundled
synthetic session if that file is missing.  Goal: under 1 s on this machine.  Also
prints the time per scheme and the simulated packets per wall-clock second.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = [ROOT / "traces" / "qif" / "fb-req-hq.qif", ROOT / "traces" / "synthetic-session.har"]


def run(quick: bool = False) -> dict:
    from simulator.studies import hol
    from simulator.traces import load

    path = next(p for p in CANDIDATES if p.exists())
    trace = load(path)
    params = hol.HolParams(schemes=("hpack", "qpack", "qcram"), loss="0.01", seed=1)
    repeats = 1 if quick else 3
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = hol.run(trace, params)
        elapsed = time.perf_counter() - t0
        best = elapsed if best is None else min(best, elapsed)
    per_scheme = {}
    for scheme in params.schemes:
        t0 = time.perf_counter()
        hol.run(trace, replace(params, schemes=(scheme,)))
        per_scheme[scheme] = time.perf_counter() - t0
    packets = int(result.summary["packets"].sum())
    lists = result.trace["header_lists"]
    print(f"trace {path.name}: {lists} header lists, schemes {','.join(params.schemes)}, loss 1%")
    print(f"{'run':<24}{'wall s':>10}")
    print(f"{'all three schemes':<24}{best:>10.3f}   (goal < 1 s: {'met' if best < 1 else 'NOT met'})")
    for scheme, t in per_scheme.items():
        print(f"{scheme:<24}{t:>10.3f}")
    print(f"simulated packets per wall second: {packets / best:,.0f}")
    return {
        "trace": path.name,
        "header_lists": lists,
        "wall_s": best,
        "per_scheme_s": per_scheme,
        "packets_per_s": packets / best,
        "goal_s": 1.0,
    }
