"""Batch throughput: local worker processes and a Dask cluster, 1 and 2 workers, and the
Dask path's overhead per job against the local process pool.

Scaling jobs: the HOL study (HPACK, QPACK, QCRAM) on the bundled synthetic page and session,
loss 0 / 1% / 2% x seeds, each batch into a fresh results folder, timed end to end
(planning, pool start-up or connecting to the scheduler, sending the traces, jobs, Parquet
writes).  The Dask cluster (a LocalCluster of worker processes, one thread each, its
scheduler in this process as `dask scheduler` would be on its host) stands before it is
timed: one with one worker and one with two, each started and warmed.  Its workers read
no trace file: the client sends the bytes.  Goals on this 2-core machine:
local pool, 2 workers >= 1.7x the jobs per second of 1 worker; Dask, 2 workers >= 1.8x
1 worker.

Overhead: small jobs (HPACK only on three small traces, about 20 ms each), 2 workers, the
local pool against the Dask cluster: the marginal wall time per job, (t(N2) - t(N1)) /
(N2 - N1) between a small and a large batch, so that start-up (the pool's, the client's
connection) cancels out.  Goal: Dask per job <= 1.2x the local pool's (overhead < 20%).
Each configuration runs three times (once with --quick), all of them in turn; the best
counts.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = [ROOT / "traces" / "synthetic-page.har", ROOT / "traces" / "synthetic-session.har"]
SMALL = [
    ROOT / "traces" / "captured-h2-page.har",
    ROOT / "traces" / "har-real" / "http_http2-chrome.har",
    ROOT / "traces" / "qif" / "netbsd.qif",
]
WARM = ROOT / "traces" / "har-real" / "http_http2-firefox.har"  # warms workers; not a timed trace


def _once(traces, grid: dict, seeds: int, **where) -> tuple[float, int]:
    from simulator.batch import run_batch

    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        t0 = time.perf_counter()
        report = run_batch("hol", [str(p) for p in traces], grid, seeds, out=Path(tmp) / "res", progress=False, **where)
        elapsed = time.perf_counter() - t0
    assert report.failed == 0 and report.ok == report.jobs, report.failures[:3]
    return elapsed, report.jobs


def _cluster(n_workers: int):
    from dask.distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )
    _once([WARM], {"scheme": ["hpack"]}, n_workers * 2, dask=cluster.scheduler_address)  # imports, once
    return cluster


def _interleaved(runs: dict, repeats: int) -> dict:
    """Best wall time of each configuration, run in turn ``repeats`` times (so that a
    change of load on a shared machine falls on all of them alike)."""
    best: dict = {}
    for _ in range(repeats):
        for name, (args, where) in runs.items():
            t, jobs = _once(*args, **where)
            best[name] = (min(t, best[name][0]) if name in best else t, jobs)
    return best


def run(quick: bool = False) -> dict:
    grid = {"loss": [0, 0.01, 0.02], "scheme": ["hpack,qpack,qcram"]}
    small_grid = {"loss": [0, 0.01, 0.02], "scheme": ["hpack"]}
    seeds = 1 if quick else 6
    repeats = 1 if quick else 3
    small, large = (1, 2) if quick else (2, 12)
    load_before = os.getloadavg()[0]
    _once([WARM], {"scheme": ["hpack"]}, 2, workers=2)  # the forkserver's start-up, once
    c1, c2 = _cluster(1), _cluster(2)
    try:
        scale = _interleaved(
            {
                "local1": ((TRACES, grid, seeds), {"workers": 1}),
                "local2": ((TRACES, grid, seeds), {"workers": 2}),
                "dask1": ((TRACES, grid, seeds), {"dask": c1.scheduler_address}),
                "dask2": ((TRACES, grid, seeds), {"dask": c2.scheduler_address}),
            },
            repeats,
        )
        over = _interleaved(
            {
                "local_small": ((SMALL, small_grid, small), {"workers": 2}),
                "dask_small": ((SMALL, small_grid, small), {"dask": c2.scheduler_address}),
                "local_large": ((SMALL, small_grid, large), {"workers": 2}),
                "dask_large": ((SMALL, small_grid, large), {"dask": c2.scheduler_address}),
            },
            repeats,
        )
    finally:
        from simulator.batch.dask_runner import _quiet_dask_logs

        _quiet_dask_logs()  # the clusters' closing chatter
        c1.close()
        c2.close()
    jobs = scale["local1"][1]
    t1, t2, d1, d2 = (scale[k][0] for k in ("local1", "local2", "dask1", "dask2"))
    dn = over["local_large"][1] - over["local_small"][1]
    lt1, lt2, dt1, dt2 = (over[k][0] for k in ("local_small", "local_large", "dask_small", "dask_large"))
    local_job, dask_job = max((lt2 - lt1) / dn, 1e-6), max((dt2 - dt1) / dn, 1e-6)

    ratio, dratio = t1 / t2, d1 / d2
    overhead = dask_job / local_job - 1
    print(
        f"batch hol: {jobs} jobs (2 traces x 3 loss rates x {seeds} seeds, 3 schemes each), "
        f"{os.cpu_count()} CPUs, load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"best of {repeats}, configurations in turn"
    )
    print(f"{'':<14}{'workers':>8}{'wall s':>10}{'jobs/s':>10}")
    for name, w, t in (("local pool", 1, t1), ("local pool", 2, t2), ("dask", 1, d1), ("dask", 2, d2)):
        print(f"{name:<14}{w:>8}{t:>10.2f}{jobs / t:>10.2f}")
    print(
        f"ratio 2 workers / 1 worker, local pool: {ratio:.2f}x   (goal >= 1.7x: {'met' if ratio >= 1.7 else 'NOT met'})"
    )
    print(
        f"ratio 2 workers / 1 worker, dask:       {dratio:.2f}x   "
        f"(goal >= 1.8x: {'met' if dratio >= 1.8 else 'NOT met'})"
    )
    print(f"small jobs (HPACK on 3 small traces x 3 loss rates), 2 workers, marginal wall per job over {dn} jobs:")
    print(
        f"  local pool {local_job * 1000:.1f} ms ({lt1:.2f} s -> {lt2:.2f} s), "
        f"dask {dask_job * 1000:.1f} ms ({dt1:.2f} s -> {dt2:.2f} s)"
    )
    print(
        f"dask overhead per job vs local pool: {overhead:+.0%}   (goal < 20%: {'met' if overhead < 0.2 else 'NOT met'})"
    )
    return {
        "jobs": jobs,
        "wall_s_1": t1,
        "wall_s_2": t2,
        "jobs_per_s_1": jobs / t1,
        "jobs_per_s_2": jobs / t2,
        "ratio": ratio,
        "goal_ratio": 1.7,
        "dask_wall_s_1": d1,
        "dask_wall_s_2": d2,
        "dask_ratio": dratio,
        "dask_goal_ratio": 1.8,
        "small_job_ms_local": local_job * 1000,
        "small_job_ms_dask": dask_job * 1000,
        "dask_overhead": overhead,
        "dask_goal_overhead": 0.2,
        "cpus": os.cpu_count(),
    }
