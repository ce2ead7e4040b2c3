"""The 2017 reference simulator's network model (HTTP Workshop, London, June 2017; its
description and sources are in the docstring of ``simulator/net/ref2017.py``)."""

from pathlib import Path

import pytest

from simulator.engine import Simulator
from simulator.net.ref2017 import Ref2017Connection
from simulator.studies import hol
from simulator.traces import load

PAGE = Path(__file__).resolve().parent.parent / "traces" / "synthetic-page.har"


def _one_packet_delays(loss_p, n=4000, rtt_s=0.1, reorder_prob=0.0):
    sim = Simulator(seed=4)
    conn = Ref2017Connection(sim, rtt_s=rtt_s, loss_p=loss_p, reorder_prob=reorder_prob)
    arrivals = {}
    conn.server.on_data = lambda sid, data, end, t: arrivals.setdefault(sid, t)
    for i in range(n):
        sid = conn.client.open_stream()
        sim.call_at(i * 1.0, conn.client.write, sid, b"x" * 100, True)
    sim.run()
    return [arrivals[sid] - (sid >> 2) * 1.0 for sid in sorted(arrivals)], conn


def test_no_loss_one_way_delay_is_half_the_rtt():
    delays, conn = _one_packet_delays(0.0, n=50)
    assert all(d == pytest.approx(0.05) for d in delays)
    assert conn.stats()["packets_sent"] == 100  # 50 data packets + 50 acks


def test_each_loss_adds_between_1_1_and_2_rtt():
    delays, conn = _one_packet_delays(0.05)
    extra = sorted(d - 0.05 for d in delays if d > 0.05 + 1e-9)
    assert extra, "some packets must be lost at 5%"
    once = [e for e in extra if e < 0.2 + 1e-9]  # lost exactly once: RTT x U(1.1, 2.0)
    assert min(once) >= 0.11 - 1e-9 and max(once) <= 0.2 + 1e-9
    losses = conn.stats()["packets_lost"]
    assert losses / conn.stats()["packets_sent"] == pytest.approx(0.05, abs=0.015)


def test_reordering_delay_is_at_most_100_ms():
    delays, _ = _one_packet_delays(0.0, reorder_prob=0.05)
    late = [d - 0.05 for d in delays if d > 0.05 + 1e-9]
    assert 0 < len(late) < 0.1 * len(delays)
    assert max(late) <= 0.1


def test_hol_study_over_the_2017_model():
    """Reordering alone blocks in-order HPACK; QCRAM never blocks; no loss, no reordering: nothing blocks."""
    trace = load(PAGE)
    quiet = hol.run(trace, hol.HolParams(transport="ref2017", loss="0", jitter_prob=0.0))
    assert (quiet.summary["blocked"] == 0).all()
    reordered = hol.run(trace, hol.HolParams(transport="ref2017", loss="0.02", jitter_prob=0.05, seed=3))
    assert reordered.summary.loc["hpack", "blocked"] > 0
    assert reordered.summary.loc["qcram", "blocked"] == 0
