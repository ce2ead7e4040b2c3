"""``http.blocks``: header blocks over the transport models, events out.

Head-of-line blocking as the events show it: over one TCP byte stream (HTTP/2, RFC 9113
section 5) a block whose bytes all arrived still waits for an earlier lost segment, so
``HeaderBlockArrived`` comes before ``HeaderBlockReceived``; over QUIC (HTTP/3, RFC 9000
section 2.2) each stream is delivered on its own, so the later block is not held back."""

from __future__ import annotations

import pytest

from simulator.engine import Simulator
from simulator.http.blocks import H2Blocks, H3Blocks
from simulator.http.events import HeaderBlockArrived, HeaderBlockReceived
from simulator.net.link import DropList, Path
from simulator.net.quic import QuicConnection
from simulator.net.tcp import TcpConnection

RTT_S = 0.050
FIRST = bytes(range(256)) * 12  # about three packets
SECOND = b"\x82\x86\x84" * 20


def _run(transport_name: str):
    sim = Simulator(seed=1)
    # The python links, so the first data packet can be dropped by its index.
    path = Path(sim, rtt_s=RTT_S, bandwidth_bps=10e6, implementation="python")
    path.forward.loss = DropList({0})
    if transport_name == "tcp":
        conn = H2Blocks(TcpConnection(sim, path))
    else:
        conn = H3Blocks(QuicConnection(sim, path))
    events = []
    conn.on_event = lambda e: events.append(e)
    client = conn.transport.client
    first, second = client.open_stream(), client.open_stream()
    conn.send_block("request", first, FIRST)
    conn.send_block("request", second, SECOND)
    sim.run(until_s=10.0)
    return first, second, events


def _times(events, kind, stream_id):
    return [e.time_s for e in events if type(e) is kind and e.stream_id == stream_id]


@pytest.mark.parametrize("transport_name", ["tcp", "quic"])
def test_both_blocks_arrive_whole_once(transport_name):
    first, second, events = _run(transport_name)
    got = {e.stream_id: e.block for e in events if type(e) is HeaderBlockReceived}
    assert got == {first: FIRST, second: SECOND}


def test_over_tcp_a_whole_block_waits_for_an_earlier_lost_segment_rfc9113_section_5():
    first, second, events = _run("tcp")
    (arrived,) = _times(events, HeaderBlockArrived, second)
    (received,) = _times(events, HeaderBlockReceived, second)
    (first_received,) = _times(events, HeaderBlockReceived, first)
    assert arrived < received  # all there, held behind the hole
    assert received >= first_received  # in byte-stream order
    assert received - arrived >= RTT_S / 2  # a retransmission at least


def test_over_quic_streams_are_delivered_independently_rfc9000_section_2_2():
    first, second, events = _run("quic")
    (second_received,) = _times(events, HeaderBlockReceived, second)
    (first_received,) = _times(events, HeaderBlockReceived, first)
    assert second_received < first_received  # the second block is not held behind the first's loss
