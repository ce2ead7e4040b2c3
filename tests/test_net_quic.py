"""Tests of the QUIC transport model: physics (goodput, Mathis) and the RFC 9000/9002 rules."""

from __future__ import annotations

import math

import pytest

from simulator.engine import Simulator
from simulator.net.link import DropList, Jitter, LossModel, Path
from simulator.net.quic import (
    CHROMIUM_FINISHED_BYTES,
    SHORT_HEADER_BYTES,
    UDP_IP_HEADER_BYTES,
    CryptoDatagram,
    Pacer,
    QuicConnection,
    QuicEndpoint,
    stream_frame_header_len,
    varint_len,
)
from simulator.net.transport import TransportConfig

MB = 1_000_000


def make(
    seed=1,
    *,
    rtt_s=0.1,
    bandwidth_bps=10e6,
    queue_bytes="bdp",
    loss=None,
    reverse_loss="same",
    jitter=None,
    trace=False,
    quic=None,
    **cfg,
):
    sim = Simulator(seed, trace=trace)
    if queue_bytes == "bdp":
        queue_bytes = int(bandwidth_bps * rtt_s / 8) if bandwidth_bps else None
    path = Path(
        sim,
        rtt_s=rtt_s,
        bandwidth_bps=bandwidth_bps,
        queue_bytes=queue_bytes,
        loss=loss,
        reverse_loss=reverse_loss,
        jitter=jitter,
    )
    conn = QuicConnection(sim, path, TransportConfig(**cfg), **(quic or {}))
    return sim, path, conn


class Receiver:
    """Collects on_data calls per stream and checks the delivery contract as it goes."""

    def __init__(self, endpoint):
        self.data: dict[int, bytearray] = {}
        self.end_s: dict[int, float] = {}
        self.first_s: dict[int, float] = {}
        endpoint.on_data = self

    def __call__(self, stream_id, data, end, time_s):
        assert stream_id not in self.end_s, "data after the end of the stream"
        self.first_s.setdefault(stream_id, time_s)
        self.data.setdefault(stream_id, bytearray()).extend(data)
        if end:
            self.end_s[stream_id] = time_s


def pattern(n, salt=0):
    return bytes((i * 7 + salt) % 251 for i in range(n))


# -- framing and stream ids ----------------------------------------------------------
def test_varint_and_frame_sizes():
    # RFC 9000 section 16: 1, 2, 4, 8 bytes for 6, 14, 30, 62-bit values.
    assert [varint_len(v) for v in (0, 63, 64, 16383, 16384, 2**30 - 1, 2**30)] == [1, 1, 2, 2, 4, 4, 8]
    # Section 19.8: offset left out at 0 (OFF bit).
    assert stream_frame_header_len(0, 0, 1200) == 1 + 1 + 2
    assert stream_frame_header_len(4, 70000, 1200) == 1 + 1 + 4 + 2
    assert SHORT_HEADER_BYTES == 27


def test_stream_ids_rfc9000_2_1():
    _, _, conn = make()
    c, s = conn.client, conn.server
    assert [c.open_stream() for _ in range(3)] == [0, 4, 8]
    assert [c.open_stream(unidirectional=True) for _ in range(2)] == [2, 6]
    assert [s.open_stream(unidirectional=True) for _ in range(2)] == [3, 7]
    assert s.open_stream() == 1
    with pytest.raises(ValueError):
        s.write(2, b"x")  # the client's unidirectional stream
    with pytest.raises(ValueError):
        c.write(12, b"x")  # never opened


def test_packets_fit_the_datagram_and_share_streams():
    sim, path, conn = make(bandwidth_bps=None)
    seen = []
    path.forward.observers.append(seen.append)
    Receiver(conn.server)
    a, b = conn.client.open_stream(), conn.client.open_stream()
    conn.client.write(a, pattern(100), end=True)  # same instant: coalesced into one packet
    conn.client.write(b, pattern(200), end=True)
    sim.run()
    assert len(seen) == 1
    packet = seen[0]
    assert [(sid, off, len(d), fin) for sid, off, d, fin in packet.payload.frames] == [
        (a, 0, 100, True),
        (b, 0, 200, True),
    ]
    expected = SHORT_HEADER_BYTES + stream_frame_header_len(a, 0, 100) + 100 + stream_frame_header_len(b, 0, 200) + 200
    assert packet.size_bytes == expected + UDP_IP_HEADER_BYTES
    # A bulk write: every packet at most max_datagram_bytes of UDP payload.
    sim, path, conn = make()
    sizes = []
    path.forward.observers.append(lambda p: sizes.append(p.size_bytes))
    Receiver(conn.server)
    conn.client.write(conn.client.open_stream(), bytes(100_000), end=True)
    sim.run()
    assert max(sizes) == conn.config.max_datagram_bytes + UDP_IP_HEADER_BYTES


