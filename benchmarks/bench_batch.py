"""Batch throughput: the same job set with 1 and with 2 local worker processes.

Jobs: the HOL study (HPACK, QPACK, QCRAM) on the bundled synthetic page and session,
loss 0 / 1% / 2% x seeds, each batch into a fresh results folder, timed end to end
(planning, pool start-up, jobs, Parquet writes).  Goal: 2 workers >= 1.7x the jobs per
second of 1 worker on a 2-core machine.  Each configuration runs twice; the best counts.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = [ROOT / "traces" / "synthetic-page.har", ROOT / "traces" / "synthetic-session.har"]


def _time(workers: int, grid: dict, seeds: int, repeats: int) -> tuple[float, int]:
    from simulator.batch import run_batch

    best = None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
            t0 = time.perf_counter()
            report = run_batch("hol", [str(p) for p in TRACES], grid, seeds, out=Path(tmp) / "res",
                               workers=workers, progress=False)
            elapsed = time.perf_counter() - t0
        assert report.failed == 0 and report.ok == report.jobs
        best = elapsed if best is None else min(best, elapsed)
    return best, report.jobs


def run(quick: bool = False) -> dict:
    grid = {"loss": [0, 0.01, 0.02], "scheme": ["hpack,qpack,qcram"]}
    seeds = 2 if quick else 4
    repeats = 1 if quick else 2
    t1, jobs = _time(1, grid, seeds, repeats)
    t2, _ = _time(2, grid, seeds, repeats)
    r1, r2 = jobs / t1, jobs / t2
    ratio = r2 / r1
    print(f"batch hol: {jobs} jobs (2 traces x 3 loss rates x {seeds} seeds, 3 schemes each), "
          f"{os.cpu_count()} CPUs")
    print(f"{'workers':<10}{'wall s':>10}{'jobs/s':>10}")
    print(f"{1:<10}{t1:>10.2f}{r1:>10.2f}")
    print(f"{2:<10}{t2:>10.2f}{r2:>10.2f}")
    print(f"ratio 2 workers / 1 worker: {ratio:.2f}x   (goal >= 1.7x: {'met' if ratio >= 1.7 else 'NOT met'})")
    return {"jobs": jobs, "wall_s_1": t1, "wall_s_2": t2, "jobs_per_s_1": r1, "jobs_per_s_2": r2,
            "ratio": ratio, "goal_ratio": 1.7, "cpus": os.cpu_count()}
