"""The C twin of the QUIC model's recovery path (``simulator.net._quic``, driven by
``quic.native.NativeQuicEndpoint``) against the Python reference (``quic.QuicEndpoint``):
the same scenario run on each must give the same events (time and callback name, in
order), the same deliveries and acknowledgement reports to the application, the same
packets on each link (with their payloads' repr), the same counters, windows and RTT
estimates, exactly (floats compared by their repr).  Every scenario also checks it
exercised what it is named after (a loss scenario declared packets lost, a handshake-loss
one fired handshake PTOs), so a comparison cannot pass by running nothing.
"""

from __future__ import annotations

import random

import pytest

from simulator.engine import Simulator
from simulator.net import native
from simulator.net.link import DelayedPath, DropList, Jitter, Path
from simulator.net.quic import QuicConnection, QuicEndpoint, fuzz
from simulator.net.quic.native import NativeQuicEndpoint
from simulator.net.transport import TransportConfig
from simulator.net.writer import ResponseWriter, response_writer

pytestmark = pytest.mark.skipif(native.QUIC is None, reason="the C extension simulator.net._quic is not built")


def _run(
    implementation: str,
    seed: int,
    *,
    cc: str = "reno",
    loss=None,
    jitter=None,
    handshake: bool = False,
    connections: int = 2,
    queue_bytes: int | None = 60_000,
    drops=None,
    rtt_s: float = 0.05,
    sizes=(200_000, 20_000),
    pull: bool = False,
    aioquic: bool = False,
    pacing: bool = True,
    trace: bool = True,
    lab: bool = False,
) -> dict:
    """Connections over one bottleneck (the first on the path, the others through a
    DelayedPath), requests from the client at random times and responses on each stream;
    ``pull``: the server writes through ``on_send_ready``, a packet's worth per call;
    ``aioquic``: the options the page-load model runs with (``http.network``); ``lab``: and
    Chromium's two-piece ClientHello and a pacer woken late (``ModelNetwork(lab_quic=True)``); ``trace=False``:
    the engine's own run loop (it runs the C core's C events without the calls a traced run makes)."""
    sim = Simulator(seed, trace=trace)
    path = Path(sim, rtt_s=rtt_s, bandwidth_bps=10e6, queue_bytes=queue_bytes, loss=loss, jitter=jitter)
    if drops is not None:
        path.forward.loss, path.reverse.loss = DropList(drops[0]), DropList(drops[1])
    packets: list = []
    for tag, link in (("fwd", path.forward), ("rev", path.reverse)):
        link.observers.append(
            lambda p, tag=tag: packets.append(
                (tag, p.size_bytes, p.link_seq, p.sent_s, p.arrived_s, p.lost, repr(p.payload))
            )
        )
    events: list = []
    conns = []
    draw = random.Random(seed)
    options = (
        dict(retransmit_in_turn=True, slow_start_rtt_exit=True, pto_declares_lost=True, ack_delay_s=0.001)
        if aioquic
        else {}
    )
    if lab:
        options["chromium_client_hello"] = True
    for i in range(connections):
        on = path if i == 0 else DelayedPath(path, 0.01 * i)
        conn = QuicConnection(
            sim,
            on,
            TransportConfig(cc=cc, initial_rtt_s=0.1, pacer_late_s=0.0007 if lab else 0.0),
            name=f"quic{i}",
            handshake=handshake,
            log_cwnd=True,
            pacing=pacing,
            implementation=implementation,
            **options,
        )
        assert conn.implementation == implementation
        assert type(conn.client) is (NativeQuicEndpoint if implementation == "c" else QuicEndpoint)
        conns.append(conn)
        for end in (conn.client, conn.server):
            tag = (i, end.is_client)
            end.on_data = lambda sid, data, fin, t, tag=tag: events.append((tag, "data", sid, len(data), fin, t))
            end.on_stream_acked = lambda sid, offset, tag=tag: events.append((tag, "acked", sid, offset))
            end.on_packet_acked = lambda pn, ranges, tag=tag: events.append((tag, "packet", pn, ranges))
        pending: list = []
        if pull:

            def pull_one(server=conn.server, pending=pending) -> bool:
                if not pending:
                    return False
                sid, left = pending[0]
                n = min(left, 1200)
                server.write(sid, b"p" * n, end=n == left)
                if n == left:
                    pending.pop(0)
                else:
                    pending[0] = (sid, left - n)
                return True

            conn.server.on_send_ready = pull_one
        for k in range(4):
            sid = conn.client.open_stream()
            start = draw.random() * 0.3
            size = draw.choice(sizes)
            sim.call_at(start, conn.client.write, sid, b"q" * draw.randrange(50, 3000), True)
            if pull:
                sim.call_at(
                    start + 0.1,
                    lambda sid=sid, size=size, conn=conn, pending=pending: (
                        pending.append((sid, size)),
                        conn.server.want_to_send(),
                    ),
                )
            else:
                sim.call_at(start + 0.1, conn.server.write, sid, bytes([k]) * size, True)
    sim.run()
    ends = [end for conn in conns for end in (conn.client, conn.server)]
    return {
        "trace": sim.trace,
        "events_run": sim.events_run,
        "now": sim.now,
        "events": events,
        "packets": packets,
        "stats": [conn.stats() for conn in conns],
        "estimates": [
            (
                end.rtt.srtt_s,
                end.rtt.rttvar_s,
                end.rtt.min_rtt_s,
                end.rtt.latest_rtt_s,
                end.cc.cwnd_bytes,
                end.cc.ssthresh_bytes,
                end.bytes_in_flight,
                end._next_pn,
            )
            for end in ends
        ],
    }


