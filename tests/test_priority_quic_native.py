"""A scheduler of ``http.priority`` on the C QUIC writer (``net._quic.ResponseWriter`` with a
scheduler's ``pick_run``/``settle``/``remove`` as hooks, its levels, or the RFC 7540 tree's C
twin: ``http.priority_writer``) against the Python reference (``ScheduledWriter`` with the
scheduler's own ``pick``/``wrote`` on the Python ``QuicEndpoint``): the same events (time
and callback name, in order), the same chunks delivered, the same responses written in full
at the same times, the same counters, with loss.  RFC 9000 section 2.2 leaves the order of
the streams' data to the sender; RFC 9218 section 10 (the server's scheduling) and RFC 7540
section 5.3 (the tree) are what the schedulers decide it by.  Each run also checks it went
the way it is named after (the writer it meant to test, packets lost, runs of more than one
chunk through the hooks), so a comparison cannot pass by running nothing."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pandas as pd
import pytest

from simulator.engine import Simulator
from simulator.http import priority, priority_writer
from simulator.http.priority import PrioritySignal, ScheduledWriter, make_scheduler, scheduled_writer
from simulator.http.priority_signals import CHAIN, ROOT
from simulator.net import native
from simulator.net.link import Path
from simulator.net.quic import QuicConnection
from simulator.net.quic.native import NativeQuicEndpoint
from simulator.net.transport import TransportConfig

pytestmark = pytest.mark.skipif(
    native.QUIC is None or not hasattr(native.QUIC.ResponseWriter, "hook"),
    reason="the C extension simulator.net._quic (with its writer's hooks) is not built",
)

CHUNK = 1212  # the page-load model's over QUIC: max_datagram_bytes - 40


def _signal(draw: random.Random, i: int, tree: bool) -> PrioritySignal:
    if not tree:
        return PrioritySignal(urgency=draw.randrange(0, 8), incremental=draw.random() < 0.5)
    parent = (ROOT, CHAIN, "leader", "other", "follower")[i % 5]
    return PrioritySignal(
        urgency=draw.randrange(0, 8),
        incremental=draw.random() < 0.5,
        weight=draw.choice([1, 16, 32, 101, 201, 256]),
        parent=parent,
        exclusive=draw.random() < 0.3,
        tree="firefox" if parent in ("leader", "other", "follower") else None,
    )


def _update(writer, sid: int, signal: PrioritySignal) -> None:  # one event label for every writer
    writer.update(sid, signal)


def _stop(writer, sid: int) -> None:
    writer.stop(sid)


def _run(implementation: str, scheduler: str, mode: str, seed: int) -> dict:
    """A server answering over QUIC with aioquic's options, its handshake and 2% loss:
    responses with their signals joining at random times, pulled a packet's worth at a time
    (``pull`` as ``on_send_ready``), the server's own bytes first on some streams (as a 103),
    a PRIORITY_UPDATE (RFC 9218 section 7) for two of them and one response stopped midway.
    ``mode`` (C only): "routed" (``scheduled_writer``'s choice) or "hook" (the scheduler's
    ``pick_run``/``settle``/``remove`` hooked on the C writer, whatever the scheduler)."""
    sim = Simulator(seed, trace=True)
    path = Path(sim, rtt_s=0.08, bandwidth_bps=5e6, queue_bytes=40_000, loss=0.02)
    conn = QuicConnection(
        sim,
        path,
        TransportConfig(initial_rtt_s=0.1, max_datagram_bytes=CHUNK + 40),
        handshake=True,
        implementation=implementation,
        retransmit_in_turn=True,
        slow_start_rtt_exit=True,
        pto_declares_lost=True,
        ack_delay_s=0.001,
    )
    written: dict[int, int] = {}
    done: list = []
    on_written = lambda sid: done.append((sim.now, sid))  # noqa: E731
    sched = make_scheduler(scheduler)
    runs: list = []
    if implementation == "python":
        writer = ScheduledWriter(conn.server, CHUNK, written, on_written, fill_on_ack=False, scheduler=sched)
        kind = "ScheduledWriter"
    elif mode == "hook":
        real_settle = sched.settle
        sched.settle = lambda sid, chunks, chunk, last: (runs.append(chunks), real_settle(sid, chunks, chunk, last))
        writer = priority_writer._NativeScheduledWriter(
            conn.server, CHUNK, written, on_written, fill_on_ack=False, scheduler=sched, ext=native.QUIC
        )
        kind = "_NativeScheduledWriter"
    else:
        writer = scheduled_writer(conn.server, CHUNK, written, on_written, fill_on_ack=False, scheduler=sched)
        kind = "_NativeScheduledWriter" if scheduler == "tree" else "_NativeLevelWriter"
    assert type(writer).__name__ == kind
    assert type(conn.server) is not NativeQuicEndpoint or type(writer._c) is native.QUIC.ResponseWriter
    conn.server.on_stream_acked = writer.on_stream_acked
    conn.server.on_send_ready = writer.pull
    got: list = []
    conn.client.on_data = lambda sid, data, fin, t: got.append((sid, len(data), data[:1], fin, t))
    draw = random.Random(seed)
    sids = [conn.client.open_stream() for _ in range(14)]
    signals = [_signal(draw, i, scheduler == "tree") for i in range(len(sids))]

    def respond(i: int, sid: int) -> None:
        if i % 4 == 1:  # the server's own bytes first: the writer then writes on an open stream
            size = draw.randrange(20, 400)
            written[sid] = written.get(sid, 0) + size
            writer.unacked_bytes += size
            conn.server.write(sid, b"h" * size)
        writer.add(sid, draw.randrange(1, 80_000), signals[i])
        conn.server.want_to_send()

    for i, sid in enumerate(sids):
        sim.call_at(0.3 + draw.random() * 0.5, respond, i, sid)
    for at, i in ((0.85, 2), (1.0, 9)):
        sim.call_at(at, _update, writer, sids[i], _signal(random.Random(seed + i), i + 1, scheduler == "tree"))
    sim.call_at(0.9, _stop, writer, sids[5])
    sim.run()
    return {
        "trace": sim.trace,
        "got": got,
        "done": done,
        "written": written,
        "unacked": writer.unacked_bytes,
        "waiting": writer.waiting,
        "stats": conn.stats(),
        "runs": runs,
    }


@pytest.mark.parametrize(
    "scheduler,mode",
    [
        ("rfc9218", "routed"),
        ("rfc9218", "hook"),
        ("tree", "routed"),
        ("tree", "hook"),
        ("fifo", "routed"),
        ("fifo", "hook"),
        ("rr", "routed"),
        ("rr", "hook"),
        ("lifo", "routed"),
        ("lifo", "hook"),
        ("cf-shared-sequential", "routed"),
    ],
)
@pytest.mark.parametrize("seed", [3, 8])
def test_scheduled_c_quic_writer_same_events_rfc9218_section_10_rfc9000_section_2_2(scheduler, mode, seed):
    """RFC 9218 section 10 (urgency, then incremental round-robin or one at a time), fifo /
    rr / lifo, and the RFC 7540 section 5.3 tree with Firefox's placeholders, weights and
    exclusive placements, each chosen by the scheduler as the C QUIC writer is pulled a
    packet at a time (RFC 9000 section 2.2: the sender orders its streams' data; section 13.3:
    lost data resent) with loss, reprioritized and a response stopped: every event, chunk
    delivered and response written in full as with ``ScheduledWriter`` in Python."""
    ref, twin = _run("python", scheduler, mode, seed), _run("c", scheduler, mode, seed)
    for key in ref:
        if key == "runs":
            continue
        a, b = ref[key], twin[key]
        if repr(a) != repr(b):
            if isinstance(a, list):
                first = next((i for i, (x, y) in enumerate(zip(a, b)) if repr(x) != repr(y)), min(len(a), len(b)))
                pytest.fail(f"{key} differs at {first}: {a[first : first + 2]!r} != {b[first : first + 2]!r}")
            pytest.fail(f"{key} differs: {a!r} != {b!r}")
    assert len(ref["done"]) >= 13 and ref["waiting"] is False  # all written in full (the stopped one maybe not)
    assert ref["stats"]["server"]["packets_lost"] > 0
    if mode == "hook":
        assert twin["runs"], "the hooks were not called"
        if scheduler in ("tree",):  # the tree names runs of several chunks: the writer writes them unasked
            assert max(twin["runs"]) > 1


@pytest.mark.parametrize("scheduler", ["rfc9218", "tree", "fifo", "rr", "lifo", "cf-shared-sequential"])
def test_priorities_study_h3_same_with_c_writer_rfc9218_section_10(scheduler, monkeypatch):
    """The priorities study over h3 with 2% loss and the LCP image's PRIORITY_UPDATE (RFC
    9218 section 7), Chromium's and Firefox's signals: every response ready at the same time
    with the scheduler on the C QUIC writer as with ``ScheduledWriter`` on the Python
    endpoint (``WORKBENCH_NET=python``'s path)."""
    from simulator.browser import page_graph
    from simulator.studies import priorities as pr
    from simulator.traces import load

    if native.QUIC_IMPLEMENTATION != "c":
        pytest.skip("the C QUIC endpoint is not the default")
    graph = page_graph(load("traces/synthetic-page.har"))
    params = pr.PrioritiesParams(schedulers=(scheduler,), browsers=("chromium", "firefox"), protocol="h3", loss="0.02")
    made = []
    real = priority.scheduled_writer
    monkeypatch.setattr(priority, "scheduled_writer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    monkeypatch.setattr("simulator.http.network.scheduled_writer", priority.scheduled_writer)
    native_run = pr.run(graph, params).resources
    kind = "_NativeScheduledWriter" if scheduler == "tree" else "_NativeLevelWriter"
    assert made and all(type(w).__name__ == kind and type(w._c) is native.QUIC.ResponseWriter for w in made)
    made.clear()
    monkeypatch.setattr(native, "QUIC_IMPLEMENTATION", "python")
    monkeypatch.setattr(priority_writer, "native", SimpleNamespace(C=None, QUIC=None))
    python_run = pr.run(graph, params).resources
    assert made and all(type(w) is ScheduledWriter for w in made)
    pd.testing.assert_frame_equal(native_run, python_run)