def test_request_response_on_client_bidi_stream():
    sim, _, conn = make()
    client_rx = Receiver(conn.client)
    request = b"GET / HTTP/3"

    def serve(stream_id, data, end, time_s):
        if end:
            conn.server.write(stream_id, pattern(50_000), end=True)  # answer on the same stream

    conn.server.on_data = serve
    sid = conn.client.open_stream()
    conn.client.write(sid, request, end=True)
    sim.run()
    assert bytes(client_rx.data[sid]) == pattern(50_000)
    # Request (1/2 RTT) + response: at least one RTT.
    assert client_rx.end_s[sid] >= 0.1


# -- physics ---------------------------------------------------------------------------
@pytest.mark.parametrize("cc, rtt_s", [("reno", 0.1), ("cubic", 0.05)])
def test_bulk_goodput_near_bottleneck(cc, rtt_s):
    size = 10 * MB
    bw = 10e6
    sim, _, conn = make(rtt_s=rtt_s, bandwidth_bps=bw, cc=cc)
    rx = Receiver(conn.server)
    sid = conn.client.open_stream()
    data = pattern(size)
    conn.client.write(sid, data, end=True)
    sim.run()
    assert rx.data[sid] == data
    goodput_bps = size * 8 / rx.end_s[sid]
    assert goodput_bps >= 0.9 * bw, goodput_bps
    assert goodput_bps <= bw
    assert sim.events_run < 30 * size // 1200


@pytest.mark.parametrize("p", [0.01, 0.02])
def test_reno_throughput_matches_mathis(p):
    # Mathis et al. 1997: rate = MSS / RTT * sqrt(3/2) / sqrt(p); loss on the data path only.
    rtt_s, duration_s = 0.1, 60.0
    mss = 1252 - SHORT_HEADER_BYTES - stream_frame_header_len(0, 70000, 1200)  # stream bytes per packet
    ratios = []
    for seed in (1, 2):
        sim, _, conn = make(seed, rtt_s=rtt_s, bandwidth_bps=100e6, loss=p, reverse_loss=None, cc="reno")
        rx = Receiver(conn.server)
        sid = conn.client.open_stream()
        conn.client.write(sid, bytes(30 * MB))
        sim.run(until_s=duration_s)
        mathis_Bps = mss / rtt_s * 1.22 / math.sqrt(p)
        ratios.append(len(rx.data[sid]) / duration_s / mathis_Bps)
        assert conn.stats()["client"]["congestion_events"] > 10
    for ratio in ratios:
        assert 0.5 <= ratio <= 2.0, ratios


# -- integrity and head-of-line blocking ------------------------------------------------
@pytest.mark.parametrize("loss", ["ge:0.05,0.3", 0.03])
def test_interleaved_streams_integrity_under_loss(loss):
    sim, _, conn = make(7, rtt_s=0.06, bandwidth_bps=5e6, loss=loss, jitter=Jitter(prob=0.05, max_s=0.02))
    server_rx = Receiver(conn.server)
    client_rx = Receiver(conn.client)
    rng = sim.rng("test/writes")
    written: dict[int, bytearray] = {}
    responses: dict[int, bytes] = {}

    def on_request(stream_id, data, end, time_s):
        server_rx(stream_id, data, end, time_s)
        if end and stream_id % 4 == 0:  # answer every bidi stream
            responses[stream_id] = pattern(20_000 + stream_id * 1000, salt=stream_id)
            conn.server.write(stream_id, responses[stream_id], end=True)

    conn.server.on_data = on_request

    streams = [conn.client.open_stream() for _ in range(4)] + [conn.client.open_stream(unidirectional=True)]
    for sid in streams:
        written[sid] = bytearray()
        t = 0.0
        for k in range(12):
            t += rng.uniform(0.0, 0.05)
            chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9000)))
            written[sid] += chunk
            sim.call_at(t, conn.client.write, sid, chunk, k == 11)
    sim.run()
    for sid in streams:
        assert server_rx.data[sid] == written[sid], sid
        assert sid in server_rx.end_s
    for sid, body in responses.items():
        assert client_rx.data[sid] == body
    st = conn.stats()
    assert st["packets_lost"] > 0
    assert st["bytes_delivered"] == sum(map(len, written.values())) + sum(map(len, responses.values()))
    assert st["max_reorder_buffer_bytes"] > 0


