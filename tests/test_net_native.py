"""The C twin of the TCP model's per-packet path (``simulator.net._tcp``) against the Python
reference (``net/link.py``, ``net/tcp.py``, ``net/cc.py``, ``net/writer.py``): the same
scenario run on each must give the same events (time and callback name, in order), the
same deliveries to the application, the same acknowledgement reports, the same packets on
each link and the same counters, windows and RTT estimates, exactly (floats compared by
their repr).  Every scenario also checks it exercised what it is named after (a loss
scenario had retransmissions, a handshake one RTOs), so a comparison cannot pass by
running nothing.
"""

from __future__ import annotations

import gc
import math
import random

import pytest

from simulator.engine import Simulator
from simulator.net import native
from simulator.net.link import DelayedPath, DropList, Jitter, Packet, Path, make_link
from simulator.net.tcp import TcpAck, TcpConnection, TcpControl, TcpSegment
from simulator.net.transport import TransportConfig
from simulator.net.writer import ResponseWriter, response_writer

pytestmark = pytest.mark.skipif(native.C is None, reason="the C extension simulator.net._tcp is not built")


def _run(
    implementation: str,
    seed: int,
    *,
    cc: str = "reno",
    loss=None,
    jitter=None,
    handshake: bool = False,
    connections: int = 3,
    queue_bytes: int | None = 60_000,
    bandwidth_bps: float | None = 10e6,
    drops=None,
    rtt_s: float = 0.05,
    sizes=(200_000, 50_000),
    engine: str | None = None,
    timestamps: bool = True,
    sack: bool = True,
    linux: bool = False,
    hystart: bool = False,
) -> dict:
    """Connections over one bottleneck (the first on the path itself, the others through a
    DelayedPath farther away), both directions writing on several streams at random times."""
    sim = Simulator(seed, trace=True, engine=engine)
    path = Path(
        sim,
        rtt_s=rtt_s,
        bandwidth_bps=bandwidth_bps,
        queue_bytes=queue_bytes,
        loss=loss,
        jitter=jitter,
        implementation=implementation,
    )
    if drops is not None:
        path.forward.loss, path.reverse.loss = DropList(drops[0]), DropList(drops[1])
    events: list = []
    packets: list = []
    for tag, link in (("fwd", path.forward), ("rev", path.reverse)):
        link.observers.append(
            lambda p, tag=tag: packets.append(
                (tag, p.size_bytes, p.link_seq, p.sent_s, p.arrived_s, p.lost, repr(p.payload))
            )
        )
    conns = []
    draw = random.Random(seed)
    for i in range(connections):
        on = path if i == 0 else DelayedPath(path, 0.01 * i)
        conn = TcpConnection(
            sim,
            on,
            TransportConfig(cc=cc, timestamps=timestamps, sack=sack, cwnd_in_packets=linux, hystart=hystart),
            name=f"tcp{i}",
            handshake=handshake,
            cwnd_log=True,
            implementation=implementation,
        )
        assert conn.implementation == implementation
        if linux:
            conn.server.nodelay = True  # tcp_window: each server write leaves at once
        conns.append(conn)
        for end in (conn.client, conn.server):
            tag = (i, end.is_client)
            end.on_data = lambda sid, data, fin, t, tag=tag: events.append(
                (tag, "data", sid, len(data), data[:2], fin, t)
            )
            end.on_stream_acked = lambda sid, offset, tag=tag: events.append((tag, "acked", sid, offset))
            end.on_received = lambda sid, offset, n, t, tag=tag: events.append((tag, "received", sid, offset, n, t))
        for k in range(4):
            sid = conn.client.open_stream()
            start = draw.random() * 0.3
            sim.call_at(start, conn.client.write, sid, bytes([k]) * draw.choice(sizes), draw.random() < 0.7)
            sim.call_at(start + 0.05, conn.server.write, sid, b"x" * draw.randrange(0, 5000), False)
            sim.call_at(start + 0.06, conn.server.write, sid, b"", True)  # an empty end mark
    sim.run()
    ends = [end for conn in conns for end in (conn.client, conn.server)]
    return {
        # The reference's receiving side, SACK scoreboard and loss answers are mixins of its
        # TcpEndpoint (tcp_receiver, tcp_sack, tcp_loss): the same endpoint's methods, named as
        # the twin names them.
        "trace": [
            (
                t,
                name.replace("TcpReceiver.", "TcpEndpoint.")
                .replace("SackScoreboard.", "TcpEndpoint.")
                .replace("LossRecovery.", "TcpEndpoint."),
            )
            for t, name in sim.trace
        ],
        "events_run": sim.events_run,
        "now": sim.now,
        "events": events,
        "packets": packets,
        "stats": [conn.stats() for conn in conns],
        "cwnd_logs": [end.cwnd_log for end in ends],
        "estimates": [
            (
                end.rtt.srtt_s,
                end.rtt.min_rtt_s,
                end.rtt.latest_rtt_s,
                end.cc.cwnd_bytes,
                end.cc.ssthresh_bytes,
                end.cwnd_bytes,
                end.flight_bytes,
                end.snd_una,
                end.rcv_nxt,
                end._max_packets_out,
                end._cwnd_usage_seq,
                end._is_cwnd_limited,
            )
            for end in ends
        ],
        "links": [
            (
                link.stats.packets_sent,
                link.stats.packets_lost,
                link.stats.packets_dropped,
                link.stats.bytes_sent,
                link.stats.bytes_delivered,
                link.stats.max_queue_bytes,
            )
            for link in (path.forward, path.reverse)
        ],
    }