def _same(**scenario) -> dict:
    """Run ``scenario`` on both implementations; assert every record is identical; return totals.
    The C twin runs twice: traced (every event popped and called) and untraced (the engine's
    loop, which runs the core's flushes and timer slots as C events)."""
    ref, twin = _run("python", **scenario), _run("c", **scenario)
    untraced = _run("c", trace=False, **scenario)
    for key, a, b in [(k, ref[k], twin[k]) for k in ref] + [(k, ref[k], untraced[k]) for k in ref if k != "trace"]:
        if repr(a) != repr(b):
            if isinstance(a, list):
                first = next((i for i, (x, y) in enumerate(zip(a, b)) if repr(x) != repr(y)), min(len(a), len(b)))
                pytest.fail(f"{key} differs at {first}: {a[first : first + 2]!r} != {b[first : first + 2]!r}")
            pytest.fail(f"{key} differs: {a!r} != {b!r}")
    ends = [s[side] for s in ref["stats"] for side in ("client", "server")]
    total = {
        k: sum(e[k] for e in ends)
        for k in (
            "packets_lost",
            "lost_by_packet_threshold",
            "lost_by_time_threshold",
            "ptos",
            "spurious_ptos",
            "congestion_events",
            "handshake_ptos",
            "probe_packets_sent",
        )
    }
    total["events"] = ref["events_run"]
    total["reordered"] = max(e["max_reorder_buffer_bytes"] for e in ends)
    return total


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_clean_transfers_same_events(cc):
    """No loss, an unbounded queue: slow start (RFC 9002 7.3.1), ACK every second packet or
    after max_ack_delay (RFC 9000 13.2.2), pacing (RFC 9002 7.7), ACK ranges (19.3)."""
    t = _same(seed=1, cc=cc, queue_bytes=None)
    assert t["events"] > 1000 and t["packets_lost"] == 0


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_bernoulli_loss_same_events(cc):
    """2% loss both ways: packet and time threshold losses (RFC 9002 6.1.1, 6.1.2), one window
    reduction per recovery period (7.3.2), CUBIC's window (RFC 9438) or Reno's halving."""
    t = _same(seed=4, cc=cc, loss=0.02)
    assert t["lost_by_packet_threshold"] > 0 and t["congestion_events"] > 0


