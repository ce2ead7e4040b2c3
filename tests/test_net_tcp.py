"""Physics of the TCP model (simulator/net/tcp.py): throughput, loss recovery, timers, ordering.

Every test drives a ``TcpConnection`` over a ``Path`` in virtual time and checks what the
RFCs say must happen; none reads the wall clock.
"""

from __future__ import annotations

import math

import pytest

from simulator.engine import Simulator
from simulator.net import native
from simulator.net.link import DropList, Jitter, Path
from simulator.net.tcp import TcpConnection
from simulator.net.transport import TransportConfig

MSS = 1460


def native_implementations():
    """The TCP model's implementations built here (the C twin when built, and the reference)."""
    return list(native.IMPLEMENTATIONS)


def _sink(endpoint, log: list) -> None:
    endpoint.on_data = lambda sid, data, end, t: log.append((t, sid, data, end))


def _bulk(
    size_bytes: int,
    *,
    rtt_s: float,
    bandwidth_bps: float | None,
    queue_bytes: int | None,
    loss=None,
    cc: str = "reno",
    seed: int = 1,
    until_s: float | None = None,
):
    """Client sends ``size_bytes`` on one stream at time 0; returns (sim, conn, deliveries)."""
    sim = Simulator(seed)
    path = Path(sim, rtt_s=rtt_s, bandwidth_bps=bandwidth_bps, queue_bytes=queue_bytes, loss=loss, reverse_loss=0)
    conn = TcpConnection(sim, path, TransportConfig(cc=cc), cwnd_log=True)
    log: list = []
    _sink(conn.server, log)
    sid = conn.client.open_stream(unidirectional=True)
    conn.client.write(sid, bytes(size_bytes), end=True)
    sim.run(until_s=until_s)
    return sim, conn, log


# --------------------------------------------------------------------------------------
# Throughput


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_bulk_transfer_fills_the_bottleneck(cc):
    """Without random loss a long transfer keeps a 1-BDP drop-tail bottleneck busy.

    RFC 5681 section 3: once slow start has found the path's capacity, congestion
    avoidance probes with one MSS per RTT and halves on a queue overflow; a queue of
    one BDP absorbs the halving (cwnd/2 >= BDP), so the link never idles and goodput
    is the payload share of the bandwidth (1460/1500).  Slow start's overshoot into
    the queue costs a burst of drops (SACK repairs them in one recovery; NewReno without
    it, one hole per RTT and then an RTO); over a 40 MB transfer (32 s at 10 Mbit/s) that
    start-up is amortised and the whole transfer stays within 10% of the bottleneck.
    """
    bw, rtt = 10e6, 0.05
    size = 40_000_000
    sim, conn, log = _bulk(size, rtt_s=rtt, bandwidth_bps=bw, queue_bytes=int(bw * rtt / 8), cc=cc)
    assert sum(len(d) for _, _, d, _ in log) == size
    assert log[-1][3] is True
    # Time at which the first half of the bytes had been delivered.
    delivered = 0
    half_s = None
    for t, _, d, _ in log:
        delivered += len(d)
        if half_s is None and delivered >= size // 2:
            half_s, half_bytes = t, delivered
    end_s = log[-1][0]
    steady = (size - half_bytes) * 8 / (end_s - half_s) / bw
    whole = size * 8 / end_s / bw
    assert steady >= 0.9, steady
    assert steady <= 1460 / 1500 + 1e-6  # the payload share is the ceiling
    assert whole >= 0.9, whole
    st = conn.stats()
    assert st["c2s_bytes_delivered"] == size


@pytest.mark.parametrize("p", [0.01, 0.02])
def test_reno_throughput_follows_mathis(p):
    """Reno under random loss: throughput ~ MSS/RTT * 1.22/sqrt(p) (Mathis et al. 1997).

    The model holds for the fast-retransmit regime of RFC 5681 section 3.2; delayed ACKs
    (constant sqrt(3/4)) and timeouts pull it down, so the check is a factor of 2 on
    the mean over three seeds of 100 simulated seconds.  Bandwidth does not limit.
    """
    rtt = 0.1
    ratios = []
    for seed in (1, 2, 3):
        duration = 100.0
        sim, conn, log = _bulk(
            int(10e6 / 8 * duration),
            rtt_s=rtt,
            bandwidth_bps=100e6,
            queue_bytes=None,
            loss=p,
            seed=seed,
            until_s=duration,
        )
        rate = sum(len(d) for _, _, d, _ in log) / duration
        ratios.append(rate / (MSS / rtt * 1.22 / math.sqrt(p)))
        st = conn.stats()
        assert st["c2s_fast_retransmits"] > 50  # losses are mostly repaired by fast retransmit
    mean = sum(ratios) / len(ratios)
    assert 0.5 <= mean <= 2.0, ratios


def test_slow_start_doubles_cwnd_each_rtt():
    """RFC 5681 section 3.1 with RFC 3465 (L = 2 SMSS): cwnd doubles per RTT from IW = 10.

    Ten segments leave at time 0; five delayed ACKs (one per two segments) each add
    2 SMSS, so after round k the window is 10 * 2**k segments.
    """
    rtt = 0.1
    sim, conn, log = _bulk(3_000_000, rtt_s=rtt, bandwidth_bps=None, queue_bytes=None)
    cwnd_log = conn.client.cwnd_log
    assert cwnd_log

    def cwnd_at(t):
        value = 10 * MSS
        for when, cwnd in cwnd_log:
            if when > t:
                break
            value = cwnd
        return value

    rounds = [cwnd_at(k * rtt + rtt / 2) / MSS for k in range(5)]
    assert rounds[0] == pytest.approx(10)
    for a, b in zip(rounds, rounds[1:]):
        assert b / a == pytest.approx(2.0, rel=0.05), rounds
    assert conn.stats()["packets_lost"] == 0


