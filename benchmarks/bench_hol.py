"""One HOL-study run (one step) and the command a user runs (end to end).

- *one step*: ``hol.run`` alone, in this process, wall time: 383 header lists, HPACK +
  QPACK + QCRAM, 1% loss (the trace loaded before, the tables made after).  Goal: under
  1 s on this machine.  Also the time per scheme and the simulated packets per wall second.
- *end to end*: ``workbench hol --trace traces/qif/fb-req-hq.qif --transport quic --loss
  0.01 --json`` in a process of its own, CPU time (user + system) of the whole process:
  interpreter start-up, imports, the trace's import, the run and the JSON.  Goal (issue
  31): <= 0.42 s, a third of the 1.25-1.31 s measured before that issue's work.

Uses the bundled traces/qif/fb-req-hq.qif (383 request header lists), or the bundled
synthetic session if that file is missing.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = [ROOT / "traces" / "qif" / "fb-req-hq.qif", ROOT / "traces" / "synthetic-session.har"]
COMMAND_GOAL_CPU_S = 0.42


def _command_cpu_s(argv: list[str]) -> float:
    """CPU seconds (user + system) of ``argv`` run to its end in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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

    # End to end: the command as a user runs it (``python -m simulator.cli`` is ``workbench``).
    command = [sys.executable, "-m", "simulator.cli", "hol", "--trace", os.path.relpath(path, ROOT)]
    command += ["--transport", "quic", "--loss", "0.01", "--json"]
    command_runs = [_command_cpu_s(command) for _ in range(2 if quick else 5)]
    command_best = min(command_runs)

    print(f"trace {path.name}: {lists} header lists, schemes {','.join(params.schemes)}, loss 1%")
    print("ONE STEP: hol.run alone, in this process")
    print(f"{'run':<24}{'wall s':>10}")
    print(f"{'all three schemes':<24}{best:>10.3f}   (goal < 1 s: {'met' if best < 1 else 'NOT met'})")
    for scheme, t in per_scheme.items():
        print(f"{scheme:<24}{t:>10.3f}")
    print(f"simulated packets per wall second: {packets / best:,.0f}")
    met = "met" if command_best <= COMMAND_GOAL_CPU_S else "NOT met"
    print("END TO END: workbench hol ... --json in its own process, CPU user+system")
    print(
        f"{'best of ' + str(len(command_runs)):<24}{command_best:>10.3f}   (goal <= {COMMAND_GOAL_CPU_S} s: {met}); "
        f"runs {', '.join(f'{t:.3f}' for t in command_runs)}"
    )
    return {
        "trace": path.name,
        "header_lists": lists,
        "wall_s": best,
        "per_scheme_s": per_scheme,
        "packets_per_s": packets / best,
        "goal_s": 1.0,
        "command_cpu_s": command_best,
        "command_cpu_runs_s": command_runs,
        "command_goal_cpu_s": COMMAND_GOAL_CPU_S,
    }
