"""One lost packet, two transports: TCP stalls every stream, QUIC only the stream hit.

RFC 9293 section 3.10.7.4 (TCP hands bytes to the application strictly in sequence)
against RFC 9000 section 2.2 (QUIC orders bytes within a stream only).
"""

import pytest

from simulator.engine import Simulator
from simulator.net.link import DropList, Path
from simulator.net.quic import QuicConnection
from simulator.net.tcp import TcpConnection

RTT_S = 0.1
ONE_WAY_S = RTT_S / 2


def _first_packet_lost(cls):
    """Stream A fills the first packet, which is lost; stream B goes 1 ms later in the next."""
    sim = Simulator(seed=1)
    path = Path(sim, rtt_s=RTT_S, bandwidth_bps=100e6, reverse_loss=0)
    path.forward.loss = DropList({0})
    conn = cls(sim, path)
    done = {}
    conn.server.on_data = lambda sid, data, end, t: done.__setitem__(sid, t) if end else None
    a = conn.client.open_stream()
    b = conn.client.open_stream()
    conn.client.write(a, bytes(1200), end=True)
    sim.call_at(0.001, conn.client.write, b, bytes(500), True)
    sim.run()
    return done[a], done[b]


@pytest.mark.parametrize("cls", [TcpConnection, QuicConnection], ids=["tcp", "quic"])
def test_the_stream_whose_data_was_lost_waits_for_the_retransmission(cls):
    a_done, _ = _first_packet_lost(cls)
    assert a_done > ONE_WAY_S + RTT_S


def test_quic_delivers_the_other_stream_on_time():
    a_done, b_done = _first_packet_lost(QuicConnection)
    assert b_done < 0.001 + ONE_WAY_S + 0.001
    assert b_done < a_done


def test_tcp_holds_the_other_stream_behind_the_hole():
    a_done, b_done = _first_packet_lost(TcpConnection)
    assert b_done >= a_done - 1e-9
    assert b_done > ONE_WAY_S + RTT_S