def _same(**scenario) -> dict:
    """Run ``scenario`` on both implementations; assert every record is identical; return the totals."""
    ref, twin = _run("python", **scenario), _run("c", **scenario)
    for key in ref:
        assert repr(twin[key]) == repr(ref[key]), f"{key} differs"
    total = {
        k: sum(s[k] for s in ref["stats"])
        for k in ("rtos", "spurious_rtos", "undone_reductions", "fast_retransmits", "packets_lost")
    }
    total["max_receive_buffer_bytes"] = max(s["max_receive_buffer_bytes"] for s in ref["stats"])
    total["dropped"] = sum(link[2] for link in ref["links"])
    total["sack_acks"] = sum(1 for p in ref["packets"] if "sack=" in p[6])
    total["events"] = ref["events_run"]
    return total


@pytest.mark.parametrize("timestamps", [True, False])
def test_clean_transfers_many_connections_same_events(timestamps):
    """No loss, an unbounded queue: slow start (RFC 5681 3.1), delayed ACKs (RFC 5681 4.2),
    per-origin extra delay through DelayedPath; the queueing delay slow start builds up
    stays under Linux's RTO (SRTT + at least 200 ms), so no timeout fires (under RFC 6298's
    max(200 ms, SRTT + 4 RTTVAR) some did, all spurious)."""
    t = _same(seed=1, queue_bytes=None, timestamps=timestamps)
    assert t["events"] > 1000 and t["dropped"] == 0 and t["rtos"] == 0


@pytest.mark.parametrize("sack", [True, False])
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_queue_overflow_fast_retransmit_and_recovery_same_events(cc, sack):
    """A shallow queue drops bursts: fast retransmit, SACK recovery (RFC 2018 blocks, RFC 6675
    scoreboard, RFC 6937 PRR, RFC 8985 lost retransmissions) or NewReno partial ACKs
    (RFC 6582), and CUBIC's window (RFC 9438) or Reno's halving."""
    t = _same(seed=7, queue_bytes=8000, cc=cc, sack=sack)
    assert t["dropped"] > 0 and t["fast_retransmits"] > 0
    assert (t["sack_acks"] > 0) == sack


@pytest.mark.parametrize("sack", [True, False])
@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_random_loss_with_handshake_same_events(cc, sack):
    """2% loss both ways with the three-way handshake: SYN/SYN-ACK retransmission on the
    RFC 6298 timer, RTOs with backoff, go-back-N (after which the SACK scoreboard is cleared,
    RFC 2018 section 8)."""
    t = _same(seed=4, loss=0.02, cc=cc, handshake=True, sack=sack)
    assert t["packets_lost"] > 0 and t["rtos"] > 0
    assert (t["sack_acks"] > 0) == sack


