"""Replay speed: real h2, real aioquic HTTP/3, TCP model, QUIC model, side by side in one run.

Two kinds of figure per candidate, and they measure different things:

- **end to end** (``wall s``, ``cpu s``, ``exch/s``): what ``workbench replay --trace T
  --stack S`` does in its process -- load the trace, replay every exchange, build the
  result table -- timed on the wall clock (and in CPU seconds of this process, which a
  busy shared machine disturbs less); exchanges per wall second.  This is the figure a
  user feels (interpreter start-up and imports, about a second, come on top).
- **per step** (``events/s``): engine events (packet arrivals, timers, request starts) run
  per wall second of the same replay: the cost of one simulated step, which changes with
  the stack and the bookkeeping around it, not with the trace's length.

Candidates run round robin, ``best of N`` per candidate, so all of them see the same
machine load.

Traces: ``synthetic-many-origins.har`` (300 exchanges over 102 origins, so 102
connections and, for HTTP/3, 102 TLS handshakes) at 2% loss, 80 ms RTT, 20 Mbit/s (the
shape of the 292-exchange, 100-origin page of issue 13), and ``synthetic-page.har`` (79
exchanges, 15 origins) at 1% loss, 50 ms, 10 Mbit/s.  On the large page two more
HTTP/3 rows isolate what the replay used to pay on every run: ``every event checked``
(the reference run loop, which walks every session after every event, as the replay
did before stall detection by events) and ``with --qlog`` (aioquic's qlog built, as it
was on every run before, and written).  Ratios are against the real aioquic stack on
the same trace.  h2 runs twice, over TLS 1.3 (the default: the real OpenSSL over memory
BIOs, a handshake per connection and every record encrypted and decrypted) and cleartext
(``tls=False``), and ``h2 TLS / cleartext`` prints what TLS costs the replay (exchanges per
wall second, TLS over cleartext: below 1 is slower); the TCP model likewise (its TLS is
byte counts only).  Two more rows on the large page run the h3 replay and the QUIC model
with the engine's event queue in Python (``WORKBENCH_PURE_PYTHON=1``'s twin) instead of C:
``C engine / Python twin`` prints what the C loop gains end to end.

**Own share** (issue 13's goal: under 10% of an h3 replay profile): the h3 replay of the
large page, run as a user runs it (``workbench replay ... --json``, a process of its own)
under py-spy, a sampling profiler, three times with the C engine and three with the Python
twin, interleaved; the samples are pooled per engine.  Printed: the share of samples in
``simulator/`` within the replay loop (``run_until``, the simulation proper) and for the
whole process (start-up, imports, trace loading and the result table included), with a
95% interval from the sample count (samples are not quite independent: read it as a
guide), and the largest own functions.  ``--quick`` skips it.
``--quick``: the small page only, one repetition.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANY = ROOT / "traces" / "synthetic-many-origins.har"
PAGE = ROOT / "traces" / "synthetic-page.har"


def _candidates(path: Path, params: dict, extra: bool) -> dict:
    from simulator.bench import engine_implementation
    from simulator.engine import ENGINE_IMPLEMENTATION, EVENT_QUEUES
    from simulator.http import model_replay
    from simulator.stacks import replay
    from simulator.stacks.common import StackParams
    from simulator.traces import load

    def real(stack: str, **options):
        return lambda: replay.run(load(path), StackParams(stack=stack, **params), **options)

    def model(stack: str, **extra):
        return lambda: model_replay.run(load(path), StackParams(stack=stack, **params, **extra))

    def cleartext():
        return replay.run(load(path), StackParams(stack="h2", tls=False, **params))

    def with_qlog():
        with tempfile.TemporaryDirectory() as qlog_dir:
            return replay.run(load(path), StackParams(stack="h3", **params), qlog_dir=qlog_dir)

    def python_engine(fn):
        def run():
            with engine_implementation("python"):
                return fn()

        return run

    out = {"h3 (real aioquic)": real("h3")}
    if extra:
        out["h3, every event checked"] = real("h3", check_every_event=True)
        out["h3 with --qlog"] = with_qlog
        if "c" in EVENT_QUEUES and ENGINE_IMPLEMENTATION == "c":
            out["h3, engine in Python"] = python_engine(real("h3"))
            out["QUIC model, engine in Python"] = python_engine(model("h3"))
    out |= {
        "h2 TLS (real, TCP model)": real("h2"),
        "h2 cleartext (real)": cleartext,
        "QUIC model": model("h3"),
        "TCP model (TLS)": model("h2"),
        "TCP model, cleartext": model("h2", tls=False),
    }
    return out


def _measure(path: Path, params: dict, label: str, repeats: int, extra: bool) -> dict:
    candidates = _candidates(path, params, extra)
    best: dict[str, tuple[float, float]] = {}
    results = {}
    for _ in range(repeats):  # round robin: every candidate sees the same machine load
        for name, fn in candidates.items():
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = fn()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            old = best.get(name)
            best[name] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
    figures = {}
    for name, (wall, cpu) in best.items():
        s = results[name].summary
        figures[name] = {
            "wall_s": wall,
            "cpu_s": cpu,
            "exchanges": s["exchanges"],
            "exchanges_per_s": s["exchanges"] / wall,
            "events": s["events"],
            "events_per_s": s["events"] / wall,
            "connections": s["connections"],
        }
    base = figures["h3 (real aioquic)"]
    first = next(iter(figures.values()))
    print(
        f"trace {path.name}: {first['exchanges']} exchanges, {first['connections']} connections, {label} "
        f"(best of {repeats})"
    )
    print(f"  {'candidate':<28}{'wall s':>8}{'cpu s':>8}{'exch/s':>9}{'events/s':>10}{'vs h3':>8}{'cpu vs h3':>11}")
    print(f"  {'':<28}{'|-- end to end --|':>25}{'per step':>10}")
    for name, f in figures.items():
        f["ratio_vs_h3"] = f["exchanges_per_s"] / base["exchanges_per_s"]
        f["cpu_ratio_vs_h3"] = base["cpu_s"] / f["cpu_s"]
        print(
            f"  {name:<28}{f['wall_s']:>8.2f}{f['cpu_s']:>8.2f}{f['exchanges_per_s']:>9,.0f}"
            f"{f['events_per_s']:>10,.0f}{f['ratio_vs_h3']:>7.2f}x{f['cpu_ratio_vs_h3']:>10.2f}x"
        )
    for tls, clear, label in (
        ("h2 TLS (real, TCP model)", "h2 cleartext (real)", "h2"),
        ("TCP model (TLS)", "TCP model, cleartext", "TCP model"),
    ):
        ratio = figures[tls]["exchanges_per_s"] / figures[clear]["exchanges_per_s"]
        cpu_ratio = figures[clear]["cpu_s"] / figures[tls]["cpu_s"]
        figures[f"{label} TLS / cleartext"] = {"exchanges_per_s_ratio": ratio, "cpu_ratio": cpu_ratio}
        print(
            f"  {label} TLS / cleartext: {ratio:.2f}x exchanges per wall second, {cpu_ratio:.2f}x in CPU "
            f"({figures[tls]['events']:,} vs {figures[clear]['events']:,} events)"
        )
    for c_name, py_name in (
        ("h3 (real aioquic)", "h3, engine in Python"),
        ("QUIC model", "QUIC model, engine in Python"),
    ):
        if py_name in figures:
            wall = figures[py_name]["wall_s"] / figures[c_name]["wall_s"]
            cpu = figures[py_name]["cpu_s"] / figures[c_name]["cpu_s"]
            figures[f"{c_name}: C engine / Python twin"] = {"wall_ratio": wall, "cpu_ratio": cpu}
            print(
                f"  {c_name}: C engine / Python twin: {wall:.2f}x faster in wall time, {cpu:.2f}x in CPU "
                "(end to end, same events)"
            )
    return figures


OWN_SHARE_ARGS = [
    "replay",
    "--trace",
    str(MANY),
    "--stack",
    "h3",
    "--loss",
    "0.02",
    "--rtt",
    "80ms",
    "--bw",
    "20mbit",
    "--seed",
    "7",
    "--json",
]


def _own_share(runs: int = 3) -> dict:
    """The workbench's own share of the h3 replay's profile, C engine and Python twin."""
    from simulator.bench import sampled_profile
    from simulator.engine import EVENT_QUEUES

    scopes = {"replay loop": "run_until", "whole process": None}
    engines = [e for e in ("c", "python") if e in EVENT_QUEUES]
    pooled = {e: {scope: {"samples": 0, "own_samples": 0, "top": {}} for scope in scopes} for e in engines}
    for _ in range(runs):  # interleaved: both see the same machine load
        for engine in engines:
            env = {**os.environ, "WORKBENCH_PURE_PYTHON": "1" if engine == "python" else "0"}
            profile = sampled_profile(OWN_SHARE_ARGS, env=env, scopes=scopes)
            if "error" in profile:
                print(f"own share: not measured ({profile['error']})")
                return {"error": profile["error"]}
            for scope, p in profile.items():
                acc = pooled[engine][scope]
                acc["samples"] += p["samples"]
                acc["own_samples"] += p["own_samples"]
                for name, share in p["own_top"]:
                    acc["top"][name] = acc["top"].get(name, 0) + share * p["samples"]
    print(f"own share of the h3 replay of {MANY.name} (py-spy, {runs} runs per engine pooled; goal < 10%):")
    out = {}
    for engine in engines:
        for scope in scopes:
            acc = pooled[engine][scope]
            n, k = acc["samples"], acc["own_samples"]
            share = k / n
            half = 1.96 * math.sqrt(share * (1 - share) / n)
            top = sorted(acc["top"].items(), key=lambda kv: -kv[1])[:4]
            out[f"{engine} engine, {scope}"] = {
                "own_share": share,
                "interval_95": [share - half, share + half],
                "samples": n,
                "own_top": [(name, v / n) for name, v in top],
            }
            print(
                f"  {engine + ' engine, ' + scope:<29}{share:6.1%} (95% {share - half:.1%}-{share + half:.1%}, "
                f"{n:,} samples)  " + ", ".join(f"{name} {v / n:.1%}" for name, v in top)
            )
    return out


def run(quick: bool = False) -> dict:
    import simulator.stacks.h2  # noqa: F401 - imported before timing: module import is not replay time
    import simulator.stacks.h3  # noqa: F401

    out = {}
    if not quick:
        out[MANY.name] = _measure(
            MANY,
            {"loss": "0.02", "rtt_s": 0.08, "bandwidth_bps": 20e6},
            "loss 2%, RTT 80 ms, 20 Mbit/s",
            repeats=3,
            extra=True,
        )
    out[PAGE.name] = _measure(
        PAGE, {"loss": "0.01"}, "loss 1%, RTT 50 ms, 10 Mbit/s", repeats=1 if quick else 3, extra=False
    )
    result = {"traces": out}
    if not quick:
        result["own_share"] = _own_share()
    return result
