"""Exchanges simulated per wall-clock second: real h2, real aioquic HTTP/3, TCP model, QUIC model.

One run, side by side: the bundled synthetic page (79 exchanges, 15 origins, so 15
connections and, for HTTP/3, 15 TLS handshakes) at 1% loss, 50 ms RTT, 10 Mbit/s, over
each candidate.  Prints wall time, exchanges per second and each one's speed relative to
the real aioquic stack.
"""

from __future__ import annotations

import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "synthetic-page.har"


def run(quick: bool = False) -> dict:
    from simulator.stacks import model_replay, replay
    from simulator.stacks.common import StackParams
    from simulator.traces import load

    trace = load(TRACE)
    repeats = 1 if quick else 3
    candidates = {
        "h2 (real, over TCP model)": lambda: replay.run(trace, StackParams(stack="h2", loss="0.01")),
        "h3 (real aioquic)": lambda: replay.run(trace, StackParams(stack="h3", loss="0.01")),
        "TCP model": lambda: model_replay.run(trace, StackParams(stack="h2", loss="0.01")),
        "QUIC model": lambda: model_replay.run(trace, StackParams(stack="h3", loss="0.01")),
    }
    figures = {}
    for name, fn in candidates.items():
        best = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        n = result.summary["exchanges"]
        figures[name] = {"wall_s": best, "exchanges": n, "exchanges_per_s": n / best,
                         "packets_per_s": result.summary["packets_sent"] / best}
    base = figures["h3 (real aioquic)"]["exchanges_per_s"]
    print(f"trace {TRACE.name}: {len(trace)} exchanges, loss 1%, RTT 50 ms, 10 Mbit/s (best of {repeats})")
    print(f"{'candidate':<28}{'wall s':>9}{'exch/s':>10}{'pkts/s':>10}{'vs h3':>8}")
    for name, f in figures.items():
        f["ratio_vs_h3"] = f["exchanges_per_s"] / base
        print(f"{name:<28}{f['wall_s']:>9.3f}{f['exchanges_per_s']:>10,.0f}{f['packets_per_s']:>10,.0f}"
              f"{f['ratio_vs_h3']:>7.1f}x")
    return {"trace": TRACE.name, "candidates": figures}
