"""Engine throughput against SimPy on one workload, side by side in one run.

The workload: ``flows`` senders each send a packet every ``gap_s`` (with a per-flow
phase); a packet reaches its receiver after ``delay_s``.  Every send re-arms the
sender's retransmission timer (RTO, 200 ms) and every arrival re-arms the receiver's
delayed-ACK timer (40 ms): timers are re-armed far more often than they fire, as in a
transport.  Senders pause for 100 ms every 20 packets, so some delayed-ACK timers do
fire, and each fired delayed ACK sends an ACK packet back.

Both engines do the same logical work; the work-unit counts are checked equal.  On
SimPy, a re-armed timer is a new ``Timeout`` whose callback checks a generation
number (SimPy cannot cancel an event), the usual idiom; ours uses ``TimerSlots``.
Ours runs twice: with its event queue and loop in C (``simulator._engine``, the default
when built) and with the Python twin, so ``C / Python twin`` is what the C loop gains on
the engine alone (one step: no protocol work around the events; ``workbench bench stacks``
has the end-to-end figures).
"""

from __future__ import annotations

import time

RTO_S, DELACK_S, PAUSE_S, BURST = 0.2, 0.04, 0.1, 20


def _workload_ours(flows, gap_s, delay_s, horizon_s, engine=None):
    from simulator.engine import Simulator

    sim = Simulator(seed=1, engine=engine)
    units = [0]

    def make_flow(i):
        sender = sim.timers(f"s{i}", ["rto"])
        receiver = sim.timers(f"r{i}", ["delack"])
        sent = [0]

        def on_rto():
            units[0] += 1

        def on_ack():
            units[0] += 1

        def on_delack():
            units[0] += 1
            sim.call_later(delay_s, on_ack)

        def deliver():
            units[0] += 1
            receiver.set("delack", sim.now + DELACK_S, on_delack)

        def send():
            if sim.now > horizon_s:
                return
            units[0] += 1
            sent[0] += 1
            sim.call_later(delay_s, deliver)
            sender.set("rto", sim.now + RTO_S, on_rto)
            sim.call_later(gap_s + (PAUSE_S if sent[0] % BURST == 0 else 0.0), send)

        sim.call_at(i * gap_s / flows, send)

    for i in range(flows):
        make_flow(i)
    sim.run()
    return units[0]


def _workload_simpy(flows, gap_s, delay_s, horizon_s):
    import simpy

    env = simpy.Environment()
    units = [0]

    def make_flow(i):
        rto_gen = [0]
        delack_gen = [0]

        def on_rto(gen):
            if gen == rto_gen[0]:
                units[0] += 1

        def on_ack(_):
            units[0] += 1

        def on_delack(gen):
            if gen == delack_gen[0]:
                units[0] += 1
                env.timeout(delay_s).callbacks.append(on_ack)

        def deliver(_):
            units[0] += 1
            delack_gen[0] += 1
            gen = delack_gen[0]
            env.timeout(DELACK_S).callbacks.append(lambda _e, g=gen: on_delack(g))

        def sender():
            yield env.timeout(i * gap_s / flows)
            sent = 0
            while env.now <= horizon_s:
                units[0] += 1
                sent += 1
                env.timeout(delay_s).callbacks.append(deliver)
                rto_gen[0] += 1
                gen = rto_gen[0]
                env.timeout(RTO_S).callbacks.append(lambda _e, g=gen: on_rto(g))
                yield env.timeout(gap_s + (PAUSE_S if sent % BURST == 0 else 0.0))

        env.process(sender())

    for i in range(flows):
        make_flow(i)
    env.run()
    return units[0]


def run(quick: bool = False) -> dict:
    flows, gap_s, delay_s = 200, 0.01, 0.025
    horizon_s = 2.0 if quick else 10.0
    from simulator.engine import ENGINE_IMPLEMENTATION

    candidates = {"simpy": _workload_simpy, "workbench": _workload_ours}
    if ENGINE_IMPLEMENTATION == "c":
        candidates["workbench, Python twin"] = lambda *a: _workload_ours(*a, engine="python")
    results = {}
    for name, fn in candidates.items():
        best = None
        for _ in range(1 if quick else 3):
            t0 = time.perf_counter()
            units = fn(flows, gap_s, delay_s, horizon_s)
            elapsed = time.perf_counter() - t0
            best = elapsed if best is None else min(best, elapsed)
        results[name] = {"events": units, "seconds": best, "events_per_s": units / best}
    if len({r["events"] for r in results.values()}) != 1:
        raise AssertionError(f"workloads differ: {results}")
    ratio = results["workbench"]["events_per_s"] / results["simpy"]["events_per_s"]
    print(f"{'engine':<24}{'events':>10}{'seconds':>10}{'events/s':>14}")
    for name, r in results.items():
        print(f"{name:<24}{r['events']:>10}{r['seconds']:>10.3f}{r['events_per_s']:>14,.0f}")
    print(f"ratio workbench ({ENGINE_IMPLEMENTATION} event queue) / simpy: {ratio:.2f}x (goal >= 2x)")
    twin = results.get("workbench, Python twin")
    c_vs_twin = results["workbench"]["events_per_s"] / twin["events_per_s"] if twin else None
    if twin:
        print(f"ratio C event queue / Python twin: {c_vs_twin:.2f}x (the engine alone, one step)")
    return {
        "c_vs_python_twin": c_vs_twin,
        "python_twin_events_per_s": twin["events_per_s"] if twin else None,
        "engine": ENGINE_IMPLEMENTATION,
        "workload": {"flows": flows, "gap_s": gap_s, "delay_s": delay_s, "horizon_s": horizon_s},
        "simpy_events_per_s": results["simpy"]["events_per_s"],
        "workbench_events_per_s": results["workbench"]["events_per_s"],
        "events": results["workbench"]["events"],
        "ratio_vs_simpy": ratio,
    }