@pytest.mark.parametrize("implementation", native_implementations())
def test_linux_cubic_hystart_leaves_slow_start_before_a_deep_queue_holds_the_transfer(implementation):
    """Linux CUBIC's HyStart (net/ipv4/tcp_cubic.c, hystart_detect=3): once the window holds
    16 segments, a round's RTT samples above the minimum by an eighth of it (at least 4 ms)
    set ssthresh to the window, so slow start ends with nothing lost.  Behind a deep
    drop-tail queue at 20 ms and 2 Mbit/s the queue then stays far below what a window
    doubling every round puts there, and the link stays as busy (the transfer takes as
    long).  Reno has no HyStart: the option leaves it alone."""

    def bulk(cc: str, hystart: bool):
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.02, bandwidth_bps=2e6, queue_bytes=None, reverse_loss=0)
        config = TransportConfig(cc=cc, cwnd_in_packets=True, hystart=hystart)
        conn = TcpConnection(sim, path, config, implementation=implementation)
        log: list = []
        _sink(conn.server, log)
        conn.client.write(conn.client.open_stream(unidirectional=True), bytes(1_000_000), end=True)
        sim.run()
        assert conn.stats()["packets_lost"] == 0
        return conn.client.cc.ssthresh_bytes / MSS, path.forward.stats.max_queue_bytes, log[-1][0]

    plain_ssthresh, plain_queue, plain_end_s = bulk("cubic", False)
    ssthresh, queue, end_s = bulk("cubic", True)
    assert plain_ssthresh == math.inf and 16 <= ssthresh <= 64
    assert queue < plain_queue / 4
    assert end_s == pytest.approx(plain_end_s, rel=0.01)
    assert bulk("reno", True) == bulk("reno", False)


def test_linux_hystart_ack_train_and_delay_tests_and_a_timeout_starts_afresh():
    """tcp_cubic.c's two tests on one round's ACKs (hystart_update): ACKs each within 2 ms
    of the last for longer than (min RTT + 1 ms) / 2 since the round began (the window
    fills the path), or the round's minimum from its 8th sample on above the min RTT by
    max(min RTT / 8, 4 ms) (a queue); neither below 16 segments or out of slow start.  A
    timeout (TCP_CA_Loss: bictcp_reset) clears the minimum RTT and the finding."""
    from simulator.net.cc import Cubic, LinuxHyStart

    cc = Cubic(MSS)
    train = LinuxHyStart()
    assert not train.sample(0.0, 0.020, 1, 100, 8, cc)  # below the low window: only the min RTT
    t = 1.0
    found = [train.sample(t + i * 0.001, 0.020, 10 + i, 100, 20, cc) for i in range(12)]
    assert found.index(True) == 11  # 11 ms past the round's start > (20 + 1) / 2 ms
    spaced = LinuxHyStart()
    spaced.sample(0.0, 0.020, 1, 100, 8, cc)
    # ACKs 3 ms apart are no train.  A round at the minimum RTT, then one whose every sample
    # is 5 ms above it (the threshold is max(20 / 8, 4) = 4 ms): found at that round's 9th.
    first = [spaced.sample(1.0 + i * 0.003, 0.020, 10 + i, 100, 20, cc) for i in range(10)]
    second = [spaced.sample(1.1 + i * 0.003, 0.025, 101 + i, 200, 24, cc) for i in range(10)]
    assert not any(first) and second.index(True) == 8
    # the same second round 3 ms above the minimum is no queue
    low = LinuxHyStart()
    low.sample(0.0, 0.020, 1, 100, 8, cc)
    assert not any(low.sample(1.0 + i * 0.003, 0.023, 101 + i, 200, 24, cc) for i in range(20))
    spaced.restart(2.0, 200)
    assert not spaced.found and spaced.delay_min_s == 0.0


# --------------------------------------------------------------------------------------
# Data integrity and ordering


def _merge_runs(chunks):
    """Concatenate consecutive chunks of the same stream: [(sid, bytes)]."""
    out: list[list] = []
    for sid, data in chunks:
        if out and out[-1][0] == sid:
            out[-1][1] += data
        else:
            out.append([sid, bytearray(data)])
    return [(sid, bytes(data)) for sid, data in out]


def _exchange(seed: int, loss, jitter: Jitter | None = None):
    """Both endpoints write interleaved streams at random instants; returns what was sent and got."""
    sim = Simulator(seed)
    path = Path(sim, rtt_s=0.04, bandwidth_bps=20e6, queue_bytes=60_000, loss=loss, jitter=jitter)
    conn = TcpConnection(sim, path)
    rng = sim.rng("test/writes")
    sent = {conn.client: [], conn.server: []}  # writer -> [(sid, data)] in write order
    got = {conn.client: [], conn.server: []}  # reader -> [(t, sid, data, end)]
    _sink(conn.client, got[conn.client])
    _sink(conn.server, got[conn.server])

    bidi = [conn.client.open_stream() for _ in range(4)]
    streams = {
        conn.client: bidi + [conn.client.open_stream(unidirectional=True)],
        conn.server: bidi[:2] + [conn.server.open_stream(unidirectional=True) for _ in range(2)],
    }

    def do_write(ep, sid, data, end):
        ep.write(sid, data, end)
        sent[ep].append((sid, data))

    for ep, sids in streams.items():
        for sid in sids:
            t = 0.0
            for i in range(rng.randint(3, 12)):
                t += rng.choice([0.0, 0.0, rng.random() * 0.3])
                sim.call_at(t, do_write, ep, sid, rng.randbytes(rng.randint(1, 9000)), False)
            last = b"" if rng.random() < 0.3 else rng.randbytes(rng.randint(1, 3000))
            sim.call_at(t + rng.random() * 0.2, do_write, ep, sid, last, True)
    sim.run()
    return conn, sent, got


