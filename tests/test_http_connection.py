"""``http.connection``: HTTP/1.1, HTTP/2 and HTTP/3 over the transport models, events out.

One request and a response with a body and trailers, per version, on a lossless path: the
events a client sees come in the order RFC 9110 gives a message (head, content, trailers,
end; section 6), carry every body byte, and none arrives before the path could carry it."""

from __future__ import annotations

import pytest

from simulator.engine import Simulator
from simulator.http.connection import HttpConnection
from simulator.http.events import DataAcked, DataReceived, HeadersReceived
from simulator.net.conditions import Network

REQUEST = ((b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"a.example"), (b":path", b"/"))
RESPONSE = ((b":status", b"200"), (b"content-type", b"application/octet-stream"))
TRAILERS = ((b"content-digest", b"sha-256=:AAAA:"),)
BODY_BYTES = 50_000
RTT_S = 0.040


def _exchange(version: str):
    sim = Simulator(seed=1)
    path = Network(rtt_s=RTT_S, bandwidth_bps=10e6).path(sim)
    conn = HttpConnection(sim, path, version, name=version)
    client_events, server_events = [], []
    chunked = version == "h1"  # a body followed by trailers: chunked (RFC 9112 7.1.2)

    def on_client(event):
        client_events.append((sim.now, event))

    def on_server(event):
        server_events.append((sim.now, event))
        if type(event) is HeadersReceived:
            conn.server.send_section(event.stream_id, "head", RESPONSE, chunked=chunked)
            conn.server.send_data(event.stream_id, BODY_BYTES, chunked=chunked, end=False)
            conn.server.send_section(event.stream_id, "trailers", TRAILERS, chunked=chunked, end=True)
            conn.server.send_end(event.stream_id, chunked=chunked, already_fin=True)

    conn.client.on_event, conn.server.on_event = on_client, on_server
    sid = conn.client.open_stream()
    conn.client.send_section(sid, "head", REQUEST, end=True)
    conn.client.send_end(sid, chunked=False, already_fin=True)
    sim.run(until_s=10.0)
    return sid, client_events, server_events


@pytest.mark.parametrize("version", ["h1", "h2", "h3"])
def test_a_response_arrives_as_head_content_trailers_end_rfc9110_section_6(version):
    sid, client, server = _exchange(version)
    kinds = [type(e).__name__ + ("(trailers)" if getattr(e, "trailers", False) else "") for _, e in client]
    assert kinds[0] == "HeadersReceived" and kinds[-2:] == ["HeadersReceived(trailers)", "StreamEnded"]
    assert set(kinds[1:-2]) == {"DataReceived"}
    assert all(e.stream_id == sid for _, e in client)
    assert client[0][1].headers == RESPONSE and client[-2][1].headers == TRAILERS
    assert sum(e.length for _, e in client if type(e) is DataReceived) == BODY_BYTES
    # The request reaches the server after half a round trip at least; the response head
    # reaches the client a whole round trip after the request left (no event before the
    # path could carry its bytes).
    assert server[0][0] >= RTT_S / 2
    assert client[0][0] >= RTT_S


@pytest.mark.parametrize("version", ["h1", "h2", "h3"])
def test_the_server_learns_its_body_acknowledged_cumulatively(version):
    """Acknowledgements (RFC 9293 section 3.4 / RFC 9000 section 13.2) reach the sender as
    cumulative body bytes: never decreasing, all of the body in the end, none before the
    body could make a round trip."""
    _, _, server = _exchange(version)
    acked = [(t, e.payload_bytes) for t, e in server if type(e) is DataAcked and e.payload_bytes]
    values = [b for _, b in acked]
    assert values == sorted(values) and values[-1] == BODY_BYTES
    assert acked[0][0] >= 1.5 * RTT_S  # request one way, response and its ACK a round trip