def test_one_lost_packet_holds_back_only_its_stream():
    # The point of QUIC streams (RFC 9000 section 2.2): a hole delays only its stream.
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    path.forward.loss = DropList([0])  # the first packet: stream A only
    carried = {}  # link index -> streams in the packet
    path.forward.observers.append(lambda p: carried.setdefault(p.link_seq, {f[0] for f in p.payload.frames}))
    rx = Receiver(conn.server)
    a, b = conn.client.open_stream(), conn.client.open_stream()
    conn.client.write(a, pattern(3000), end=True)
    conn.client.write(b, pattern(3000, 1), end=True)
    sim.run()
    assert carried[0] == {a}  # the dropped packet held only A's bytes
    assert any(streams == {b} for streams in carried.values())
    assert rx.data[a] == pattern(3000) and rx.data[b] == pattern(3000, 1)
    one_way = 0.05 + 5 * 1280 * 8 / 10e6
    assert rx.end_s[b] <= one_way  # B on time: half an RTT
    assert rx.first_s[a] >= rx.end_s[b] + 0.1 - 1e-9  # A waits for the retransmission (+1 RTT)
    assert conn.stats()["client"]["lost_by_packet_threshold"] == 1


# -- acknowledgement callbacks ---------------------------------------------------------
def test_ack_callbacks_ranges_and_timing():
    rtt_s = 0.08
    sim, path, conn = make(rtt_s=rtt_s, bandwidth_bps=8e6)
    path.forward.loss = DropList([3, 10, 11, 40])
    sent = {}
    path.forward.observers.append(lambda p: sent.setdefault(p.payload.pn, (p.sent_s, p.payload)))
    Receiver(conn.server)
    sizes = {0: 40_000, 4: 25_000, 2: 9_000}
    acked_ranges = {sid: [] for sid in sizes}
    stream_acked = {sid: [] for sid in sizes}
    acked_pns = set()

    def on_packet_acked(pn, ranges):
        sent_s, packet = sent[pn]
        assert sim.now >= sent_s + rtt_s  # the ACK needs a round trip
        assert ranges == [(sid, off, len(d)) for sid, off, d, _ in packet.frames]
        assert pn not in acked_pns
        acked_pns.add(pn)
        for sid, off, n in ranges:
            acked_ranges[sid].append((off, off + n))

    def contiguous_prefix(ranges):
        end = 0
        for lo, hi in sorted(ranges):
            if lo > end:
                break
            end = max(end, hi)
        return end

    def on_stream_acked(sid, offset):
        assert not stream_acked[sid] or offset > stream_acked[sid][-1][1]  # only when it grows
        assert offset == contiguous_prefix(acked_ranges[sid])
        stream_acked[sid].append((sim.now, offset))

    conn.client.on_packet_acked = on_packet_acked
    conn.client.on_stream_acked = on_stream_acked
    assert [conn.client.open_stream(), conn.client.open_stream(), conn.client.open_stream(True)] == [0, 4, 2]
    for sid, n in sizes.items():
        conn.client.write(sid, pattern(n, sid), end=True)
    sim.run()
    for sid, n in sizes.items():
        assert stream_acked[sid][-1][1] == n
        assert contiguous_prefix(acked_ranges[sid]) == n
    lost_pns = {pn for pn, (_, p) in sent.items() if pn not in acked_pns}
    assert {3, 10, 11, 40} <= lost_pns


# -- loss detection (RFC 9002 section 6) ------------------------------------------------
def test_packet_threshold_loss_and_one_reduction_per_recovery():
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    conn = QuicConnection(sim, path, TransportConfig(), name="q2", log_cwnd=True)
    path.forward.loss = DropList([30, 32, 34])  # three losses in one window
    Receiver(conn.server)
    data = pattern(200_000)
    conn.client.write(conn.client.open_stream(), data, end=True)
    sim.run()
    st = conn.stats()["client"]
    assert st["packets_lost"] == 3
    assert st["lost_by_packet_threshold"] == 3 and st["lost_by_time_threshold"] == 0  # 6.1.1
    assert st["congestion_events"] == 1  # 7.3.2: one reduction per recovery period
    log = st["cwnd_log"]
    drops = [(before, after) for (_, before), (_, after) in zip(log, log[1:]) if after < before]
    assert len(drops) == 1 and drops[0][1] == pytest.approx(drops[0][0] / 2)  # Reno halves (7.3.2)
    assert st["stream_bytes_retransmitted"] > 0 and st["ptos"] == 0


# (RTT, send time) pairs where the RFC 9002 A.10 comparison "time_sent <= now - loss_delay"
# is False at exactly the timer's deadline "time_sent + loss_delay" (float rounding):
# a naive model re-arms the same deadline forever.  Found by a sweep; plus plain cases.
TRAP_CASES = [(0.1, 0.1 + 17 * 0.0173), (0.037, 0.1), (0.0731, 0.1 + 4 * 0.0173), (0.2, 0.0), (0.0123, 0.5)]