def test_queue_overflow_same_events():
    """A shallow queue drops bursts: losses by the packet threshold (RFC 9002 6.1.1)."""
    t = _same(seed=7, queue_bytes=8000, cc="cubic")
    assert t["packets_lost"] > 0


@pytest.mark.parametrize("seed", [1, 3])
def test_gilbert_elliott_bursts_and_ptos_same_events(seed):
    """Bursty Gilbert-Elliott loss: whole flights lost, probe timeouts with backoff
    (RFC 9002 6.2.1, 6.2.4), spurious PTOs, the loss timer (6.1.2)."""
    t = _same(seed=seed, loss="ge:0.03,0.25", cc="cubic")
    assert t["ptos"] > 0 and t["spurious_ptos"] > 0 and t["probe_packets_sent"] > 0 and t["lost_by_time_threshold"] > 0


def test_reordering_jitter_same_events():
    """Jitter reorders packets: out-of-order ACKs at once (RFC 9000 13.2.1), several ACK
    ranges, the time threshold (RFC 9002 6.1.2), receive buffers out of order."""
    t = _same(seed=5, jitter=Jitter(0.05, 0.02), loss=0.01)
    assert t["lost_by_time_threshold"] + t["lost_by_packet_threshold"] > 0 and t["reordered"] > 0


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_handshake_loss_aioquic_options_same_events(cc):
    """The handshake with its first datagrams lost both ways (RFC 9002 6.2.1 handshake PTO,
    RFC 9001), then aioquic's options: lost data resent in turn, slow start left on a
    rising RTT, PTOs that declare resent handshake data lost; 3% loss after it."""
    t = _same(seed=2, cc=cc, handshake=True, aioquic=True, drops=([0, 2], [0, 1]))
    assert t["handshake_ptos"] > 0
    t = _same(seed=6, cc=cc, handshake=True, aioquic=True, loss=0.03)
    assert t["packets_lost"] > 0


@pytest.mark.parametrize("rtt_s", [0.05, 0.3])
def test_chromium_client_hello_and_a_late_pacer_same_events(rtt_s):
    """Chromium's ClientHello in two shuffled pieces: aioquic's PING probe and the RTT sample
    from its ACK, also above twice the initial RTT (RFC 9002 6.2.1); the pacer woken late
    (RFC 9002 7.7), two packets at a time; with handshake datagrams lost, then 3% loss."""
    t = _same(seed=3, rtt_s=rtt_s, handshake=True, aioquic=True, lab=True, queue_bytes=None)
    assert t["packets_lost"] == 0
    t = _same(seed=9, rtt_s=rtt_s, handshake=True, aioquic=True, lab=True, drops=([1], [0, 2]))
    assert t["handshake_ptos"] > 0
    t = _same(seed=5, rtt_s=rtt_s, handshake=True, aioquic=True, lab=True, loss=0.03)
    assert t["packets_lost"] > 0


def test_pull_writer_same_events():
    """The server pulls a packet's worth at a time (``on_send_ready``, as the page-load
    model's schedulers write), with loss and no pacing (RFC 9002 7.7 is a SHOULD)."""
    t = _same(seed=8, pull=True, loss=0.02, aioquic=True)
    assert t["packets_lost"] > 0
    t = _same(seed=8, pull=True, loss=0.02, pacing=False)
    assert t["packets_lost"] > 0