def _check_integrity(conn, sent, got):
    for writer, reader in ((conn.client, conn.server), (conn.server, conn.client)):
        calls = got[reader]
        # Exactly once and in the connection's byte order (all streams together).
        assert _merge_runs((sid, d) for _, sid, d, _ in calls) == _merge_runs(sent[writer])
        times = [t for t, _, _, _ in calls]
        assert times == sorted(times)
        # One end per stream, on its last call.
        ends = {}
        for _, sid, _, end in calls:
            assert sid not in ends, f"data on stream {sid} after its end"
            if end:
                ends[sid] = True
        assert set(ends) == {sid for sid, _ in sent[writer]}
    st = conn.stats()
    assert st["bytes_delivered"] == sum(len(d) for w in sent.values() for _, d in w)


@pytest.mark.parametrize("loss", [0.05, "ge:0.05,0.3"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_byte_arrives_once_in_order(loss, seed):
    """RFC 9293 section 3.10.7.4: the receiver delivers the byte stream exactly once, in order.

    Interleaved streams in both directions, under Bernoulli loss and heavy Gilbert-Elliott
    bursts (mean burst 3.3 packets, ~14 % loss, ACKs lost too).
    """
    conn, sent, got = _exchange(seed, loss)
    _check_integrity(conn, sent, got)
    assert conn.stats()["packets_lost"] > 0


def test_integrity_with_reordering():
    """Jitter reorders packets: duplicate ACKs without loss (RFC 5681 section 3.2) stay harmless."""
    conn, sent, got = _exchange(4, 0.02, jitter=Jitter(prob=0.1, max_s=0.03))
    _check_integrity(conn, sent, got)


def test_lost_segment_blocks_other_streams():
    """Head-of-line blocking: one lost segment holds back later bytes of every stream.

    RFC 9293 delivers one ordered byte stream, so stream B and C bytes sent after the
    lost stream-A segment reach the application only when its fast retransmission
    (RFC 5681 section 3.2, on the third duplicate ACK) arrives.
    """
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=100_000)
    path.forward.loss = DropList([0])
    conn = TcpConnection(sim, path)
    log: list = []
    _sink(conn.server, log)
    arrivals: list = []
    path.forward.observers.append(lambda pkt: arrivals.append(pkt))
    a, b, c = (conn.client.open_stream() for _ in range(3))
    conn.client.write(a, b"A" * MSS, end=True)
    conn.client.write(b, b"B" * 5 * MSS, end=True)
    conn.client.write(c, b"C" * 5 * MSS, end=True)
    sim.run()

    first_seq0, retrans = [p for p in arrivals if p.payload.seq == 0]
    assert first_seq0.lost and not retrans.lost
    assert retrans.payload.retransmitted
    repaired_s = retrans.arrived_s
    # Segments of B and C arrived long before the repair, but are delivered at the repair.
    early = [p.arrived_s for p in arrivals if p.payload.seq > 0 and p.sent_s == 0.0]
    assert len(early) == 9 and max(early) < repaired_s - 0.05
    assert {sid for _, sid, _, _ in log} == {a, b, c}
    for t, sid, _, _ in log:
        assert t == pytest.approx(repaired_s)
    st = conn.stats()
    assert st["fast_retransmits"] == 1 and st["rtos"] == 0 and st["packets_lost"] == 1
    assert st["max_receive_buffer_bytes"] == 10 * MSS


def test_newreno_partial_ack_repairs_second_hole_without_timeout():
    """RFC 6582 section 3.2 step 4: a partial ACK retransmits the next hole and stays in recovery.

    Two segments of one window are lost; one fast retransmit, then the partial ACK
    triggers the second retransmission; no RTO.
    """
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=100_000)
    path.forward.loss = DropList([2, 6])
    conn = TcpConnection(sim, path)
    log: list = []
    _sink(conn.server, log)
    sid = conn.client.open_stream()
    conn.client.write(sid, bytes(range(256)) * 100, end=True)
    sim.run()
    st = conn.stats()
    assert st["fast_retransmits"] == 1
    assert st["packets_lost"] == 2
    assert st["rtos"] == 0
    assert b"".join(d for _, _, d, _ in log) == bytes(range(256)) * 100


# --------------------------------------------------------------------------------------
# SACK (RFC 2018) and SACK-based loss recovery (RFC 6675, RFC 6937, RFC 8985's loss marks)