def test_heavy_loss_backoff_same_events():
    """30% loss on one connection: repeated timeouts of the same segment (RFC 6298 5.5 backoff)."""
    t = _same(seed=11, loss=0.3, handshake=True, connections=1, sizes=(30_000,))
    assert t["rtos"] >= 3


@pytest.mark.parametrize("timestamps", [True, False])
def test_spurious_timeouts_detected_and_undone_same_events(timestamps):
    """30% loss both ways: timeouts whose data arrived but whose ACKs were lost are found
    spurious, by the timestamp echo (RFC 3522) or, without timestamps, by F-RTO (RFC 5682
    section 2: steps 2b, 3a and 3b all run here), and their reductions undone."""
    t = _same(seed=11, loss=0.3, handshake=True, connections=1, sizes=(30_000,), timestamps=timestamps)
    assert t["rtos"] > t["spurious_rtos"] > 0 and t["undone_reductions"] > 0


@pytest.mark.parametrize("sack", [True, False])
def test_bursty_loss_same_events(sack):
    """Gilbert-Elliott bursts: several holes per window (up to 3 SACK blocks beside
    timestamps, RFC 2018 section 3), partial ACKs, timeouts in recovery."""
    t = _same(seed=5, loss="ge:0.01,0.3", handshake=True, sack=sack)
    assert t["fast_retransmits"] > 0 and t["rtos"] > 0
    assert (t["sack_acks"] > 0) == sack


def test_jitter_reordering_same_events():
    """Reordering: out-of-order segments held, immediate duplicate ACKs, a hole filled
    delivering several held segments at once (RFC 5681 4.2)."""
    t = _same(seed=6, jitter=Jitter(prob=0.2, max_s=0.03))
    assert t["max_receive_buffer_bytes"] > 0


@pytest.mark.parametrize("timestamps", [True, False])
def test_chosen_drops_same_events(timestamps):
    """Exactly chosen drops in both directions (data segments and ACKs); without timestamps
    an ACK carries 4 SACK blocks instead of 3 (RFC 2018 section 3)."""
    t = _same(seed=9, drops=({3, 4, 5, 20, 21, 40, 41, 42, 43, 44, 45, 46}, {2, 7}), timestamps=timestamps)
    assert t["fast_retransmits"] + t["rtos"] > 0 and t["sack_acks"] > 0


def test_no_bandwidth_limit_same_events():
    """An unlimited link (no serialization, no queue) with loss."""
    t = _same(seed=10, bandwidth_bps=None, queue_bytes=None, loss=0.05)
    assert t["packets_lost"] > 0


@pytest.mark.parametrize("cc", ["reno", "cubic"])
@pytest.mark.parametrize("loss", [None, 0.02, "ge:0.01,0.3"])
def test_linux_window_in_segments_same_events(cc, loss):
    """Linux's window (tcp_window): counted in segments, grown only while it limits the
    sender (RFC 7661 section 4.3), ACKs riding on data (RFC 9293 section 3.10.7.4) and the
    server's TCP_NODELAY writes leaving at once; clean, random and bursty loss."""
    t = _same(seed=12, loss=loss, cc=cc, handshake=True, linux=True, queue_bytes=None if loss is None else 60_000)
    assert t["events"] > 1000
    assert (t["packets_lost"] > 0) == (loss is not None)


@pytest.mark.parametrize("loss", [None, 0.01])
def test_linux_hystart_same_events(loss):
    """Linux CUBIC's HyStart (tcp_cubic.c) behind a deep drop-tail queue at 2 Mbit/s: the
    delay test ends slow start with nothing lost, and a timeout starts it afresh."""
    kw = dict(seed=5, cc="cubic", linux=True, handshake=True, bandwidth_bps=2e6, rtt_s=0.02, queue_bytes=None)
    t = _same(hystart=True, loss=loss, sizes=(400_000, 100_000), **kw)
    ref = _run("python", hystart=True, loss=loss, sizes=(400_000, 100_000), **kw)
    assert any(math.isfinite(e[4]) for e in ref["estimates"])  # some sender left slow start
    assert (t["packets_lost"] > t["rtos"]) == (loss is not None)