@pytest.mark.parametrize("rtt_s, start_s", TRAP_CASES)
def test_time_threshold_loss_without_spinning(rtt_s, start_s, monkeypatch):
    # Three packets, the middle one lost: the third is only 1 ahead (< kPacketThreshold),
    # so the loss timer at 9/8 * max(smoothed_rtt, latest_rtt) declares it (6.1.2).
    calls = []
    original = QuicEndpoint._detect_lost_packets

    def counted(self):
        calls.append(1)
        assert len(calls) < 100, "loss detection is spinning"
        original(self)

    monkeypatch.setattr(QuicEndpoint, "_detect_lost_packets", counted)
    sim, path, conn = make(rtt_s=rtt_s, bandwidth_bps=None)
    path.forward.loss = DropList([1])
    sends = []
    path.forward.observers.append(lambda p: sends.append((p.sent_s, p.payload.pn)))  # at fate time
    rx = Receiver(conn.server)
    payload = 1252 - SHORT_HEADER_BYTES - 4
    sid = conn.client.open_stream()
    data = pattern(3 * payload - 10)
    sim.call_at(start_s, conn.client.write, sid, data, True)
    sim.run(max_events=10_000)
    assert sim.pending == 0 and sim.events_run < 200
    assert rx.data[sid] == data
    st = conn.stats()["client"]
    assert st["lost_by_time_threshold"] == 1 and st["lost_by_packet_threshold"] == 0
    sends.sort()
    assert [pn for _, pn in sends] == [0, 1, 2, 3]  # the retransmission gets a new number
    retransmit_s = sends[3][0]
    assert retransmit_s - start_s == pytest.approx(9 / 8 * rtt_s, rel=1e-6)
    assert st["ptos"] == 0


class Outage(LossModel):
    """Drops every packet sent in [start_s, end_s)."""

    def __init__(self, sim, start_s, end_s):
        self.sim, self.start_s, self.end_s = sim, start_s, end_s

    def lost(self):
        return self.start_s <= self.sim.now < self.end_s

    @property
    def mean_loss_rate(self):
        return 0.0


def test_pto_fires_backs_off_and_recovers():
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    path.forward.loss = Outage(sim, 0.5, 6.0)
    probes = []
    path.forward.observers.append(lambda p: p.payload.probe and probes.append(p.sent_s))
    rx = Receiver(conn.server)
    sid = conn.client.open_stream()
    data = pattern(1 * MB)
    conn.client.write(sid, data, end=True)
    sim.run(max_events=200_000)
    assert sim.pending == 0 and sim.events_run < 20_000
    assert rx.data[sid] == data and rx.end_s[sid] > 6.0
    st = conn.stats()["client"]
    assert st["ptos"] >= 4
    # Probes go out in pairs (6.2.4); the PTO doubles each time (6.2.1) while nothing is acked.
    times = sorted(set(probes))
    assert all(probes.count(t) == 2 for t in times)
    in_outage = [t for t in times if t < 6.0]
    gaps = [b - a for a, b in zip(in_outage, in_outage[1:])]
    assert len(gaps) >= 3
    for g1, g2 in zip(gaps, gaps[1:]):
        assert g2 == pytest.approx(2 * g1, rel=1e-6)


def test_ack_frequency_and_delay_rfc9000_13_2():
    # Receiver ACKs every 2nd ack-eliciting packet, or after max_ack_delay for a lone one.
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=None)
    acks = []
    path.reverse.observers.append(lambda p: acks.append((p.sent_s, p.payload.ack)))
    Receiver(conn.server)
    conn.client.write(conn.client.open_stream(), b"x" * 100, end=True)  # one packet
    sim.run()
    assert len(acks) == 1
    sent_s, (ranges, ack_delay_s) = acks[0]
    assert sent_s == pytest.approx(0.05 + 0.025) and ack_delay_s == pytest.approx(0.025)
    assert ranges == [(0, 0)]
    # Ten packets back to back, arriving one serialisation time (1 ms) apart.
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    acks = []
    path.reverse.observers.append(lambda p: acks.append(p.payload.ack))
    Receiver(conn.server)
    conn.client.write(conn.client.open_stream(), bytes(10 * 1200), end=True)
    sim.run()
    assert [r for r, _ in acks] == [[(0, 1)], [(0, 3)], [(0, 5)], [(0, 7)], [(0, 9)]]
    srtt = conn.stats()["client"]["srtt_s"]
    assert 0.1 < srtt < 0.1 + 10 * 1280 * 8 / 10e6  # the RTT plus the queue the burst built