def _dropped_run(
    drops,
    *,
    sack: bool = True,
    timestamps: bool = True,
    size: int = 30 * MSS,
    rtt_s: float = 0.1,
    bandwidth_bps: float | None = None,
    cc: str = "reno",
    implementation: str | None = None,
):
    """``size`` bytes from the client with the forward link's packets ``drops`` (send indices)
    lost; every data packet and every ACK as it arrived (or was lost), in order."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=rtt_s, bandwidth_bps=bandwidth_bps, queue_bytes=None)
    path.forward.loss = DropList(drops)
    conn = TcpConnection(
        sim, path, TransportConfig(cc=cc, sack=sack, timestamps=timestamps), implementation=implementation
    )
    data: list = []
    acks: list = []
    path.forward.observers.append(data.append)
    path.reverse.observers.append(acks.append)
    log: list = []
    _sink(conn.server, log)
    payload = bytes(range(256)) * (size // 256) + b"!" * (size % 256)
    conn.client.write(conn.client.open_stream(unidirectional=True), payload, end=True)
    sim.run()
    assert b"".join(d for _, _, d, _ in log) == payload
    return sim, conn, data, acks


def test_rfc2018_section4_the_block_of_the_latest_segment_comes_first():
    """RFC 2018 section 4: the first SACK block holds the segment that triggered the ACK, the
    others repeat the most recently reported blocks.  The first window's segments 2 and 5 are
    lost; 3, 4 and 6-9 arrive in order, each out of order, each ACKed at once (RFC 5681 4.2)."""
    _, _, _, acks = _dropped_run({2, 5})
    first = [(p.payload.ack // MSS, tuple((a // MSS, b // MSS) for a, b in p.payload.sack)) for p in acks[:7]]
    assert first == [
        (2, ()),  # the delayed ACK of segments 0 and 1
        (2, ((3, 4),)),
        (2, ((3, 5),)),
        (2, ((6, 7), (3, 5))),  # segment 6 opens a new block: it goes first
        (2, ((6, 8), (3, 5))),
        (2, ((6, 9), (3, 5))),
        (2, ((6, 10), (3, 5))),
    ]


@pytest.mark.parametrize("timestamps,most", [(True, 3), (False, 4)])
def test_rfc2018_section3_at_most_three_blocks_beside_timestamps_four_without(timestamps, most):
    """RFC 2018 section 3: 40 bytes of TCP options hold 4 blocks, 3 beside the 10-byte
    timestamp option (RFC 7323).  Every other segment of a window lost: every block reported
    lies above the cumulative ACK, blocks are disjoint, the latest first."""
    _, _, _, acks = _dropped_run(set(range(1, 20, 2)), timestamps=timestamps)
    counts = [len(p.payload.sack) for p in acks]
    assert max(counts) == most
    for p in acks:
        blocks = p.payload.sack
        assert all(p.payload.ack < left < right for left, right in blocks)
        spans = sorted(blocks)
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("implementation", native_implementations())
def test_rfc6675_section5_two_holes_resent_within_one_rtt_of_the_third_dupack(implementation):
    """RFC 6675 section 5: with SACK every hole the scoreboard shows lost is resent in the
    same recovery, within one RTT of the third duplicate ACK; NewReno without SACK (RFC 6582)
    learns of the second hole only from the partial ACK, one RTT later."""

    def resends(sack):
        _, conn, data, acks = _dropped_run({2, 5}, sack=sack, bandwidth_bps=10e6, implementation=implementation)
        dup = [p.arrived_s for p in acks if p.payload.ack == 2 * MSS]
        third_dupack_s = dup[3]  # dup[0] is the first ACK of 2 * MSS
        again = {p.payload.seq // MSS: p.sent_s for p in data if p.payload.retransmitted and not p.lost}
        assert conn.stats()["rtos"] == 0 and conn.stats()["fast_retransmits"] == 1
        return third_dupack_s, again

    third, again = resends(True)
    assert set(again) == {2, 5}
    assert max(again.values()) - third < 0.1
    third, again = resends(False)
    assert set(again) == {2, 5} and again[5] - third > 0.1


def test_rfc6675_section5_one_congestion_reduction_per_recovery_episode(monkeypatch):
    """RFC 6675 section 5 (and RFC 5681 section 3.2): the holes of one window, however many,
    cost one reduction: ssthresh is cut once, and at the end of the recovery cwnd = ssthresh
    (RFC 6937 section 3)."""
    from simulator.net.tcp_endpoint import TcpEndpoint

    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=None)
    path.forward.loss = DropList({2, 4, 6, 8})
    conn = TcpConnection(sim, path, TransportConfig(), implementation="python", cwnd_log=True)
    cuts: list = []
    cc = conn.client.cc
    congestion_event = cc.on_congestion_event
    cc.on_congestion_event = lambda now_s, flight: (
        cuts.append((now_s, cc.cwnd_bytes)),
        congestion_event(now_s, flight),
    )
    exits: list = []
    leave = TcpEndpoint._leave_sack_recovery
    monkeypatch.setattr(
        TcpEndpoint,
        "_leave_sack_recovery",
        lambda self: (leave(self), exits.append((self.cc.cwnd_bytes, self.cc.ssthresh_bytes))),
    )
    conn.client.write(conn.client.open_stream(unidirectional=True), bytes(60 * MSS), end=True)
    sim.run()
    st = conn.stats()
    assert st["rtos"] == 0 and st["fast_retransmits"] == 1 and st["c2s_packets_lost"] == 4
    assert len(cuts) == 1
    (cwnd_at_loss,) = [w for _, w in cuts]
    assert exits == [(cwnd_at_loss / 2, cwnd_at_loss / 2)]


def test_rfc6937_prr_sends_in_proportion_while_pipe_exceeds_ssthresh():
    """RFC 6937 section 3: while pipe > ssthresh, PRR sends about ssthresh / RecoverFS of what
    is delivered (half, for Reno), so the window comes down over one RTT instead of a pause
    followed by a burst: in the recovery no ACK lets more than 2 segments out, and the
    segments sent before the first hole is repaired are about half those delivered."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=None)
    path.forward.loss = DropList({30})
    conn = TcpConnection(sim, path, TransportConfig(), implementation="python")
    per_ack: list = []
    client = conn.client
    on_ack = client._on_ack

    def counting(packet):
        before = client.segments_sent
        on_ack(packet)
        if client._in_recovery:
            per_ack.append(client.segments_sent - before)

    client._deliver_ack = counting
    conn.server._deliver_ack = counting
    conn.client.write(conn.client.open_stream(unidirectional=True), bytes(200 * MSS), end=True)
    sim.run()
    assert conn.stats()["fast_retransmits"] == 1 and conn.stats()["rtos"] == 0
    assert per_ack and max(per_ack) <= 2
    delivered = len(per_ack) - 1  # every ACK in the recovery but the one ending it delivered one
    assert sum(per_ack) == pytest.approx(delivered / 2 + 1, abs=2)


