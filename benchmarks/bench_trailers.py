"""Trailers study runs per wall-clock second: transport models vs real stacks, side by side.

One run = one response of 256 KiB generated at 1 MB/s with its metadata (digest,
status) in a trailer section, 50 ms RTT, 10 Mbit/s, 1% loss, over:
the HTTP/1.1, HTTP/2 and HTTP/3 models (``hops.chain`` over the TCP / QUIC models),
HTTP/2 through two hops (``pass,merge``) on the model, and the real stacks (``h2``
over the TCP model, ``aioquic``).  Each candidate runs ``repeats`` seeds; prints the
best wall time per run, runs per second and each one's speed relative to real aioquic.
"""

from __future__ import annotations

import time


def run(quick: bool = False) -> dict:
    from simulator.studies import trailers
    from simulator.studies.trailers import TrailersParams

    base = TrailersParams(strategies=("trailer",), body_bytes=256 * 1024, rate_bytes_per_s=1e6, loss="0.01")
    candidates = {
        "h1 model (TCP)": base.derive(versions=("h1",)),
        "h2 model (TCP)": base.derive(versions=("h2",)),
        "h3 model (QUIC)": base.derive(versions=("h3",)),
        "h2 model, 2 hops": base.derive(versions=("h2",), hops=("pass", "merge")),
        "h2 real (h2 lib)": base.derive(versions=("h2",), stack="real"),
        "h3 real (aioquic)": base.derive(versions=("h3",), stack="real"),
    }
    seeds = (1,) if quick else (1, 2, 3)
    figures = {}
    for name, params in candidates.items():
        best = None
        for seed in seeds:
            p = params.with_seed(seed)
            t0 = time.perf_counter()
            trailers.run(None, p)
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        figures[name] = {"wall_s": best, "runs_per_s": 1.0 / best}
    ref = figures["h3 real (aioquic)"]["runs_per_s"]
    print(
        f"one 256 KiB response at 1 MB/s, trailer strategy, 1% loss, RTT 50 ms, 10 Mbit/s (best of {len(seeds)} seeds)"
    )
    print(f"{'candidate':<22}{'wall ms':>10}{'runs/s':>10}{'vs aioquic':>12}")
    for name, f in figures.items():
        f["ratio_vs_aioquic"] = f["runs_per_s"] / ref
        print(f"{name:<22}{f['wall_s'] * 1000:>10.1f}{f['runs_per_s']:>10.1f}{f['ratio_vs_aioquic']:>11.1f}x")
    return {"candidates": figures}
