"""HTTP connections between two nodes of a chain, over the transport models.

Written by hand.  A ``Segment`` is the HTTP connection(s) between a downstream node
(client or hop) and an upstream node (hop or origin) on its own simulated path
(``net.conditions.Network.path``).  Each connection is an ``http.connection.HttpConnection``
(the TCP model for HTTP/1.1 and HTTP/2, the QUIC model for HTTP/3, warm, bytes exact per
version, QPACK's blocked sections; see there); the segment turns its events into calls
on the exchanges.  HTTP/1.1 uses one exchange per connection at a time (no pipelining,
RFC 9112 section 9.3): a segment opens another warm connection on the same path when its
connections are busy.

An ``Exchange`` is one request and its response on one segment: the downstream node
gets ``response_*`` calls, the upstream node gets ``request`` and answers with
``respond_*`` (``chain`` has the nodes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine import Simulator
from ..http.connection import HttpConnection
from ..http.events import DataAcked, DataReceived, HeadersReceived, StreamEnded
from ..net.transport import timer_counts

if TYPE_CHECKING:
    from ..net.conditions import Network
    from .chain import ChainConfig

__all__ = ["Segment", "Exchange"]


class _Conn:
    """One HTTP connection of the segment (``http.connection``) and the exchanges on it."""

    def __init__(self, segment: "Segment", index: int) -> None:
        self.segment = segment
        self.version = segment.version
        config = segment.config
        self.busy = False
        self.http = HttpConnection(
            segment.sim,
            segment.path,
            self.version,
            cc=config.cc,
            qpack_table_bytes=config.qpack_table_bytes,
            qpack_blocked_streams=config.qpack_blocked_streams,
            name=f"{segment.name}/c{index}",
        )
        self.transport = self.http.transport
        self.client, self.server = self.http.client, self.http.server
        self.requests: dict[int, Exchange] = {}  # stream id -> exchange, as the client sees it
        self.responses: dict[int, Exchange] = {}  # stream id -> exchange, as the server sees it
        self.client.on_event = self._client_event
        self.server.on_event = self._server_event

    def _client_event(self, event) -> None:
        ex = self.requests[event.stream_id]
        if type(event) is DataReceived:
            ex.on_data(event.length)
        elif type(event) is HeadersReceived:
            if event.trailers:
                ex.on_trailers(event.headers)
            else:
                ex.on_head(event.headers)
        elif type(event) is StreamEnded:
            ex.on_end()

    def _server_event(self, event) -> None:
        if type(event) is HeadersReceived:  # a request's header section
            ex = self.responses[event.stream_id] = self.segment.pending.pop((id(self), event.stream_id))
            ex.on_request(event.headers)
        elif type(event) is DataAcked:
            ex = self.responses.get(event.stream_id)
            if ex is not None:
                ex.on_acked(event.payload_bytes)
        # a request's data and end need nothing


class Exchange:
    """One request and its response on one segment.  The downstream node (client or hop)
    gets ``response_*`` calls; the upstream node (hop or origin) gets ``request`` and
    answers with ``respond_*``."""

    def __init__(self, segment: "Segment", conn: _Conn, stream_id: int, tag: int, downstream) -> None:
        self.segment = segment
        self.conn = conn
        self.stream_id = stream_id
        self.tag = tag  # the response index, carried out of band along the chain
        self.downstream = downstream
        self.chunked = False  # HTTP/1.1 response body in chunked coding
        self.ended = False
        self.on_acked_payload = None  # set by the upstream node to learn acknowledged body bytes
        self.bytes = {
            "head": 0,
            "data_framing": 0,
            "body": 0,
            "trailers": 0,
            "end": 0,
            "head_encoder": 0,
            "trailer_encoder": 0,
        }

    # -- events from the connection ------------------------------------------------------
    def on_request(self, headers) -> None:
        """The request head arrived upstream: hand it to the upstream node."""
        self.segment.upstream.request(self, headers, self.segment.sim.now)

    def on_head(self, headers) -> None:
        """The response head arrived downstream: hand it to the downstream node."""
        self.downstream.response_head(self, headers, self.segment.sim.now)

    def on_data(self, nbytes: int) -> None:
        """``nbytes`` of response body arrived downstream: hand them to the downstream node."""
        self.downstream.response_data(self, nbytes, self.segment.sim.now)

    def on_trailers(self, fields) -> None:
        """The response trailers arrived downstream: hand them to the downstream node."""
        self.downstream.response_trailers(self, fields, self.segment.sim.now)

    def on_end(self) -> None:
        """The response ended: free the connection for the next request and tell the downstream node."""
        self.ended = True
        self.conn.busy = False
        self.downstream.response_end(self, self.segment.sim.now)

    def on_acked(self, payload_acked: int) -> None:
        """The transport acknowledged ``payload_acked`` response payload bytes: tell the listener, if any."""
        if self.on_acked_payload is not None:
            self.on_acked_payload(payload_acked)

    # -- the upstream node answers -------------------------------------------------------
    def respond_head(self, headers, *, end: bool = False) -> None:
        """Send the response head (h1: chunked when it has no Content-Length); ``end`` ends the response."""
        self.chunked = self.conn.version == "h1" and not any(n == b"content-length" for n, _ in headers)
        size = self.conn.server.send_section(self.stream_id, "head", headers, chunked=self.chunked, end=end)
        self.bytes["head"] += size["wire"]
        self.bytes["head_encoder"] += size["encoder"]
        if end:
            self._end(already_fin=True)

    def respond_data(self, nbytes: int, *, end: bool = False) -> None:
        """Send ``nbytes`` of body; ``end`` ends the response with them (END_STREAM / FIN / last chunk)."""
        if nbytes <= 0 and not end:
            return
        if nbytes > 0:
            self.bytes["data_framing"] += self.conn.server.send_data(
                self.stream_id, nbytes, chunked=self.chunked, end=end
            )
            self.bytes["body"] += nbytes
        if end:
            # h1 Content-Length / h2 END_STREAM on the last DATA / h3 FIN with it; h1 chunked: last chunk
            self._end(already_fin=nbytes > 0 and not self.chunked)

    def respond_trailers(self, fields) -> None:
        """Send the trailer section, which ends the response (RFC 9110 6.5)."""
        size = self.conn.server.send_section(self.stream_id, "trailers", fields, chunked=self.chunked, end=True)
        self.bytes["trailers"] += size["wire"]
        self.bytes["trailer_encoder"] += size["encoder"]
        self._end(already_fin=True)

    def respond_end(self) -> None:
        """End the response with no more bytes (an empty END_STREAM DATA, FIN or last chunk)."""
        self._end(already_fin=False)

    def _end(self, *, already_fin: bool) -> None:
        self.bytes["end"] += self.conn.server.send_end(self.stream_id, chunked=self.chunked, already_fin=already_fin)


class Segment:
    """The HTTP connection(s) between a downstream node and an upstream node on one path."""

    def __init__(self, sim: Simulator, config: ChainConfig, name: str, *, network: Network, upstream) -> None:
        self.sim = sim
        self.config = config
        self.version = config.version
        self.name = name
        self.path = network.path(sim, name=f"{name}/path")
        self.upstream = upstream
        self.conns: list[_Conn] = []
        self.pending: dict[tuple[int, int], Exchange] = {}

    def _conn(self) -> _Conn:
        if self.version != "h1":
            if not self.conns:
                self.conns.append(_Conn(self, 0))
            return self.conns[0]
        for conn in self.conns:  # RFC 9112 section 9.3: one exchange at a time
            if not conn.busy:
                return conn
        self.conns.append(_Conn(self, len(self.conns)))
        return self.conns[-1]

    def request(self, headers, *, downstream, tag: int) -> Exchange:
        """Send a request head (h1: on a free connection or a new one, RFC 9112 9.3); the Exchange it starts."""
        conn = self._conn()
        conn.busy = True
        sid = conn.client.open_stream()
        ex = Exchange(self, conn, sid, tag, downstream)
        conn.requests[sid] = ex
        self.pending[(id(conn), sid)] = ex
        conn.client.send_section(sid, "head", headers, end=True)
        conn.client.send_end(sid, chunked=False, already_fin=True)
        return ex

    def stats(self) -> dict:
        """Packets sent and lost (or dropped) on both links of the path, connections opened,
        and the transports' retransmission timer counts (``transport.TIMER_KEYS``)."""
        packets = lost = 0
        for link in (self.path.forward, self.path.reverse):
            packets += link.stats.packets_sent
            lost += link.stats.packets_lost + link.stats.packets_dropped
        return {
            "packets": packets,
            "lost": lost,
            "connections": len(self.conns),
            **timer_counts(c.transport.stats() for c in self.conns),
        }