@pytest.mark.parametrize("implementation", native_implementations())
def test_rfc8985_section6_2_a_lost_retransmission_is_resent_without_a_timeout(implementation):
    """A retransmission lost too: RFC 6675 alone waits for the RTO; RACK (RFC 8985 section
    6.2, as Linux runs it in recovery) sees a segment sent after it delivered and resends it
    again at once.  Without SACK the same double loss costs a timeout."""
    _, _, data, _ = _dropped_run({2, 5}, bandwidth_bps=10e6, implementation=implementation)
    original, resent = sorted(p.link_seq for p in data if p.payload.seq == 2 * MSS)
    _, conn, data, _ = _dropped_run({2, 5, resent}, bandwidth_bps=10e6, implementation=implementation)
    st = conn.stats()
    assert st["rtos"] == 0 and st["fast_retransmits"] == 1
    assert [p.lost for p in data if p.payload.seq == 2 * MSS] == [True, True, False]
    _, conn, _, _ = _dropped_run({2, 5, resent}, sack=False, bandwidth_bps=10e6, implementation=implementation)
    assert conn.stats()["rtos"] >= 1


@pytest.mark.parametrize("implementation", native_implementations())
def test_rfc8985_section6_2_a_hole_behind_a_later_segment_is_resent_before_the_rto(implementation):
    """RACK (RFC 8985 section 6.2) outside a recovery: one SACKed segment is enough when it was
    sent at least the reordering window (min RTT / 4) after the hole.  A lone write is lost,
    the next one, 50 ms later on a 100 ms path, arrives: its SACK (100 ms after it left)
    shows the first lost, and it is resent then, at 0.65 s, where the RTO would fire at
    SRTT + 200 ms after 0.5 s.  Without SACK a single duplicate ACK says nothing: a timeout."""

    def run(sack):
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.1, bandwidth_bps=None, queue_bytes=None)
        path.forward.loss = DropList({1})
        conn = TcpConnection(sim, path, TransportConfig(sack=sack), implementation=implementation)
        sends: list = []
        path.forward.observers.append(sends.append)
        log: list = []
        _sink(conn.server, log)
        sid = conn.client.open_stream()
        conn.client.write(sid, b"a" * 500)  # an RTT sample first
        sim.call_at(0.5, conn.client.write, sid, b"b" * 500)  # lost
        sim.call_at(0.55, conn.client.write, sid, b"c" * 500, True)
        sim.run()
        assert b"".join(d for _, _, d, _ in log) == b"a" * 500 + b"b" * 500 + b"c" * 500
        return conn.stats(), [p.sent_s for p in sends if p.payload.seq == 500]

    stats, times = run(True)
    assert stats["rtos"] == 0 and stats["fast_retransmits"] == 1
    assert times == [0.5, pytest.approx(0.65)]
    stats, times = run(False)
    assert stats["rtos"] == 1 and times[1] > 0.8


def test_sack_goodput_at_one_percent_loss_through_a_bdp_queue_beats_newreno():
    """1% random loss on a 10 Mbit/s, 100 ms path with a one-BDP drop-tail queue (the lab's
    loss condition): slow start still overflows the queue, so a window holds many holes.
    SACK (RFC 6675) repairs them in one recovery where NewReno (RFC 6582) takes an RTT per
    hole and times out: over eight seeds SACK finishes 2 MB sooner in the mean, and times
    out less."""

    def run(seed, sack):
        sim = Simulator(seed)
        path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=125_000, loss=0.01, reverse_loss=0)
        conn = TcpConnection(sim, path, TransportConfig(sack=sack))
        done: list = []
        conn.server.on_data = lambda sid, data, end, t: done.append(t)
        conn.client.write(conn.client.open_stream(unidirectional=True), bytes(2_000_000), end=True)
        sim.run()
        return done[-1], conn.stats()["rtos"]

    runs = {sack: [run(seed, sack) for seed in range(1, 9)] for sack in (True, False)}
    mean_s = {sack: sum(t for t, _ in r) / len(r) for sack, r in runs.items()}
    rtos = {sack: sum(n for _, n in r) for sack, r in runs.items()}
    assert mean_s[True] < mean_s[False], runs
    assert rtos[True] < rtos[False], runs


