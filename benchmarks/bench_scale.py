"""Cost against page size: CPU time and memory of the studies on synthetic pages of 10 to
20,000 resources, with the exponent fitted to each (cost ~ n^k).  Measured for issue 33
("cost that grows faster than the work"): ``fidelity`` grew as n^1.8 in time and n^1.7 in
memory (the parser-blocking scripts held per resource as a tuple), where a linear model
should be near n^1.

The page: ``trace synth --requests N`` (seed 1), its measured ``onLoad`` set to the end of
its last exchange so that ``fidelity`` keeps every resource.  Each (study, size) runs in a
fresh process: the trace is built, then the study runs once; the figures are that run's
CPU time (start-up, imports, building the page and a first run on a 10-resource page,
which fills lazy imports and caches, left out) and how far it raised the
process's peak resident memory above what it held before the run.  The trace import
(``traces.load`` of the page, written as HAR by an earlier process) is measured the same way.

- ``fidelity``: ``fidelity.run`` on the page (the conditions inferred from it, one load);
- ``push h2``, ``push h3``: ``push.run`` with the policy ``none`` (one load over the TCP
  and the QUIC model, 100 ms, 10 Mbit/s);
- ``hol``: ``hol.run`` with HPACK and QPACK over the QUIC model, 1% loss;
- ``trailers``: ``trailers.run`` on the page (every strategy x version on the models, 9 runs;
  past its work limit, about 6,000 of these pages' responses, it is refused up front: "failed");
- ``trailers h2``: ``trailers.run`` with the trailer strategy on HTTP/2 alone (one run);
- ``import``: ``traces.load`` of the page's HAR;
- ``fidelity cli``: ``workbench fidelity PAGE.har --json`` end to end in its own process
  (start-up, the HAR import and the run: the figure issue 33 asks of 20,000 resources,
  under 5 s and 500 MB), its CPU time and its peak resident memory.

For the largest page the run's CPU time and the process's peak resident memory are printed
per study, then the exponents.  ``SCALE_STUDIES`` and ``SCALE_SIZES`` (comma-separated) in
the environment pick a part of the table (``SCALE_STUDIES="fidelity,fidelity cli"
SCALE_SIZES=1000,20000`` takes about a minute on this machine).

The exponent is the least-squares slope of log(cost) on log(n) over the sizes from 100 up
(the smallest sizes are all fixed cost).  Benchmarks measure; they never assert times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10, 100, 1000, 5000, 20000)
QUICK_SIZES = (10, 50, 200)
STUDIES = ("fidelity", "push h2", "push h3", "hol", "trailers", "trailers h2", "import", "fidelity cli")

_WORKER = r"""
import json, resource, sys, time
from simulator.traces.synth import generate

def page(n):
    trace = generate(requests=n, seed=1)
    p = trace.pages[0]
    ends = [e.start_s + sum(v for v in (e.timings or {}).values() if isinstance(v, (int, float)) and v > 0) / 1000
            for e in trace.exchanges]
    p.on_load_s = max(ends) - p.start_s
    return trace

def job(study, trace, har):
    if study == "import":                  # the HAR was written by an earlier process ("write")
        from simulator.traces import load
        return lambda: load(har)
    if study == "fidelity":
        from simulator.studies import fidelity
        return lambda: fidelity.run(trace, fidelity.FidelityParams())
    if study.startswith("push"):
        from simulator.studies import push
        params = push.PushParams(protocol=study.split()[1], policies=("none",))
        return lambda: push.run(trace, params)
    if study.startswith("trailers"):
        from simulator.studies import trailers
        one = dict(versions=(study.split()[1],), strategies=("trailer",)) if " " in study else {}
        params = trailers.TrailersParams(**one)
        return lambda: trailers.run(trace, params)
    from simulator.studies import hol
    params = hol.HolParams(schemes=("hpack", "qpack"), loss="0.01", seed=1)
    return lambda: hol.run(trace, params)

study, n, har = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if study == "write":
    from simulator.traces.har import write_har
    write_har(page(10), har + ".warm")
    write_har(page(n), har)
    sys.exit(0)