def test_linux_window_shallow_queue_same_events():
    """Linux's window through a shallow queue: drops, fast retransmit and SACK recovery."""
    t = _same(seed=7, queue_bytes=8000, linux=True, sack=True)
    assert t["dropped"] > 0 and t["fast_retransmits"] > 0


def test_the_python_event_queue_runs_the_c_twin_the_same_way():
    """The C endpoints push onto whichever event queue the simulator has."""
    t = _same(seed=3, loss=0.02, engine="python")
    assert t["packets_lost"] > 0


# -- the response writer ----------------------------------------------------------------


def _writer_run(implementation: str, seed: int, ahead: tuple[int, int] = (0, 0)) -> tuple:
    """A server writing responses at three urgencies over TCP as its window drains, a push stopped
    midway; ``ahead``: the writer's (ahead_windows, ahead_bytes)."""
    sim = Simulator(seed, trace=True)
    path = Path(sim, rtt_s=0.08, bandwidth_bps=5e6, queue_bytes=40_000, loss=0.01, implementation=implementation)
    conn = TcpConnection(sim, path, implementation=implementation)
    written: dict[int, int] = {}
    done: list = []
    writer = response_writer(conn.server, 1460, written, lambda sid: done.append((sim.now, sid)), fill_on_ack=True)
    expected = ResponseWriter if implementation == "python" else native.C.ResponseWriter
    assert type(writer) is expected
    writer.ahead_windows, writer.ahead_bytes = ahead
    conn.server.on_stream_acked = writer.on_stream_acked
    got: list = []
    conn.client.on_data = lambda sid, data, fin, t: got.append((sid, len(data), fin, t))
    draw = random.Random(seed)
    sids = [conn.server.open_stream() for _ in range(12)]
    for i, sid in enumerate(sids):
        sim.call_at(
            draw.random() * 0.5, lambda sid=sid, i=i: (writer.add(sid, draw.randrange(1, 60_000), i % 3), writer.fill())
        )
    sim.call_at(0.6, writer.stop, sids[4])
    sim.run()
    return sim.trace, got, done, written, writer.unacked_bytes, writer.waiting, conn.stats()


def test_response_writer_c_twin_writes_the_same_bytes_in_the_same_order():
    """RFC 9218 urgency rotations, a packet's worth per turn, the window kept written."""
    ref, twin = _writer_run("python", 2), _writer_run("c", 2)
    assert repr(twin) == repr(ref)
    assert len(ref[2]) == 11 and ref[5] is False  # every response but the stopped one written in full


def test_response_writer_c_twin_commits_the_same_bytes_ahead_of_the_window():
    """A server's socket and its own buffer written beyond the window: the same writes, in the same order."""
    ref, twin = _writer_run("python", 2, (1, 100_000)), _writer_run("c", 2, (1, 100_000))
    assert repr(twin) == repr(ref)
    assert repr(ref[0]) != repr(_writer_run("python", 2)[0])  # it does change what is written when


# -- page loads ---------------------------------------------------------------------------


@pytest.mark.parametrize("har,loss", [("synthetic-page.har", 0.01), ("synthetic-many-origins.har", 0.0)])
def test_page_load_same_result(monkeypatch, har, loss):
    """The page-load model (h2 over TCP with TLS, one shared access path, a DelayedPath per
    origin farther away) gives the same per-resource times and metrics on both."""
    from pathlib import Path as FsPath

    from simulator.studies import push
    from simulator.browser import ClientCache, load_page, page_graph
    from simulator.traces import load

    trace = FsPath(__file__).resolve().parent.parent / "traces" / har
    graph = page_graph(load(str(trace)))
    params = push.PushParams(loss=loss)
    plan = push.server_plan(graph, "push", params)
    results = {}
    for implementation in ("python", "c"):
        monkeypatch.setattr(native, "IMPLEMENTATION", implementation)
        r = load_page(graph, params.load_params(), plan, ClientCache())
        results[implementation] = (r.resources.to_csv(), repr(r.metrics))
    assert results["c"] == results["python"]


# -- the Python API of the twin -----------------------------------------------------------