@pytest.mark.parametrize("p", [0.01, 0.03])
def test_sack_throughput_follows_mathis(p):
    """SACK recovery under random loss (the fast-retransmit regime of Mathis et al. 1997):
    throughput ~ MSS/RTT * 1.22/sqrt(p) within a factor 2, over four seeds of 60 s, with
    SACK's recovery doing the repairs (RFC 6675).  Without a queue to overflow a window
    rarely holds two holes, and NewReno's window inflation then sends a few more segments
    per recovery than PRR (RFC 6937), so there SACK is no faster than NewReno."""
    rtt = 0.1
    rates = []
    for seed in (1, 2, 3, 4):
        sim, conn, log = _bulk(
            int(100e6 / 8 * 60), rtt_s=rtt, bandwidth_bps=100e6, queue_bytes=None, loss=p, seed=seed, until_s=60.0
        )
        rates.append(sum(len(d) for _, _, d, _ in log) / 60.0 / (MSS / rtt * 1.22 / math.sqrt(p)))
        assert conn.stats()["c2s_fast_retransmits"] > 30
    assert 0.5 <= sum(rates) / len(rates) <= 2.0, rates


# --------------------------------------------------------------------------------------
# Timers


def test_rto_backs_off_exponentially():
    """RFC 6298 (5.5): each retransmission timeout doubles the RTO.

    One RTT sample first (a lone segment, ACK delayed by 25 ms: 0.125 s), so
    RTO = SRTT + 4 RTTVAR = 0.125 + 4 * 0.0625 = 0.375 s (2.2).  Then a segment and its
    next four retransmissions are dropped: they leave 0.375, 0.75, 1.5, 3 and 6 s apart.
    """
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1)
    path.forward.loss = DropList(range(1, 6))
    conn = TcpConnection(sim, path)
    log: list = []
    _sink(conn.server, log)
    sends: list = []
    path.forward.observers.append(lambda pkt: sends.append(pkt))
    sid = conn.client.open_stream()
    conn.client.write(sid, b"x" * 1000)
    sim.call_at(1.0, conn.client.write, sid, b"y" * 1000, True)
    sim.run()

    times = [p.sent_s for p in sends if p.payload.seq == 1000]
    assert len(times) == 6
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[0] == pytest.approx(0.375)
    for a, b in zip(gaps, gaps[1:]):
        assert b == pytest.approx(2 * a)
    st = conn.stats()
    assert st["rtos"] == 5 and st["packets_lost"] == 5
    assert log[-1][2] == b"y" * 1000 and log[-1][3] is True
    # Karn's rule (RFC 6298 section 3): the ACK of a retransmitted segment is no RTT sample,
    # so SRTT is still the first sample and the backed-off RTO stays until a fresh one.
    assert conn.client.rtt.srtt_s == pytest.approx(0.125)
    assert conn.client._rto_backoff == 32


def test_delayed_ack_timer_and_ack_every_second_segment():
    """RFC 5681 section 4.2: ACK every second full segment, else within max_ack_delay."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1)
    conn = TcpConnection(sim, path)
    acks: list = []
    path.reverse.observers.append(lambda pkt: acks.append((pkt.sent_s, pkt.payload.ack)))
    sid = conn.client.open_stream()
    conn.client.write(sid, bytes(3 * MSS), end=True)  # three segments
    sim.run()
    assert acks[0] == (pytest.approx(0.05), 2 * MSS)  # after the second segment
    assert acks[1] == (pytest.approx(0.05 + 0.025), 3 * MSS)  # the odd one, delayed
    assert len(acks) == 2


# --------------------------------------------------------------------------------------
# Application interface


def test_same_instant_writes_share_a_segment():
    """Writes at one virtual instant are coalesced: one packet of payload + 40 B header."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.05)
    conn = TcpConnection(sim, path)
    sizes: list = []
    path.forward.observers.append(lambda pkt: sizes.append(pkt.size_bytes))
    s1, s2 = conn.client.open_stream(), conn.client.open_stream()
    assert (s1, s2) == (0, 4)  # RFC 9000 section 2.1 numbering
    assert conn.server.open_stream(unidirectional=True) == 3
    conn.client.write(s1, b"a" * 100)
    conn.client.write(s2, b"b" * 200, end=True)
    conn.client.write(s1, b"c" * 300, end=True)
    sim.run()
    assert sizes == [600 + 40]


