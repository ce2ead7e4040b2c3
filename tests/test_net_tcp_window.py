"""Linux's congestion window in the TCP model (``TransportConfig(cwnd_in_packets=True)``,
``simulator/net/tcp_window.py``): counted in segments, grown only while it limits the sender,
and TCP_NODELAY writes.  Virtual time only."""

from __future__ import annotations

import pytest

from simulator.engine import Simulator
from simulator.net.link import Path
from simulator.net.tcp import TcpConnection
from simulator.net.transport import TransportConfig

MSS = 1460
RTT = 0.1


def _server(packets: bool, nodelay: bool):
    sim = Simulator(1)
    path = Path(sim, rtt_s=RTT, bandwidth_bps=None, queue_bytes=None)
    conn = TcpConnection(sim, path, TransportConfig(cwnd_in_packets=packets), cwnd_log=True)
    if nodelay:                     # the reference endpoint's (a window in packets runs on it)
        conn.server.nodelay = True
    log: list = []
    conn.client.on_data = lambda sid, data, end, t: log.append((t, len(data)))
    return sim, conn, conn.server.open_stream(unidirectional=True), log


def test_linux_window_counts_segments_not_bytes_rfc6928():
    """RFC 6928's initial window of 10 segments, as Linux's tcp_cwnd_test counts it: twelve
    100-byte writes on a TCP_NODELAY socket leave as ten segments at once, and the two the
    window holds back share one segment after the first ACK, a round trip later.  Counted in
    bytes (RFC 5681), all twelve fit the first flight."""
    sim, conn, sid, log = _server(packets=True, nodelay=True)
    for _ in range(12):
        conn.server.write(sid, b"x" * 100)
    assert conn.server.segments_sent == 10                   # sent at the write, no flush wait
    sim.run()
    assert conn.server.segments_sent == 11
    assert sum(n for _, n in log) == 1200
    first, last = log[0][0], log[-1][0]
    assert first == pytest.approx(RTT / 2, abs=1e-3)
    assert last - first == pytest.approx(RTT, abs=0.03)      # one more round trip (plus the delayed ACK)

    sim, conn, sid, log = _server(packets=False, nodelay=False)
    for _ in range(12):
        conn.server.write(sid, b"x" * 100)
    sim.run()
    assert conn.server.segments_sent == 1                    # writes of one instant share a segment
    assert log[-1][0] == pytest.approx(RTT / 2, abs=1e-3)


@pytest.mark.parametrize("packets", [True, False])
def test_window_grows_only_while_it_limits_the_sender_rfc7661(packets):
    """RFC 7661 section 4.3, as Linux's tcp_is_cwnd_limited: in slow start the window grows
    only while it is under twice the segments last in flight.  Three segments acknowledged
    leave a window of ten at ten (byte counting grows it to thirteen), so a 13-segment
    response then takes two round trips where byte counting sends it in one."""
    sim, conn, sid, log = _server(packets=packets, nodelay=packets)
    conn.server.write(sid, b"h" * (3 * MSS))
    sim.run()
    assert conn.server.cc.cwnd_bytes == (10 if packets else 13) * MSS
    start = sim.now
    conn.server.write(sid, b"r" * (13 * MSS), end=True)
    sim.run()
    took = log[-1][0] - start
    if packets:
        assert took == pytest.approx(1.5 * RTT, abs=0.03)
    else:
        assert took == pytest.approx(RTT / 2, abs=1e-3)


def test_slow_start_still_doubles_when_the_window_limits_rfc5681():
    """RFC 5681 section 3.1: a bulk transfer, always held back by the window, still doubles it
    every round trip when the window is counted in segments (Linux's tcp_slow_start)."""
    sim, conn, sid, log = _server(packets=True, nodelay=True)
    conn.server.write(sid, bytes(3_000_000), end=True)
    sim.run()
    cwnd_log = conn.server.cwnd_log

    def cwnd_at(t):
        value = 10 * MSS
        for when, cwnd in cwnd_log:
            if when > t:
                break
            value = cwnd
        return value

    rounds = [cwnd_at(k * RTT + RTT / 2) / MSS for k in range(5)]
    assert rounds[0] == pytest.approx(10)
    for a, b in zip(rounds, rounds[1:]):
        assert b / a == pytest.approx(2.0, rel=0.05), rounds


@pytest.mark.parametrize("packets", [True, False])
def test_a_pending_ack_rides_on_data_rfc9293(packets):
    """RFC 9293 section 3.10.7.4 (Linux ``tcp_event_ack_sent``): a segment the endpoint sends
    carries its acknowledgement, so a delayed ACK pending then leaves with it.  The server gets
    one segment at 50 ms and answers at 60 ms: the client learns of the ACK at 110 ms, not after
    the server's 25 ms delayed-ACK timer (125 ms), as the byte-counted model has it."""
    sim, conn, sid, log = _server(packets=packets, nodelay=packets)
    up = conn.client.open_stream()
    conn.client.write(up, b"q" * 300)
    sim.call_later(0.06, conn.server.write, sid, b"r" * 300)
    sim.run(until_s=0.115)
    assert (conn.client.snd_una == 300) is packets
    sim.run()
    assert conn.client.snd_una == 300