def test_c_packets_are_instances_of_the_reference_classes():
    """The capture writer tells segments, ACKs and handshake packets apart by class."""
    assert isinstance(native.C.TcpSegment(0, 3, 3, [(0, 0, b"abc", True)]), TcpSegment)
    assert isinstance(native.C.TcpAck(5), TcpAck)
    ack = native.C.TcpAck(5, 0.25, [(10, 20), (30, 40)])
    assert (ack.ack, ack.echo_s, ack.sack) == (5, 0.25, ((10, 20), (30, 40)))
    assert repr(ack) == repr(TcpAck(5, 0.25, ((10, 20), (30, 40)))) == "TcpAck(5, sack=((10, 20), (30, 40)))"
    assert native.C.TcpAck(5).sack == () and repr(native.C.TcpAck(5)) == "TcpAck(5)"
    assert isinstance(native.C.TcpControl("SYN"), TcpControl)
    seg = native.C.TcpSegment(10, 4, 3, [(1, 0, b"abc", False), (5, 0, b"", True)])
    (sid, offset, data, end), empty = seg.pieces
    assert (sid, offset, bytes(data), end, seg.seq, seg.length) == (1, 0, b"abc", False, 10, 4)
    assert bytes(empty[2]) == b"" and empty[3] is True


def test_a_send_hooked_on_a_c_link_sees_every_packet_of_a_c_endpoint():
    """As the capture writer does: ``link.send`` replaced on the instance."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.02, bandwidth_bps=1e7, implementation="c")
    conn = TcpConnection(sim, path, handshake=True, implementation="c")
    seen = []
    send = path.forward.send
    path.forward.send = lambda packet, deliver: (seen.append(type(packet.payload).__name__), send(packet, deliver))[1]
    sid = conn.client.open_stream()
    conn.client.write(sid, bytes(10_000), end=True)
    sim.run()
    assert seen[0] == "TcpControl" and seen.count("TcpSegment") == conn.stats()["c2s_packets_sent"]


def test_a_c_link_carries_the_reference_packets_of_other_transports():
    """QUIC writes link.Packet objects: the C link sets their fields as the Python link does."""
    for implementation in native.IMPLEMENTATIONS:
        sim = Simulator(1)
        link = make_link(sim, "l", delay_s=0.01, bandwidth_bps=8e6, implementation=implementation)
        got = []
        packet = Packet(1000, "x")
        assert link.send(packet, got.append) is True
        sim.run()
        assert got == [packet] and packet.arrived_s == pytest.approx(0.011) and packet.link_seq == 0


def test_a_write_after_the_end_and_on_the_peers_unidirectional_stream_are_refused():
    sim = Simulator(1)
    conn = TcpConnection(sim, Path(sim, rtt_s=0.02, implementation="c"), implementation="c")
    sid = conn.client.open_stream()
    conn.client.write(sid, b"a", end=True)
    with pytest.raises(ValueError, match="after its end"):
        conn.client.write(sid, b"b")
    with pytest.raises(ValueError, match="unidirectional"):
        conn.server.write(conn.client.open_stream(unidirectional=True), b"x")


def test_a_configuration_the_twin_cannot_print_alike_runs_the_reference():
    """An int where the reference would carry it into a reported number (min_rto_s=1):
    the connection falls back to the Python endpoints."""
    sim = Simulator(1)
    conn = TcpConnection(sim, Path(sim, rtt_s=0.02), TransportConfig(min_rto_s=1), implementation="c")
    assert conn.implementation == "python"


def test_finished_connections_leave_no_objects_behind():
    """Endpoints, timers, links and their bound callbacks form cycles: the collector frees them."""

    def run_one():
        sim = Simulator(1)
        path = Path(sim, rtt_s=0.02, bandwidth_bps=1e7, implementation="c")
        conn = TcpConnection(sim, DelayedPath(path, 0.01), handshake=True, implementation="c")
        writer = response_writer(conn.server, 1460, {}, lambda sid: None, fill_on_ack=True)
        conn.server.on_stream_acked = writer.on_stream_acked
        writer.add(conn.server.open_stream(), 50_000, 3)
        writer.fill()
        sim.run()

    def live():
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o).__module__ == "simulator.net._tcp")

    run_one()
    before = live()
    for _ in range(20):
        run_one()
    assert live() <= before