def test_random_loss_patterns_and_ack_orders_same_events():
    """Random loss patterns and ACK orders: drop lists drawn from a seeded stream in both
    directions (data and ACKs lost), with and without reordering jitter."""
    draw = random.Random(31)
    for k in range(6):
        drops = (
            sorted(draw.sample(range(300), draw.randrange(1, 30))),
            sorted(draw.sample(range(150), draw.randrange(0, 20))),
        )
        _same(
            seed=10 + k,
            drops=drops,
            jitter=Jitter(0.05, 0.01) if k % 2 else None,
            connections=1,
            cc="cubic" if k % 3 == 0 else "reno",
            handshake=k % 2 == 0,
        )


def test_fuzz_corpus_same_events():
    """The fuzz corpus (``simulator.net.quic.fuzz``, which ``make asan`` runs longer): seeded
    drop lists both ways, in bursts or alone (lost data, lost ACKs: RFC 9002 6.1, 6.2), with
    and without reordering, handshake, aioquic's options, pacing and the pull writer."""
    assert fuzz.run(seconds=0, seed=0, corpus_size=12) == 12


def test_switch_picks_the_reference():
    """``implementation="python"`` (``WORKBENCH_NET=python``'s default) gives the reference's endpoints."""
    sim = Simulator(1)
    conn = QuicConnection(sim, Path(sim, rtt_s=0.05), implementation="python")
    assert type(conn.client) is QuicEndpoint and conn.implementation == "python"
    assert native.resolve_quic("c") == "c"


def _hooked_run(implementation: str) -> tuple[list, list, int]:
    """A transfer over a path (and a DelayedPath on it) whose links have ``send`` replaced on the
    instance, as the pcap writer does: what each hook saw, the trace, the packets the links sent."""
    sim = Simulator(3, trace=True)
    path = Path(sim, rtt_s=0.05, bandwidth_bps=10e6, loss=0.02)
    seen: list = []
    for tag, link in (("fwd", path.forward), ("rev", path.reverse)):
        send = link.send

        def hooked(packet, deliver, tag=tag, send=send):
            seen.append((tag, packet.size_bytes, sim.now, repr(packet.payload)))
            return send(packet, deliver)

        link.send = hooked
    for i, on in enumerate((path, DelayedPath(path, 0.02))):
        conn = QuicConnection(sim, on, name=f"q{i}", handshake=True, implementation=implementation)
        sid = conn.client.open_stream()
        sim.call_at(0.01 * i, conn.client.write, sid, b"q" * 500, True)
        sim.call_at(0.2 + 0.01 * i, conn.server.write, sid, b"r" * 60_000, True)
    sim.run()
    return seen, sim.trace, path.forward.stats.packets_sent + path.reverse.stats.packets_sent


def test_core_sends_through_a_hooked_link_send():
    """The core sends on a C link through the link's C send, which must still call a ``send``
    replaced on the instance (the pcap writer's hook) for every packet, as the reference's
    method call does: the same packets seen, the same events."""
    ref, twin = _hooked_run("python"), _hooked_run("c")
    assert repr(ref) == repr(twin)
    seen, _, sent = twin
    assert len(seen) == sent > 100 and {s[0] for s in seen} == {"fwd", "rev"}


# -- the response writer (net.writer.ResponseWriter and its C twin, net._quic.ResponseWriter) ----