job(study, None if study == "import" else page(10), har + ".warm")()   # lazy imports, caches: not the cost of n
work = job(study, None if study == "import" else page(n), har)
before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
c, w = time.process_time(), time.perf_counter()
work()
cpu_s, wall_s = time.process_time() - c, time.perf_counter() - w
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cpu_s": cpu_s, "wall_s": wall_s, "memory_mb": max(0, peak_kb - before_kb) / 1024,
                  "peak_rss_mb": peak_kb / 1024}))
"""


def _measure(study: str, n: int, tmp: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    har = str(Path(tmp) / f"page-{n}.har")
    if study in ("import", "fidelity cli") and not Path(har).exists():
        subprocess.run(
            [sys.executable, "-c", _WORKER, "write", str(n), har], env=env, cwd=ROOT, timeout=3600, capture_output=True
        )
    if study == "fidelity cli":
        return _measure_cli(["fidelity", har, "--json"], env)
    proc = subprocess.run(
        [sys.executable, "-c", _WORKER, study, str(n), har], capture_output=True, env=env, cwd=ROOT, timeout=3600
    )
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return {"error": last[:200]}
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def _measure_cli(argv: list[str], env: dict) -> dict:
    """A ``workbench`` command in a process of its own: its CPU time and peak resident memory
    (``wait4``'s resource usage of that child alone)."""
    c = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator.cli", *argv],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.perf_counter() - c
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        return {"error": (err.strip().splitlines() or ["no output"])[-1][:200]}
    peak_mb = usage.ru_maxrss / 1024
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall_s, "memory_mb": peak_mb, "peak_rss_mb": peak_mb}


def _picked(name: str, default: tuple, cast=str) -> tuple:
    value = os.environ.get(name)
    return tuple(cast(v.strip()) for v in value.split(",") if v.strip()) if value else default


def run(quick: bool = False) -> dict:
    from simulator.bench import fitted_exponent

    sizes = _picked("SCALE_SIZES", QUICK_SIZES if quick else SIZES, int)
    studies = _picked("SCALE_STUDIES", STUDIES)
    fit_from = sizes[1] if len(sizes) > 1 else sizes[0]
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for study in studies:
            results[study] = {}
            for n in sizes:
                results[study][str(n)] = _measure(study, n, tmp)
    exponents = {}
    for study, points in results.items():
        ok = [(int(n), p) for n, p in points.items() if "error" not in p and int(n) >= fit_from]
        ns = [n for n, _ in ok]
        exponents[study] = {
            "cpu": fitted_exponent(ns, [p["cpu_s"] for _, p in ok]),
            "memory": fitted_exponent(ns, [max(p["memory_mb"], 0.1) for _, p in ok]),
        }
    print(
        "synthetic pages (trace synth --requests N, seed 1); CPU s / memory MB the run added "
        "(fidelity cli: the whole process's CPU s and peak RSS); one process each"
    )
    print(f"{'resources':>10}" + "".join(f"{s:>22}" for s in studies))
    for n in sizes:
        cells = []
        for study in studies:
            p = results[study][str(n)]
            cells.append(f"{'failed':>22}" if "error" in p else f"{p['cpu_s']:>10.2f} s {p['memory_mb']:>7.0f} MB")
        print(f"{n:>10}" + "".join(cells))
    largest = str(sizes[-1])
    print(
        f"{'peak RSS':>10}"
        + "".join(
            f"{'failed':>22}" if "error" in results[s][largest] else f"{results[s][largest]['peak_rss_mb']:>19.0f} MB"
            for s in studies
        )
        + f"   (at {sizes[-1]:,} resources)"
    )
    print(f"{'n^k, cpu':>10}" + "".join(f"{exponents[s]['cpu']:>22.2f}" for s in studies))
    print(f"{'n^k, mem':>10}" + "".join(f"{exponents[s]['memory']:>22.2f}" for s in studies))
    print(
        f"(exponents fitted over {fit_from} resources and up; issue 33 before the work: fidelity n^1.8 time, "
        "n^1.7 memory; push h2 n^0.9, h3 n^1.06, hol n^0.99; trailers 6.6 ms CPU a response, n^1.0)"
    )
    for study, points in results.items():
        for n, p in points.items():
            if "error" in p:
                print(f"{study} at {n} resources failed: {p['error']}")
    return {"sizes": list(sizes), "results": results, "exponents": exponents}