def test_ack_rides_with_data_rfc9000_13_2():
    """RFC 9000 13.2: an ACK goes in the next packet with data when one leaves; an ACK-only
    packet only when the ACK is due (2 ack-eliciting packets, 13.2.2, or the ACK delay) and
    there is nothing to send."""
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    fwd, rev = [], []
    path.forward.observers.append(lambda p: fwd.append(p.payload))
    path.reverse.observers.append(lambda p: rev.append(p.payload))
    conn.server.on_data = lambda sid, data, end, t: end and conn.server.write(sid, pattern(3000), end=True)
    Receiver(conn.client)
    conn.client.write(conn.client.open_stream(), b"GET /", end=True)  # one ack-eliciting packet
    sim.run()
    # The server answers at once: its first response packet acknowledges the request.
    assert rev[0].frames and rev[0].ack is not None and rev[0].ack[0] == [(0, 0)]
    assert not [p for p in rev if not p.frames]  # no ACK-only packet from the server
    # The client has nothing to send: it acknowledges the 3 response packets alone.
    acks = [p for p in fwd if not p.frames]
    assert acks and all(p.ack is not None and not p.ack_eliciting for p in acks)
    # Both directions busy: most ACKs ride with data (alone only while the window is full).
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6)
    packets = []
    for link in (path.forward, path.reverse):
        link.observers.append(lambda p: packets.append(p.payload))
    Receiver(conn.client), Receiver(conn.server)
    conn.client.write(conn.client.open_stream(), pattern(300_000), end=True)
    conn.server.write(conn.server.open_stream(), pattern(300_000), end=True)
    sim.run()
    riding = [p for p in packets if p.frames and p.ack is not None]
    alone = [p for p in packets if not p.frames]
    data_packets = len([p for p in packets if p.frames])
    # Alone, one ACK per 2 data packets (13.2.2) would make data_packets / 2 ACK-only packets.
    assert len(riding) > len(alone) and len(alone) < 0.75 * data_packets / 2


def test_ack_delay_timer_sends_alone_after_the_local_delay():
    # One packet: the ACK waits for the local ACK delay (aioquic: 1 ms), then goes alone.
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=None, quic={"ack_delay_s": 0.001})
    acks = []
    path.reverse.observers.append(lambda p: acks.append((p.sent_s, p.payload.ack)))
    Receiver(conn.server)
    conn.client.write(conn.client.open_stream(), b"x" * 100, end=True)
    sim.run()
    assert len(acks) == 1 and acks[0][0] == pytest.approx(0.05 + 0.001)
    assert acks[0][1][1] == pytest.approx(0.001)  # the ACK Delay field (19.3)


def _paced_sends(pacer, n, now=1.0):
    """``n`` packets sent as fast as ``pacer`` lets them, from ``now``: their times, and each
    (time, wake-up) the pacer asked for."""
    sent, timers = [], []
    while len(sent) < n:
        when = pacer.next_send_s(now)
        if when is None:
            sent.append(now)
            pacer.on_packet_sent(now)
        else:
            timers.append((now, when))
            now = when
    return sent, timers


def test_pacer_rule_rfc9002_7_7():
    """aioquic's pacing rule: cwnd / srtt, one datagram per interval, a burst of
    max(2, min(cwnd / 4, 16)) datagrams' time after idle, nothing paced before an RTT sample."""
    pacer = Pacer(1252)
    assert pacer.next_send_s(5.0) is None  # no RTT sample yet: not paced
    pacer.set_rate(8 * 1252, 0.125)  # 80128 B/s: 1/64 s per datagram (exact in binary floats)
    assert pacer.interval_s == 1 / 64
    assert pacer.credit_max_s == 2 / 64  # max(2, min(8 / 4, 16)) datagrams
    sent, _ = _paced_sends(pacer, 8)
    assert sent[:2] == [1.0, 1.0]  # the credit saved while idle: a burst
    assert [b - a for a, b in zip(sent[1:], sent[2:])] == [1 / 64] * 6


def test_a_pacer_woken_late_sends_two_packets_per_wake_up_rfc9002_7_7():
    """aioquic's pacer on an event loop that wakes it a little late (``late_s``): the credit
    then holds one interval and the lateness, so a packet leaves and, some credit being left,
    a second one: pairs, one wake-up per interval plus the lateness (the lab's qlog)."""
    pacer = Pacer(1252, late_s=1 / 1024)
    pacer.set_rate(8 * 1252, 0.125)  # 1/64 s per datagram
    sent, timers = _paced_sends(pacer, 10)
    assert all(when == now + 1 / 64 + 1 / 1024 for now, when in timers)
    wake_ups = sorted(set(sent))
    assert [sent.count(t) for t in wake_ups] == [2, 2, 2, 2, 2]  # the first two: the idle credit
    assert [b - a for a, b in zip(wake_ups, wake_ups[1:])] == [1 / 64 + 1 / 1024] * 4


