"""HTTP connections between two nodes of a chain, over the transport models.

Written by hand.  A ``Segment`` is the HTTP connection(s) between a downstream node
(client or hop) and an upstream node (hop or origin) on its own simulated path
(``net.link.Path``): the TCP model for HTTP/1.1 and HTTP/2, the QUIC model for HTTP/3.
Connections are warm: no handshake, but each transport starts with one RTT sample of
its path, as after a handshake (the real-stack runs start after theirs).

Bytes on the wire are exact per version (``framing.Framer``, real HPACK / QPACK
encoders); the transports carry placeholder bytes of those lengths, and each receiver
keeps the list of what was written (header section, body write, trailer section, end
of message) to know what it holds as bytes arrive in order, decoding every section
with the real decoder (``framing.Unframer``) when its last byte arrives.  HTTP/3
encoder- and decoder-stream instructions travel on their own unidirectional streams,
so a section whose inserts are late is blocked (RFC 9204 section 2.1.2).  HTTP/1.1
uses one exchange per connection at a time (no pipelining, RFC 9112 section 9.3): a
segment opens another warm connection on the same path when its connections are busy.

An ``Exchange`` is one request and its response on one segment: the downstream node
gets ``response_*`` calls, the upstream node gets ``request`` and answers with
``respond_*`` (``chain`` has the nodes).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..engine import Simulator
from ..http.framing import Framer, Section, Unframer
from ..net.quic import QuicConnection
from ..net.tcp import TcpConnection
from ..net.transport import TransportConfig, timer_counts

if TYPE_CHECKING:
    from ..net.conditions import Network
    from .chain import ChainConfig

__all__ = ["Segment", "Exchange"]


class _Unit:
    """Something a sender wrote on a stream, as its receiver will find it."""

    __slots__ = ("kind", "start", "end", "payload", "prefix", "seen", "section", "fields", "fin_only", "data")

    def __init__(self, kind: str, start: int, end: int, *, payload: int = 0, prefix: int = 0,
                 section: Section | None = None, fields=None, fin_only: bool = False, data: bytes = b"") -> None:
        self.kind = kind            # head | data | trailers | end | qpack-encoder | qpack-decoder
        self.start = start
        self.end = end
        self.payload = payload      # data: body bytes inside
        self.prefix = prefix        # data: framing bytes before them
        self.seen = 0               # data: body bytes already handed on
        self.section = section
        self.fields = fields
        self.fin_only = fin_only    # HTTP/3 end of message: the stream's FIN, no bytes
        self.data = data            # QPACK instructions


class _Rx:
    __slots__ = ("delivered", "fin", "units", "blocked")

    def __init__(self) -> None:
        self.delivered = 0
        self.fin = False
        self.units: deque[_Unit] = deque()
        self.blocked: _Unit | None = None


class _Tx:
    __slots__ = ("offset", "data_units", "next_unit", "acked_payload")

    def __init__(self) -> None:
        self.offset = 0
        self.data_units: list[tuple[int, int, int]] = []     # (start, prefix, payload)
        self.next_unit = 0
        self.acked_payload = 0


class _End:
    """One end of a connection: the framer of what it sends, the unframer of what it receives."""

    def __init__(self, conn: "_Conn", transport_end, *, is_client: bool) -> None:
        self.conn = conn
        self.t = transport_end
        self.is_client = is_client
        cfg = conn.config
        self.framer = Framer(conn.version, qpack_table_bytes=cfg.qpack_table_bytes,
                             qpack_blocked_streams=cfg.qpack_blocked_streams)
        self.unframer = Unframer(conn.version, qpack_table_bytes=cfg.qpack_table_bytes,
                                 qpack_blocked_streams=cfg.qpack_blocked_streams)
        self.peer: _End | None = None
        self.rx: dict[int, _Rx] = {}
        self.tx: dict[int, _Tx] = {}
        self.exchanges: dict[int, "Exchange"] = {}
        self.encoder_stream = self.decoder_stream = -1
        transport_end.on_data = self._on_data
        transport_end.on_stream_acked = self._on_acked

    def open_qpack_streams(self) -> None:
        # RFC 9204 section 4.2: each end's encoder and decoder streams (unidirectional).
        self.encoder_stream = self.t.open_stream(unidirectional=True)
        self.decoder_stream = self.t.open_stream(unidirectional=True)
        if self.framer.setup:
            self._write(self.encoder_stream, _Unit("qpack-encoder", 0, 0, data=self.framer.setup))

    # -- sending -----------------------------------------------------------------------
    def _write(self, stream_id: int, unit: _Unit, *, end: bool = False) -> int:
        tx = self.tx.get(stream_id)
        if tx is None:
            tx = self.tx[stream_id] = _Tx()
        size = len(unit.data) if unit.kind.startswith("qpack") else unit.end - unit.start
        unit.start = tx.offset
        unit.end = tx.offset + size
        tx.offset += size
        if unit.kind == "data":
            tx.data_units.append((unit.start, unit.prefix, unit.payload))
        rx = self.peer.rx.get(stream_id)
        if rx is None:
            rx = self.peer.rx[stream_id] = _Rx()
        rx.units.append(unit)
        if size or end:
            self.t.write(stream_id, b"\0" * size, end=end)
        return size

    def send_section(self, stream_id: int, kind: str, headers, *, chunked: bool = False, end: bool = False) -> dict:
        framer = self.framer
        section = framer.head(stream_id, headers, chunked=chunked) if kind == "head" else \
            framer.trailers(stream_id, headers)
        if section.encoder:
            self._write(self.encoder_stream, _Unit("qpack-encoder", 0, 0, data=section.encoder))
        self._write(stream_id, _Unit(kind, 0, section.wire_bytes, section=section, fields=tuple(headers)),
                    end=end and self.conn.version == "h3")
        return {"wire": section.wire_bytes, "encoder": len(section.encoder)}

    def send_data(self, stream_id: int, nbytes: int, *, chunked: bool, end: bool) -> int:
        before, after = self.framer.data_overhead(nbytes, chunked=chunked)
        self._write(stream_id, _Unit("data", 0, before + nbytes + after, payload=nbytes, prefix=before),
                    end=end and self.conn.version == "h3")
        return before + after

    def send_end(self, stream_id: int, *, chunked: bool, already_fin: bool) -> int:
        """The end of a message: HTTP/1.1 last chunk, HTTP/2 empty DATA + END_STREAM, HTTP/3 FIN
        (written with the last frame when ``already_fin``)."""
        version = self.conn.version
        if version == "h3":
            self._write(stream_id, _Unit("end", 0, 0, fin_only=True), end=not already_fin)
            return 0
        if already_fin:                  # h1 Content-Length body done / h2 END_STREAM already sent
            self._write(stream_id, _Unit("end", 0, 0))
            return 0
        n = self.framer.end_bytes(chunked=chunked)
        self._write(stream_id, _Unit("end", 0, n))
        return n

    # -- receiving ---------------------------------------------------------------------
    def _on_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        rx = self.rx.get(stream_id)
        if rx is None:
            rx = self.rx[stream_id] = _Rx()
        rx.delivered += len(data)
        rx.fin = rx.fin or end
        self._process(stream_id)

    def _process(self, stream_id: int) -> None:
        rx = self.rx[stream_id]
        units = rx.units
        while units and rx.blocked is None:
            u = units[0]
            if u.kind == "data":
                got = min(max(rx.delivered - u.start - u.prefix, 0), u.payload)
                if got > u.seen:
                    if self.is_client:
                        self.exchanges[stream_id].on_data(got - u.seen)
                    u.seen = got
                if rx.delivered < u.end:
                    return
                units.popleft()
                continue
            if rx.delivered < u.end or (u.fin_only and not rx.fin):
                return
            units.popleft()
            if u.kind in ("head", "trailers"):
                decoded, control = self.unframer.decode(stream_id, u.section, u.fields)
                self._decoder_instructions(control)
                if not decoded:
                    rx.blocked = u            # stream processing waits for encoder-stream inserts
                    return
                self._section(stream_id, u)
            elif u.kind == "end":
                if self.is_client:                          # a request's end needs nothing
                    self.exchanges[stream_id].on_end()
            elif u.kind == "qpack-encoder":
                for sid in self.unframer.feed_encoder(u.data):
                    self._unblock(sid)
            elif u.kind == "qpack-decoder":
                self.framer.feed_decoder(u.data)

    def _section(self, stream_id: int, u: _Unit) -> None:
        if not self.is_client:                             # a request's header section
            self.conn.accept(self, stream_id).on_request(u.fields)
        elif u.kind == "head":
            self.exchanges[stream_id].on_head(u.fields)
        else:
            self.exchanges[stream_id].on_trailers(u.fields)

    def _unblock(self, stream_id: int) -> None:
        rx = self.rx[stream_id]
        u = rx.blocked
        if u is None:
            return
        rx.blocked = None
        self._decoder_instructions(self.unframer.resume(stream_id, u.fields))
        self._section(stream_id, u)
        self._process(stream_id)

    def _decoder_instructions(self, control: bytes) -> None:
        if control:
            self._write(self.decoder_stream, _Unit("qpack-decoder", 0, 0, data=control))

    def _on_acked(self, stream_id: int, acked_offset: int) -> None:
        tx = self.tx.get(stream_id)
        ex = self.exchanges.get(stream_id)
        if tx is None or ex is None or self.is_client:      # only response bodies are tracked
            return
        units, i, acked = tx.data_units, tx.next_unit, 0
        while i < len(units):
            start, prefix, payload = units[i]
            if acked_offset >= start + prefix + payload:
                tx.acked_payload += payload
                i += 1
                continue
            acked = min(max(acked_offset - start - prefix, 0), payload)
            break
        tx.next_unit = i
        ex.on_acked(tx.acked_payload + acked)


class _Conn:
    def __init__(self, segment: "Segment", index: int) -> None:
        self.segment = segment
        self.version = segment.version
        self.config = segment.config
        self.busy = False
        name = f"{segment.name}/c{index}"
        sim = segment.sim
        if self.version == "h3":
            # aioquic's defaults where they differ from RFC 9002: initial RTT 100 ms.
            tcfg = TransportConfig(cc=self.config.cc, initial_rtt_s=0.1)
            self.transport = QuicConnection(sim, segment.path, tcfg, name=name)
        else:
            self.transport = TcpConnection(sim, segment.path, TransportConfig(cc=self.config.cc), name=name)
        # Warm: one RTT sample of the path, as the handshake would have given it (RFC 6298
        # section 2.2, RFC 9002 section 5.2), so a loss costs what it costs on a live
        # connection (not the 1 s initial RTO or a PTO from the default initial RTT).
        for end in (self.transport.client, self.transport.server):
            end.rtt.update(segment.path.rtt_s)
        self.client = _End(self, self.transport.client, is_client=True)
        self.server = _End(self, self.transport.server, is_client=False)
        self.client.peer, self.server.peer = self.server, self.client
        if self.version == "h3":
            self.client.open_qpack_streams()
            self.server.open_qpack_streams()

    def accept(self, end: _End, stream_id: int) -> "Exchange":
        ex = self.segment.pending.pop((id(self), stream_id))
        end.exchanges[stream_id] = ex
        return ex


class Exchange:
    """One request and its response on one segment.  The downstream node (client or hop)
    gets ``response_*`` calls; the upstream node (hop or origin) gets ``request`` and
    answers with ``respond_*``."""

    def __init__(self, segment: "Segment", conn: _Conn, stream_id: int, tag: int, downstream) -> None:
        self.segment = segment
        self.conn = conn
        self.stream_id = stream_id
        self.tag = tag                      # the response index, carried out of band along the chain
        self.downstream = downstream
        self.chunked = False                # HTTP/1.1 response body in chunked coding
        self.ended = False
        self.on_acked_payload = None        # set by the upstream node to learn acknowledged body bytes
        self.bytes = {"head": 0, "data_framing": 0, "body": 0, "trailers": 0, "end": 0,
                      "head_encoder": 0, "trailer_encoder": 0}

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
            self.bytes["data_framing"] += self.conn.server.send_data(self.stream_id, nbytes, chunked=self.chunked,
                                                                    end=end)
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
        for conn in self.conns:                     # RFC 9112 section 9.3: one exchange at a time
            if not conn.busy:
                return conn
        self.conns.append(_Conn(self, len(self.conns)))
        return self.conns[-1]

    def request(self, headers, *, downstream, tag: int) -> Exchange:
        """Send a request head (h1: on a free connection or a new one, RFC 9112 9.3); the Exchange it starts."""
        conn = self._conn()
        conn.busy = True
        sid = conn.client.t.open_stream()
        ex = Exchange(self, conn, sid, tag, downstream)
        conn.client.exchanges[sid] = ex
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
        return {"packets": packets, "lost": lost, "connections": len(self.conns),
                **timer_counts(c.transport.stats() for c in self.conns)}