def test_stream_acked_reports_cumulative_offsets():
    """on_stream_acked: the first N bytes of a stream are acknowledged (from the cumulative ACK)."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.05, loss=0.05)
    conn = TcpConnection(sim, path)
    reports: dict = {}

    def on_acked(sid, offset):
        assert offset >= reports.get(sid, 0)
        reports[sid] = offset

    conn.client.on_stream_acked = on_acked
    s1, s2 = conn.client.open_stream(), conn.client.open_stream()
    for i in range(20):
        sim.call_at(i * 0.01, conn.client.write, s1, bytes(3000))
        sim.call_at(i * 0.01, conn.client.write, s2, bytes(700))
    sim.call_at(0.3, conn.client.write, s1, b"", True)
    sim.call_at(0.3, conn.client.write, s2, b"", True)
    sim.run()
    assert reports == {s1: 60_000, s2: 14_000}


def test_handshake_costs_one_rtt():
    """handshake=True: SYN / SYN-ACK before data, so the first bytes arrive at 1.5 RTT, not 0.5.

    A lost SYN is retransmitted after the initial 1 s RTO (RFC 6298 (2.1)).
    """

    def first_delivery(handshake, drop=()):
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.1)
        path.forward.loss = DropList(drop)
        conn = TcpConnection(sim, path, handshake=handshake)
        log: list = []
        _sink(conn.server, log)
        sid = conn.client.open_stream()
        conn.client.write(sid, b"GET /", end=True)
        sim.run()
        return log[0][0], conn

    assert first_delivery(False)[0] == pytest.approx(0.05)
    t, conn = first_delivery(True)
    assert t == pytest.approx(0.15)
    assert conn.client.rtt.min_rtt_s == pytest.approx(0.1)  # the SYN exchange is an RTT sample
    t, conn = first_delivery(True, drop=[0])
    assert t == pytest.approx(1.15)
    assert conn.stats()["rtos"] == 1


@pytest.mark.parametrize("implementation", native_implementations())
def test_on_established_fires_once_when_each_end_completes_the_handshake_rfc9293_section3_5(implementation):
    """RFC 9293 section 3.5: the client is ESTABLISHED when the SYN-ACK arrives (one RTT),
    the server when the client's ACK does (1.5 RTT); each end tells its application once
    (``on_established``), a lost SYN-ACK's resend aside."""
    for drop in ((), (0,)):
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.1)
        path.reverse.loss = DropList(drop)  # the server's SYN-ACK, then the resend
        conn = TcpConnection(sim, path, handshake=True, implementation=implementation)
        seen: list = []
        for end in (conn.client, conn.server):
            end.on_established = lambda end=end: seen.append((end.is_client, round(sim.now, 6)))
        sim.run()
        client_s = 0.1 if not drop else seen[0][1]
        assert seen == [(True, client_s), (False, round(client_s + 0.05, 6))]
        assert client_s == pytest.approx(0.1) if not drop else client_s > 1.0


def test_stats_keys_and_segment_size():
    sim, conn, log = _bulk(100_000, rtt_s=0.05, bandwidth_bps=10e6, queue_bytes=None)
    st = conn.stats()
    for key in (
        "packets_sent",
        "packets_lost",
        "rtos",
        "fast_retransmits",
        "bytes_sent",
        "bytes_delivered",
        "acks_sent",
        "max_receive_buffer_bytes",
    ):
        assert key in st and f"c2s_{key}" in st and f"s2c_{key}" in st
    assert st["c2s_packets_sent"] == math.ceil(100_000 / MSS)
    assert st["bytes_delivered"] == 100_000
    assert conn.path.forward.stats.bytes_sent == 100_000 + 40 * st["c2s_packets_sent"]
    assert conn.path.reverse.stats.bytes_sent == 40 * st["c2s_acks_sent"]


# --------------------------------------------------------------------------------------
# Determinism


def _traced(seed):
    sim = Simulator(seed, trace=True)
    path = Path(sim, rtt_s=0.05, bandwidth_bps=5e6, queue_bytes=30_000, loss=0.02)
    conn = TcpConnection(sim, path, TransportConfig(cc="cubic"))
    log: list = []
    _sink(conn.server, log)
    _sink(conn.client, log)
    sid = conn.client.open_stream()
    conn.client.write(sid, bytes(300_000), end=True)
    sim.call_at(0.2, conn.server.write, sid, bytes(200_000), True)
    sim.run()
    return sim.trace, conn.stats(), [(t, s, len(d), e) for t, s, d, e in log]


def test_same_seed_same_trace_different_seed_differs():
    """Randomness comes only from sim.rng streams: a seed fixes every event."""
    a, b, c = _traced(7), _traced(7), _traced(8)
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]


# --------------------------------------------------------------------------------------
# The retransmission timer as Linux runs it, and spurious timeouts


def test_rto_formula_rfc6298_section2_with_linux_floor_on_the_variance_term():
    """RFC 6298 section 2: 1 s before a sample (2.1), SRTT = R and RTTVAR = R/2 on the
    first (2.2), then alpha 1/8, beta 1/4 (2.3).  Where Linux departs (``__tcp_set_rto``):
    its minimum (200 ms) floors the variance term, RTO = SRTT + max(4 RTTVAR, rto_min),
    instead of (2.4)'s max(rto_min, SRTT + 4 RTTVAR); and the ceiling is 120 s (2.5)."""
    from simulator.net.cc import RttEstimator

    rtt = RttEstimator(min_rto_s=0.2)
    assert rtt.rto_s() == 1.0  # (2.1)
    rtt.update(0.05)
    assert rtt.rto_s() == pytest.approx(0.05 + 0.2)  # 4 RTTVAR = 0.1 < 0.2: floored
    for _ in range(200):  # a steady 50 ms path
        rtt.update(0.05)
    assert rtt.rttvar_s < 1e-6
    assert rtt.rto_s() == pytest.approx(0.25)  # RFC 6298 (2.4) would give 0.2
    big = RttEstimator(min_rto_s=0.2)
    big.update(0.5)
    assert big.rto_s() == pytest.approx(0.5 + 4 * 0.25)  # the variance term above the floor
    huge = RttEstimator(min_rto_s=0.2)
    huge.update(100.0)
    assert huge.rto_s() == 120.0  # Linux TCP_RTO_MAX