def test_pacing_spreads_the_window_over_the_rtt():
    # No bottleneck: without pacing a window leaves at once; paced, it is spread over the RTT.
    departures = {}
    for pacing in (False, True):
        sim, path, conn = make(rtt_s=0.1, bandwidth_bps=None, quic={"pacing": pacing})
        times = []
        path.forward.observers.append(lambda p: p.payload.frames and times.append(p.sent_s))
        Receiver(conn.server)
        conn.client.write(conn.client.open_stream(), pattern(300_000), end=True)
        sim.run()
        departures[pacing] = times
    unpaced, paced = departures[False], departures[True]
    assert len(set(unpaced[:10])) == 1  # the initial window: a burst at 0
    assert len(set(paced[:10])) == 1  # no RTT sample yet: not paced either
    second_round = [t for t in paced if 0.1 <= t < 0.2]
    assert len(set(second_round)) > len(second_round) / 2  # paced: mostly one per instant
    assert max(len([t for t in paced if t == x]) for x in second_round) <= 3
    assert len(set(t for t in unpaced if 0.1 <= t < 0.2)) < len(set(second_round))


def test_slow_start_ends_on_a_rising_rtt_before_any_loss():
    """aioquic's rule (``slow_start_rtt_exit``): behind an unlimited bottleneck queue there is
    no loss to end slow start (RFC 9002 section 7.3.1), but the RTT rises as the queue fills;
    the sender sets ssthresh to its window once five RTT samples in a row sit a quarter
    above the smallest window maximum so far, so its window and the queue stay far smaller."""
    out = {}
    for exit_on_rtt in (False, True):
        sim, path, conn = make(
            rtt_s=0.05, bandwidth_bps=10e6, queue_bytes=None, quic={"slow_start_rtt_exit": exit_on_rtt}
        )
        rx = Receiver(conn.server)
        sid = conn.client.open_stream()
        conn.client.write(sid, pattern(3 * MB), end=True)
        sim.run()
        assert bytes(rx.data[sid]) == pattern(3 * MB)
        st = conn.stats()["client"]
        assert st["packets_lost"] == 0
        out[exit_on_rtt] = (conn.client.cc.ssthresh_bytes, st["cwnd_bytes"], st["srtt_s"])
    assert out[False][0] == math.inf  # never left slow start
    assert out[True][0] < math.inf  # left it on the RTT rise
    assert out[True][1] < 0.25 * out[False][1]
    assert out[True][2] < 0.5 * out[False][2]  # a much shorter standing queue


def test_pull_writer_schedules_streams_when_a_packet_may_leave():
    """``on_send_ready``: the endpoint asks the application for data only when a packet may
    leave (window and pacer allow), so a response that arrives later still gets its turn
    at once, as in aioquic's round robin over its streams' send buffers at send time; a
    writer that hands over a whole response first makes the second wait behind it."""
    finish = {}
    for pull in (False, True):
        sim, path, conn = make(rtt_s=0.05, bandwidth_bps=10e6, queue_bytes=None)
        rx = Receiver(conn.client)
        server = conn.server
        big, small = server.open_stream(unidirectional=True), server.open_stream(unidirectional=True)
        left = {big: 400_000, small: 0}
        order = [big, small]

        def write_next() -> bool:
            for _ in range(len(order)):
                sid = order.pop(0)
                order.append(sid)
                if left[sid]:
                    n = min(left[sid], 1200)
                    left[sid] -= n
                    server.write(sid, b"x" * n, end=left[sid] == 0)
                    return True
            return False

        if pull:
            server.on_send_ready = write_next
            server.want_to_send()
        else:
            server.write(big, b"x" * left[big], end=True)
            left[big] = 0

        def later() -> None:  # a small response, 0.2 s in
            if pull:
                left[small] = 6000
                server.want_to_send()
            else:
                server.write(small, b"x" * 6000, end=True)

        sim.call_at(0.2, later)
        sim.run()
        assert len(rx.data[big]) == 400_000 and len(rx.data[small]) == 6000
        finish[pull] = (rx.end_s[small], rx.end_s[big])
    assert finish[True][0] < 0.2 + 0.15  # its turn at once: a few packets
    assert finish[False][0] > finish[False][1] - 0.01  # FIFO: behind the whole big one
    assert finish[True][1] == pytest.approx(finish[False][1], abs=0.05)  # same bytes, same total time


def _handshake(drop_fwd=(), drop_rev=(), **kw):
    sim, path, conn = make(rtt_s=0.1, bandwidth_bps=10e6, quic={"handshake": True}, initial_rtt_s=0.1, **kw)
    path.forward.loss, path.reverse.loss = DropList(list(drop_fwd)), DropList(list(drop_rev))
    log = []
    for link, name in ((path.forward, "c"), (path.reverse, "s")):
        link.observers.append(lambda p, name=name: log.append((p.sent_s, name, p.payload, p.size_bytes, p.lost)))
    rx = Receiver(conn.server)
    sid = conn.client.open_stream()
    conn.client.write(sid, b"GET /", end=True)  # written at 0, before the handshake
    sim.run()
    assert bytes(rx.data[sid]) == b"GET /"
    return conn, rx, sid, log