def _writer_run(implementation: str, seed: int) -> dict:
    """A server answering with the page-load model's writer over QUIC (aioquic's options, its
    handshake, 2% loss): responses at three urgencies joining at random times, pulled a
    packet's worth at a time (``pull`` as ``on_send_ready``), a 103-like write of the
    server's own on some streams first, one response stopped midway."""
    sim = Simulator(seed, trace=True)
    path = Path(sim, rtt_s=0.08, bandwidth_bps=5e6, queue_bytes=40_000, loss=0.02)
    conn = QuicConnection(
        sim,
        path,
        TransportConfig(initial_rtt_s=0.1),
        handshake=True,
        implementation=implementation,
        retransmit_in_turn=True,
        slow_start_rtt_exit=True,
        pto_declares_lost=True,
        ack_delay_s=0.001,
    )
    written: dict[int, int] = {}
    done: list = []
    writer = response_writer(conn.server, 1212, written, lambda sid: done.append((sim.now, sid)), fill_on_ack=False)
    assert type(writer) is (ResponseWriter if implementation == "python" else native.QUIC.ResponseWriter)
    conn.server.on_stream_acked = writer.on_stream_acked
    conn.server.on_send_ready = writer.pull
    got: list = []
    conn.client.on_data = lambda sid, data, fin, t: got.append((sid, len(data), data[:1], fin, t))
    draw = random.Random(seed)
    sids = [conn.client.open_stream() for _ in range(12)]

    def respond(i: int, sid: int) -> None:
        if i % 4 == 1:  # the server's own bytes first: the writer then writes on an open stream
            size = draw.randrange(20, 400)
            written[sid] = written.get(sid, 0) + size
            writer.unacked_bytes += size
            conn.server.write(sid, b"h" * size)
        writer.add(sid, draw.randrange(1, 60_000), i % 3)
        conn.server.want_to_send()

    for i, sid in enumerate(sids):
        sim.call_at(0.3 + draw.random() * 0.5, respond, i, sid)
    sim.call_at(0.9, writer.stop, sids[4])
    sim.run()
    return {
        "trace": sim.trace,
        "got": got,
        "done": done,
        "written": written,
        "unacked": writer.unacked_bytes,
        "waiting": writer.waiting,
        "stats": conn.stats(),
    }


def test_response_writer_c_twin_same_events():
    """RFC 9218 urgency rotations (the lowest level first, round-robin among equals) pulled a
    packet's worth at a time over QUIC with loss (lost data resent in its stream's turn,
    RFC 9000 section 13.3): the C writer gives the reference's events, deliveries and counts."""
    ref, twin = _writer_run("python", 3), _writer_run("c", 3)
    for key in ref:
        assert repr(twin[key]) == repr(ref[key]), key
    assert len(ref["done"]) == 11 and ref["waiting"] is False  # all but the stopped response written in full
    assert ref["stats"]["server"]["packets_lost"] > 0


@pytest.mark.parametrize("policy", ["push+hints", "none"])
def test_page_load_h3_same_result(monkeypatch, policy):
    """The page-load model over h3 (pushes, a 103 (RFC 8297), 1% loss): the same per-resource
    times and metrics with the C QUIC endpoints and writer as with the reference."""
    from pathlib import Path as FsPath

    from simulator.browser import ClientCache, load_page, page_graph
    from simulator.studies import push
    from simulator.traces import load

    trace = FsPath(__file__).resolve().parent.parent / "traces" / "synthetic-page.har"
    graph = page_graph(load(str(trace)))
    params = push.PushParams(loss="0.01", protocol="h3", tls=False)
    plan = push.server_plan(graph, policy, params)
    results = {}
    for implementation in ("python", "c"):
        monkeypatch.setattr(native, "QUIC_IMPLEMENTATION", implementation)
        r = load_page(graph, params.load_params(), plan, ClientCache())
        results[implementation] = (r.resources.to_csv(), repr(r.metrics))
    assert results["c"] == results["python"]


def _stream_state(s) -> tuple:
    return (
        s.stream_id,
        bytes(s.buf),
        s.buf_offset,
        [bytes(c) for c in s.later],
        s.later_bytes,
        s.fin,
        s.fin_offset,
        (list(s.acked.starts), list(s.acked.ends)),
        s.acked_prefix,
        s.fin_acked,
        s.written,
    )


