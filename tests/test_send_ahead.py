"""A server that commits bytes to its socket beyond the congestion window (``net.writer``'s
``ahead_windows`` / ``ahead_bytes``; the lab's hypercorn, ``lab.serve.H2_SEND_AHEAD``): TCP sends
a connection's bytes in the order written (RFC 9293 section 3.10.2: SEND queues data on the
connection), so a response that comes ready later queues behind what was committed before it,
whatever its urgency (RFC 9218 section 4.1 orders only what the server has not written yet)."""

import pytest

from simulator.engine import Simulator
from simulator.net import native
from simulator.net.link import Path
from simulator.net.tcp import TcpConnection
from simulator.net.writer import response_writer

IMPLEMENTATIONS = ["python"] + (["c"] if native.C is not None else [])


def _urgent_done_s(implementation: str, ahead: tuple[int, int]) -> tuple[float, float]:
    """A 2 MB response at urgency 3 from t = 0, a 10 kB one at urgency 0 ready at 0.5 s
    (a document after its 103's preloads), 100 ms and 10 Mbit/s: when each arrived in full."""
    sim = Simulator(1)
    path = Path(sim, rtt_s=0.1, bandwidth_bps=10e6, implementation=implementation)
    conn = TcpConnection(sim, path, implementation=implementation)
    writer = response_writer(conn.server, 1460, {}, lambda sid: None, fill_on_ack=True)
    writer.ahead_windows, writer.ahead_bytes = ahead
    conn.server.on_stream_acked = writer.on_stream_acked
    sizes: dict[int, int] = {}
    done: dict[int, float] = {}

    def got(sid, data, fin, t):
        sizes[sid] = sizes.get(sid, 0) + len(data)
        if fin:
            done[sid] = t

    conn.client.on_data = got
    bulk, urgent = conn.server.open_stream(), conn.server.open_stream()
    sim.call_at(0.0, lambda: (writer.add(bulk, 2_000_000, 3), writer.fill()))
    sim.call_at(0.5, lambda: (writer.add(urgent, 10_000, 0), writer.fill()))
    sim.run()
    assert sizes == {bulk: 2_000_000, urgent: 10_000}
    return done[urgent], done[bulk]


RATE_BYTES_S = 10e6 / 8


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_response_ready_later_waits_behind_the_bytes_committed_before_it(implementation):
    none_s, bulk_s = _urgent_done_s(implementation, (0, 0))
    # Only the window written: the urgent response goes out next, about a round trip and a
    # window's drain after it comes ready, long before the bulk one ends.
    assert none_s < 0.5 + 0.35 < bulk_s
    urgent_s, bulk_ahead_s = _urgent_done_s(implementation, (1, 512 * 1024))
    # 512 KiB more committed ahead of it: it waits at least their time on the link.
    assert urgent_s >= none_s + 512 * 1024 / RATE_BYTES_S
    assert urgent_s < bulk_ahead_s == bulk_s  # the bytes are the same; only their order moved


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_wait_grows_with_what_is_committed_ahead(implementation):
    none_s, _ = _urgent_done_s(implementation, (0, 0))
    bytes_s, _ = _urgent_done_s(implementation, (0, 100_000))
    window_s, _ = _urgent_done_s(implementation, (1, 100_000))
    # 100 kB ahead: their time at 10 Mbit/s (80 ms) more; a window in the socket more again.
    assert bytes_s - none_s == pytest.approx(100_000 / RATE_BYTES_S, rel=0.1)
    assert window_s > bytes_s