def test_handshake_rfc9001_one_rtt_before_data():
    """The client's Initial is padded to the full datagram (RFC 9000 14.1), the server
    answers with its flight, the client sends its Finished and then 1-RTT data: one round
    trip (plus serialisation) before the first stream byte leaves (no 0-RTT)."""
    conn, rx, sid, log = _handshake()
    ser = 1280 * 8 / 10e6
    kinds = [(name, p.kind if isinstance(p, CryptoDatagram) else "1rtt") for _, name, p, _, _ in log]
    assert kinds[:4] == [("c", "client_initial"), ("s", "server_flight"), ("c", "client_finished"), ("c", "1rtt")]
    t_initial, _, _, size_initial, _ = log[0]
    assert t_initial == 0.0 and size_initial == conn.config.max_datagram_bytes + UDP_IP_HEADER_BYTES >= 1200
    assert log[1][0] == pytest.approx(0.05 + ser)  # the server answers on arrival
    assert log[3][0] == pytest.approx(0.1 + 2 * ser)  # 1-RTT data after one RTT
    assert rx.end_s[sid] > 0.15 + 2 * ser
    st = conn.stats()
    assert st["client"]["handshake_ptos"] == st["server"]["handshake_ptos"] == 0
    # The handshake gave both sides an RTT sample before data (so pacing and the PTO use it).
    assert st["client"]["srtt_s"] == pytest.approx(0.1 + 2 * ser, rel=0.05)
    assert st["server"]["handshake_done_s"] == pytest.approx(0.15 + 3 * ser, abs=1e-3)


def test_handshake_losses_recovered_by_pto_rfc9002_6_2():
    """Lost handshake datagrams are sent again at the probe timeout: twice the initial RTT
    before any sample (aioquic's rule), backing off; a server seeing the ClientHello again
    resends its flight at once (RFC 9002 6.2.3); 1-RTT packets that reach the server before
    the client's Finished wait for it (RFC 9001 5.7)."""
    # Client Initial lost: resent at 2 x initial RTT.
    conn, _, _, log = _handshake(drop_fwd=[0])
    initials = [t for t, name, p, _, _ in log if name == "c" and getattr(p, "kind", "") == "client_initial"]
    assert initials == [0.0, pytest.approx(0.2)]
    assert conn.stats()["client"]["handshake_ptos"] == 1
    # Server flight lost: the client's PTO resends the Initial, and the server answers it at once.
    conn, _, _, log = _handshake(drop_rev=[0])
    flights = [(t, lost) for t, name, p, _, lost in log if name == "s" and getattr(p, "kind", "") == "server_flight"]
    assert len(flights) == 2 and flights[0][1] and not flights[1][1]  # sent again once, not twice
    assert flights[1][0] == pytest.approx(0.2 + 0.05 + 1280 * 8 / 10e6)
    # Client Finished lost: the server holds the request until the Finished comes again.
    conn, rx, sid, log = _handshake(drop_fwd=[1])
    finished = [t for t, name, p, _, _ in log if name == "c" and getattr(p, "kind", "") == "client_finished"]
    assert len(finished) == 2
    assert rx.end_s[sid] > finished[1] + 0.05 - 1e-9
    assert conn.stats()["server"]["handshake_done_s"] > finished[1]


def _first_response(rtt_s, lab):
    """A 10.7 kB response on a fresh connection at ``rtt_s`` (aioquic's options, 100 ms initial
    RTT): the server's 1-RTT data packets' send times, the handshake's datagrams, its srtt."""
    quic = dict(handshake=True, pto_declares_lost=True, ack_delay_s=0.001, chromium_client_hello=lab)
    late_s = 0.0007 if lab else 0.0
    sim, path, conn = make(
        rtt_s=rtt_s, bandwidth_bps=50e6, queue_bytes=None, initial_rtt_s=0.1, pacer_late_s=late_s, quic=quic
    )
    log = []
    for link, name in ((path.forward, "c"), (path.reverse, "s")):
        link.observers.append(lambda p, name=name: log.append((p.sent_s, name, p.payload, p.size_bytes)))
    rx = Receiver(conn.client)
    conn.server.on_data = lambda sid, data, end, t: end and conn.server.write(sid, b"y" * 10_700, end=True)
    sid = conn.client.open_stream()
    conn.client.write(sid, b"GET /", end=True)
    sim.run()
    assert len(rx.data[sid]) == 10_700
    data = [t for t, name, p, size in log if name == "s" and not isinstance(p, CryptoDatagram) and size > 1000]
    crypto = [(name, p.kind, size) for t, name, p, size in log if isinstance(p, CryptoDatagram)]
    return data, crypto, conn.stats()["server"]