@pytest.mark.parametrize("seed", range(6))
def test_c_stream_records_match_the_reference(seed):
    """``_quic.SendStream`` / ``RecvStream`` (the records the C twin's endpoints make) against
    ``quic.stream``'s: the same fields after random writes, reads (from the held writes, split
    by a packet's end, behind the buffer's start), acknowledged prefixes dropped and flags set."""
    from simulator.net.quic.stream import RecvStream, SendStream

    rng = random.Random(seed)
    ref, c = SendStream(4), native.QUIC.SendStream(4)
    assert _stream_state(ref) == _stream_state(c)
    for _ in range(300):
        op = rng.random()
        if op < 0.35:
            data = rng.randbytes(rng.choice((0, 1, 7, 300, 1200, 5000)))
            if rng.random() < 0.3:
                data = memoryview(data)
            ref.append(data), c.append(data)
        elif op < 0.7:
            low = ref.buf_offset - (3 if rng.random() < 0.2 else 0)  # now and then behind the buffer
            offset = rng.randrange(max(0, low), ref.written + 1)
            length = rng.randrange(0, 2500)
            assert ref.data(offset, length) == c.data(offset, length)
        elif op < 0.85:
            prefix = rng.randrange(ref.acked_prefix, ref.buf_offset + len(ref.buf) + 1)
            ref.acked.add(0, prefix), c.acked.add(0, prefix)
            ref.acked_prefix = c.acked_prefix = prefix
            ref.drop_acked(), c.drop_acked()
        elif op < 0.9:
            ref.fin, c.fin = True, True
            ref.fin_offset = ref.written
            c.fin_offset = c.written
        else:
            ref.later_bytes += 0
            c.later_bytes += 0
            ref.fin_acked = c.fin_acked = rng.random() < 0.5
        assert _stream_state(ref) == _stream_state(c)
    r, rc = RecvStream(), native.QUIC.RecvStream()
    for s in (r, rc):
        s.delivered += 10
        s.heap_bytes += 3
        s.fin_offset = 20
        s.finished = True
    assert [getattr(rc, k) for k in RecvStream.__slots__] == [getattr(r, k) for k in RecvStream.__slots__]
    with pytest.raises(AttributeError):
        c.buf = bytearray()  # the core's fast paths rely on its own bytearray, deque and RangeSet


@pytest.mark.parametrize("seed", range(6))
def test_c_stream_pending_writes_match_the_reference(seed):
    """The C SendStream keeps a write a packet reads whole by reference (not copied into buf):
    against ``quic.stream``'s, packet-sized reads at the read end, reads behind it
    (retransmissions, split writes), acknowledged prefixes ending between and inside the held
    writes, with buf itself read (which copies them in) only now and then."""
    from simulator.net.quic.stream import SendStream

    rng = random.Random(seed)
    ref, c = SendStream(0), native.QUIC.SendStream(0)
    for step in range(400):
        op = rng.random()
        if op < 0.35:
            data = rng.randbytes(rng.choice((1200, 1200, 1200, 7, 300)))
            ref.append(data), c.append(data)
        elif op < 0.65:  # the next packet at the read end: a whole write when it fits
            if ref.later:
                offset = ref.buf_offset + len(ref.buf)
                length = len(ref.later[0]) if rng.random() < 0.8 else rng.randrange(1, 1500)
                assert ref.data(offset, length) == c.data(offset, length)
        elif op < 0.75:  # a retransmission: behind the read end
            end = ref.buf_offset + len(ref.buf)
            if end > ref.buf_offset:
                offset = rng.randrange(ref.buf_offset, end)
                length = rng.randrange(1, 2500)
                assert ref.data(offset, length) == c.data(offset, length)
        else:  # an acknowledged prefix up to the read end, on a write's edge or inside one
            prefix = rng.randrange(ref.acked_prefix, ref.buf_offset + len(ref.buf) + 1)
            ref.acked.add(0, prefix), c.acked.add(0, prefix)
            ref.acked_prefix = c.acked_prefix = prefix
            ref.drop_acked(), c.drop_acked()
        assert c.written == ref.written and c.buf_offset == ref.buf_offset
        if step % 10 == 9:
            assert _stream_state(ref) == _stream_state(c)
    assert _stream_state(ref) == _stream_state(c)
