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
byte counts only).  ``--quick``: the small page only, one repetition.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANY = ROOT / "traces" / "synthetic-many-origins.har"
PAGE = ROOT / "traces" / "synthetic-page.har"


def _candidates(path: Path, params: dict, extra: bool) -> dict:
    from simulator.stacks import model_replay, replay
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

    out = {"h3 (real aioquic)": real("h3")}
    if extra:
        out["h3, every event checked"] = real("h3", check_every_event=True)
        out["h3 with --qlog"] = with_qlog
    out |= {"h2 TLS (real, TCP model)": real("h2"), "h2 cleartext (real)": cleartext, "QUIC model": model("h3"),
            "TCP model (TLS)": model("h2"), "TCP model, cleartext": model("h2", tls=False)}
    return out


def _measure(path: Path, params: dict, label: str, repeats: int, extra: bool) -> dict:
    candidates = _candidates(path, params, extra)
    best: dict[str, tuple[float, float]] = {}
    results = {}
    for _ in range(repeats):              # round robin: every candidate sees the same machine load
        for name, fn in candidates.items():
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = fn()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            old = best.get(name)
            best[name] = (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
    figures = {}
    for name, (wall, cpu) in best.items():
        s = results[name].summary
        figures[name] = {"wall_s": wall, "cpu_s": cpu, "exchanges": s["exchanges"],
                         "exchanges_per_s": s["exchanges"] / wall, "events": s["events"],
                         "events_per_s": s["events"] / wall, "connections": s["connections"]}
    base = figures["h3 (real aioquic)"]
    first = next(iter(figures.values()))
    print(f"trace {path.name}: {first['exchanges']} exchanges, {first['connections']} connections, {label} "
          f"(best of {repeats})")
    print(f"  {'candidate':<28}{'wall s':>8}{'cpu s':>8}{'exch/s':>9}{'events/s':>10}{'vs h3':>8}{'cpu vs h3':>11}")
    print(f"  {'':<28}{'|-- end to end --|':>25}{'per step':>10}")
    for name, f in figures.items():
        f["ratio_vs_h3"] = f["exchanges_per_s"] / base["exchanges_per_s"]
        f["cpu_ratio_vs_h3"] = base["cpu_s"] / f["cpu_s"]
        print(f"  {name:<28}{f['wall_s']:>8.2f}{f['cpu_s']:>8.2f}{f['exchanges_per_s']:>9,.0f}"
              f"{f['events_per_s']:>10,.0f}{f['ratio_vs_h3']:>7.2f}x{f['cpu_ratio_vs_h3']:>10.2f}x")
    for tls, clear, label in (("h2 TLS (real, TCP model)", "h2 cleartext (real)", "h2"),
                              ("TCP model (TLS)", "TCP model, cleartext", "TCP model")):
        ratio = figures[tls]["exchanges_per_s"] / figures[clear]["exchanges_per_s"]
        cpu_ratio = figures[clear]["cpu_s"] / figures[tls]["cpu_s"]
        figures[f"{label} TLS / cleartext"] = {"exchanges_per_s_ratio": ratio, "cpu_ratio": cpu_ratio}
        print(f"  {label} TLS / cleartext: {ratio:.2f}x exchanges per wall second, {cpu_ratio:.2f}x in CPU "
              f"({figures[tls]['events']:,} vs {figures[clear]['events']:,} events)")
    return figures


def run(quick: bool = False) -> dict:
    import simulator.stacks.h2  # noqa: F401 - imported before timing: module import is not replay time
    import simulator.stacks.h3  # noqa: F401

    out = {}
    if not quick:
        out[MANY.name] = _measure(MANY, {"loss": "0.02", "rtt_s": 0.08, "bandwidth_bps": 20e6},
                                  "loss 2%, RTT 80 ms, 20 Mbit/s", repeats=3, extra=True)
    out[PAGE.name] = _measure(PAGE, {"loss": "0.01"}, "loss 1%, RTT 50 ms, 10 Mbit/s",
                              repeats=1 if quick else 3, extra=False)
    return {"traces": out}