@pytest.mark.parametrize("rtt_s", [0.02, 0.05, 0.1, 0.2, 0.3])
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_no_rto_on_a_loss_free_bulk_transfer(rtt_s, cc):
    """RFC 6298 section 5: the timer is for lost segments.  A bulk transfer through a
    drop-tail queue that never overflows loses nothing: slow start fills the queue and
    the RTT climbs, but the estimate (SRTT + at least 200 ms) keeps ahead of it, so no
    timeout fires and nothing is sent twice."""
    size = 2_000_000
    sim, conn, log = _bulk(size, rtt_s=rtt_s, bandwidth_bps=10e6, queue_bytes=2 * size, cc=cc)
    assert conn.path.forward.stats.packets_dropped == 0
    assert sum(len(d) for _, _, d, _ in log) == size
    st = conn.stats()
    assert st["rtos"] == 0 and st["packets_lost"] == 0 and st["spurious_rtos"] == 0


def _spike(implementation: str, timestamps: bool, spike_s: float = 1.0):
    """A client bulk transfer over a 100 ms path whose one-way delay grows by ``spike_s``
    at t = 1 s (a route change): nothing is lost, every segment is only late."""
    from simulator.net import native

    if implementation not in native.IMPLEMENTATIONS:
        pytest.skip("C twin not built")
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, queue_bytes=10_000_000, implementation="python")
    conn = TcpConnection(
        sim, path, TransportConfig(timestamps=timestamps), cwnd_log=True, implementation=implementation
    )
    log: list = []
    _sink(conn.server, log)
    before: dict = {}

    def spike():
        before["cwnd"] = conn.client.cc.cwnd_bytes
        before["ssthresh"] = conn.client.cc.ssthresh_bytes
        path.forward.delay_s += spike_s  # later packets only: no reordering

    sim.call_at(1.0, spike)
    sid = conn.client.open_stream(unidirectional=True)
    conn.client.write(sid, bytes(4_000_000), end=True)
    sim.run()
    return conn, log, before


@pytest.mark.parametrize("implementation", ["python", "c"])
@pytest.mark.parametrize("timestamps", [False, True])
def test_spurious_timeout_from_an_rtt_spike_is_detected_and_undone_rfc5682_section2(implementation, timestamps):
    """RFC 5682 section 2 (F-RTO): after a timeout the sender resends only the first
    unacknowledged segment; an ACK then covering segments sent before the timeout and never
    resent shows they were delayed, not lost, and the timeout spurious.  With timestamps
    (RFC 7323, on in Linux) the echo in the first ACK after the retransmission shows the
    same (RFC 3522, Eifel).  The response (Linux ``tcp_try_undo_loss``, RFC 4015) restores
    cwnd and ssthresh and resumes with new data: no go-back-N, each timeout resent one
    segment, and the transfer ends in slow start as it was."""
    conn, log, before = _spike(implementation, timestamps)
    st = conn.stats()
    assert conn.path.forward.stats.packets_dropped == 0
    assert sum(len(d) for _, _, d, _ in log) == 4_000_000
    assert st["rtos"] >= 1
    assert st["spurious_rtos"] >= 1 and st["undone_reductions"] >= 1
    assert st["packets_lost"] == st["rtos"]  # only the head, once per timeout
    assert math.isinf(conn.client.cc.ssthresh_bytes) and math.isinf(before["ssthresh"])
    # cwnd fell to one segment at the timeout and was back above its earlier size at once
    log_cwnd = conn.client.cwnd_log
    low = next(i for i, (t, w) in enumerate(log_cwnd) if t > 1.0 and w <= MSS)
    assert max(w for _, w in log_cwnd[low + 1 : low + 3]) >= before["cwnd"]


def test_a_real_loss_still_times_out_and_retransmits_rfc6298_section5():
    """RFC 6298 (5.4)-(5.6): when the last segment of a transfer is lost (no duplicate
    ACKs follow it), the timer fires one RTO after it was sent, the earliest unacknowledged
    segment is resent, the RTO doubles, and the retransmission's ACK completes the
    transfer.  Neither F-RTO nor the timestamp echo calls this timeout spurious: the ACK
    that advances answers the retransmission, so the window cut stands."""
    for timestamps in (True, False):
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.1)
        path.forward.loss = DropList([4])  # the fifth and last segment
        conn = TcpConnection(sim, path, TransportConfig(timestamps=timestamps))
        log: list = []
        _sink(conn.server, log)
        sends: list = []
        path.forward.observers.append(lambda pkt: sends.append(pkt))
        sid = conn.client.open_stream()
        conn.client.write(sid, bytes(5 * MSS), end=True)
        sim.run()
        st = conn.stats()
        assert st["rtos"] == 1 and st["packets_lost"] == 1
        assert st["spurious_rtos"] == 0 and st["undone_reductions"] == 0
        last = [p.sent_s for p in sends if p.payload.seq == 4 * MSS]
        assert len(last) == 2
        # Two ACKs at 0.1 s give samples of 0.1 s: SRTT 0.1, 4 RTTVAR 0.15, so Linux's
        # RTO is 0.1 + max(0.15, 0.2) = 0.3 s (RFC 6298 (2.4) would say 0.25), restarted by
        # the second ACK (5.3): the tail is resent at 0.4 s (5.4).
        assert last[0] == 0.0 and last[1] == pytest.approx(0.4)
        assert sum(len(d) for _, _, d, _ in log) == 5 * MSS and log[-1][3] is True
        assert conn.client.cc.cwnd_bytes < 10 * MSS  # the reduction stands