def test_chromium_client_hello_gives_aioquic_an_rtt_sample_above_twice_its_initial_rtt_rfc9002_6_2_1():
    """aioquic's first probe timeout, twice its 100 ms initial RTT, resends its flight before a
    300 ms round trip ends and declares it lost, so an aioquic client's handshake leaves the
    server without an RTT sample: its first window leaves at once, unpaced (RFC 9002 7.7 needs
    a rate).  Chromium's ClientHello comes in two pieces, shuffled: aioquic answers the first
    with an ACK and a PING (padded, RFC 9000 14.1), the client acknowledges that at once
    (13.2.1), and the PING is no CRYPTO a timeout declares lost: the server samples 300 ms and
    paces its first window, two packets per wake-up of its late pacer, as the lab's qlog shows
    (10 packets over 125 ms)."""
    plain, crypto, server = _first_response(0.3, lab=False)
    assert "ping" not in [k for _, k, _ in crypto]
    assert server["handshake_ptos"] >= 1 and len(set(plain)) == 1  # no sample: one burst
    paced, crypto, server = _first_response(0.3, lab=True)
    client = [(k, size) for n, k, size in crypto if n == "c"]
    assert client[:2] == [("client_initial", 1280)] * 2
    assert [k for n, k, _ in crypto if n == "s"].count("ping") == 1
    assert ("ack", 1280) in client  # the PING's ACK, padded: it is an Initial
    assert ("client_finished", CHROMIUM_FINISHED_BYTES + UDP_IP_HEADER_BYTES) in client  # no Initial in it
    assert server["srtt_s"] == pytest.approx(0.3, rel=0.03)
    interval = 1252 * 0.3 / 12_520  # max_datagram / (initial window / srtt): about 30 ms
    gaps = [b - a for a, b in zip(paced, paced[1:])]
    pairs = [g for g in gaps if g > 0.001]
    assert len(pairs) >= 3 and all(g == pytest.approx(interval + 0.0007, rel=0.05) for g in pairs)
    assert len(paced) - len(pairs) > len(pairs)  # most wake-ups send two
    assert paced[-1] - paced[0] > 0.25 * 0.3  # spread over a quarter of the round trip and more


# -- determinism -----------------------------------------------------------------------
def _traced_run(seed):
    sim, _, conn = make(
        seed,
        rtt_s=0.05,
        bandwidth_bps=5e6,
        loss="ge:0.05,0.3",
        jitter=Jitter(prob=0.1, max_s=0.01),
        trace=True,
        cc="cubic",
        quic={"handshake": True, "ack_delay_s": 0.001},
    )
    Receiver(conn.server)
    for k in range(3):
        conn.client.write(conn.client.open_stream(), pattern(200_000, k), end=True)
    sim.run()
    return sim.trace, conn.stats()


def test_same_seed_same_trace_and_stats():
    trace1, stats1 = _traced_run(11)
    trace2, stats2 = _traced_run(11)
    assert trace1 == trace2 and stats1 == stats2
    trace3, _ = _traced_run(12)
    assert trace3 != trace1


def test_sender_keeps_only_unacknowledged_bytes_rfc9000_13_3():
    """RFC 9000 section 13.3: only unacknowledged STREAM data is ever sent again, so the
    sender keeps no acknowledged byte: a 2 MB stream written 20 KB per 0.1 s (well below what
    the 10 Mbit/s link carries through the loss) holds at most a few writes at any time, not
    the 2 MB, and nothing once all is acknowledged; what arrives is still every byte, in
    order, through 0.5% loss."""
    sim, _, conn = make(3, rtt_s=0.05, bandwidth_bps=10e6, loss=0.005)
    rx = Receiver(conn.client)
    sid = conn.server.open_stream(unidirectional=True)
    body = pattern(2_000_000, salt=5)
    chunk = 20_000
    for k in range(0, len(body), chunk):
        sim.call_at(0.2 + k / chunk * 0.1, conn.server.write, sid, body[k : k + chunk], k + chunk >= len(body))
    stream = conn.server._send_streams[sid]
    held = []

    def sample():
        held.append(len(stream.buf) + stream.later_bytes)  # sent and unacknowledged, and not yet sent
        assert held[-1] == stream.written - stream.buf_offset and stream.buf_offset <= stream.acked_prefix
        if sim.pending > 1:
            sim.call_later(0.01, sample)

    sim.call_at(0.0, sample)
    sim.run()
    assert rx.data[sid] == body and conn.stats()["packets_lost"] > 0
    assert max(held) <= 5 * chunk <= len(body) // 20
    assert len(stream.buf) == 0 and not stream.later and stream.buf_offset == len(body)
