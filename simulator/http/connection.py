"""HTTP/1.1, HTTP/2 and HTTP/3 over the transport models, as one connection with events out.

Written by hand.  An ``HttpConnection`` is one HTTP connection on a simulated path
(``net.conditions.Network.path``): the TCP model for HTTP/1.1 and HTTP/2, the QUIC model
for HTTP/3, with a ``client`` and a ``server`` ``HttpEnd``.  As h2's ``H2Connection`` and
aioquic's ``H3Connection``, an end is driven by calls (``send_section``, ``send_data``,
``send_end``) and reports what happened as events (``HeadersReceived``, ``DataReceived``,
``StreamEnded``, and ``DataAcked`` for a sender that paces itself on acknowledgements);
in virtual time they are handed to ``end.on_event`` as they happen rather than returned
from a ``receive_data`` call.

Connections are warm: no handshake, but each transport starts with one RTT sample of its
path, as after a handshake.  Bytes on the wire are exact per version (``framing.Framer``,
real HPACK / QPACK encoders); the transports carry placeholder bytes of those lengths, and
each receiver keeps the list of what was written (header section, body write, trailer
section, end of message) to know what it holds as bytes arrive in order, decoding every
section with the real decoder (``framing.Unframer``) when its last byte arrives.  HTTP/3
encoder- and decoder-stream instructions travel on their own unidirectional streams, so a
section whose inserts are late is blocked (RFC 9204 section 2.1.2) and its event waits.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from ..engine import Simulator
from ..net.quic import QuicConnection
from ..net.ref2017 import Ref2017Connection
from ..net.tcp import TcpConnection
from ..net.transport import TransportConfig, write_padding
from .events import DataAcked, DataReceived, Event, HeadersReceived, StreamEnded, ignore
from .framing import Framer, Section, Unframer

__all__ = ["ModelConnection", "HttpConnection", "HttpEnd", "transport_for", "reference_transport"]


class _Unit:
    """Something a sender wrote on a stream, as its receiver will find it."""

    __slots__ = ("kind", "start", "end", "payload", "prefix", "seen", "section", "fields", "fin_only", "data")

    def __init__(
        self,
        kind: str,
        start: int,
        end: int,
        *,
        payload: int = 0,
        prefix: int = 0,
        section: Section | None = None,
        fields=None,
        fin_only: bool = False,
        data: bytes = b"",
    ) -> None:
        self.kind = kind  # head | data | trailers | end | qpack-encoder | qpack-decoder
        self.start = start
        self.end = end
        self.payload = payload  # data: body bytes inside
        self.prefix = prefix  # data: framing bytes before them
        self.seen = 0  # data: body bytes already handed on
        self.section = section
        self.fields = fields
        self.fin_only = fin_only  # HTTP/3 end of message: the stream's FIN, no bytes
        self.data = data  # QPACK instructions


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
        self.data_units: list[tuple[int, int, int]] = []  # (start, prefix, payload)
        self.next_unit = 0
        self.acked_payload = 0


class HttpEnd:
    """One end of an ``HttpConnection``: the framer of what it sends, the unframer of what
    it receives, and its events (``on_event``, called with each as it happens)."""

    def __init__(self, conn: "HttpConnection", transport_end, *, is_client: bool) -> None:
        self.conn = conn
        self.t = transport_end
        self.is_client = is_client
        self.framer = Framer(
            conn.version, qpack_table_bytes=conn.qpack_table_bytes, qpack_blocked_streams=conn.qpack_blocked_streams
        )
        self.unframer = Unframer(
            conn.version, qpack_table_bytes=conn.qpack_table_bytes, qpack_blocked_streams=conn.qpack_blocked_streams
        )
        self.peer: HttpEnd | None = None
        self.rx: dict[int, _Rx] = {}
        self.tx: dict[int, _Tx] = {}
        self.on_event: Callable[[Event], None] = ignore
        self.encoder_stream = self.decoder_stream = -1
        transport_end.on_data = self._on_data
        transport_end.on_stream_acked = self._on_acked

    def open_qpack_streams(self) -> None:
        """Open this end's QPACK encoder and decoder streams."""
        # RFC 9204 section 4.2: each end's encoder and decoder streams (unidirectional).
        self.encoder_stream = self.t.open_stream(unidirectional=True)
        self.decoder_stream = self.t.open_stream(unidirectional=True)
        if self.framer.setup:
            self._write(self.encoder_stream, _Unit("qpack-encoder", 0, 0, data=self.framer.setup))

    def open_stream(self) -> int:
        """A new bidirectional stream of this end (a request's)."""
        return self.t.open_stream()

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
            write_padding(self.t, stream_id, size, end=end)  # a body's size, not its bytes
        return size

    def send_section(self, stream_id: int, kind: str, headers, *, chunked: bool = False, end: bool = False) -> dict:
        """Send a ``head`` or ``trailers`` section; its wire and encoder-stream sizes."""
        framer = self.framer
        section = (
            framer.head(stream_id, headers, chunked=chunked) if kind == "head" else framer.trailers(stream_id, headers)
        )
        if section.encoder:
            self._write(self.encoder_stream, _Unit("qpack-encoder", 0, 0, data=section.encoder))
        self._write(
            stream_id,
            _Unit(kind, 0, section.wire_bytes, section=section, fields=tuple(headers)),
            end=end and self.conn.version == "h3",
        )
        return {"wire": section.wire_bytes, "encoder": len(section.encoder)}

    def send_data(self, stream_id: int, nbytes: int, *, chunked: bool, end: bool) -> int:
        """Send ``nbytes`` of body (padding of that size, framed); the framing bytes added."""
        before, after = self.framer.data_overhead(nbytes, chunked=chunked)
        self._write(
            stream_id,
            _Unit("data", 0, before + nbytes + after, payload=nbytes, prefix=before),
            end=end and self.conn.version == "h3",
        )
        return before + after

    def send_end(self, stream_id: int, *, chunked: bool, already_fin: bool) -> int:
        """The end of a message: HTTP/1.1 last chunk, HTTP/2 empty DATA + END_STREAM, HTTP/3 FIN
        (written with the last frame when ``already_fin``)."""
        version = self.conn.version
        if version == "h3":
            self._write(stream_id, _Unit("end", 0, 0, fin_only=True), end=not already_fin)
            return 0
        if already_fin:  # h1 Content-Length body done / h2 END_STREAM already sent
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
        if end:
            rx.fin = True
        self._process(stream_id, rx)

    def _process(self, stream_id: int, rx: _Rx | None = None) -> None:
        if rx is None:
            rx = self.rx[stream_id]
        units = rx.units
        delivered = rx.delivered
        while units and rx.blocked is None:
            u = units[0]
            if u.kind == "data":
                # body bytes of this write delivered so far: past its framing, at most its payload
                got = delivered - u.start - u.prefix
                if got > u.payload:
                    got = u.payload
                if got > u.seen:
                    self.on_event(DataReceived(stream_id, got - u.seen))
                    u.seen = got
                if delivered < u.end:
                    return
                units.popleft()
                continue
            if delivered < u.end or (u.fin_only and not rx.fin):
                return
            units.popleft()
            if u.kind in ("head", "trailers"):
                decoded, control = self.unframer.decode(stream_id, u.section, u.fields)
                self._decoder_instructions(control)
                if not decoded:
                    rx.blocked = u  # stream processing waits for encoder-stream inserts
                    return
                self._section(stream_id, u)
            elif u.kind == "end":
                self.on_event(StreamEnded(stream_id))
            elif u.kind == "qpack-encoder":
                for sid in self.unframer.feed_encoder(u.data):
                    self._unblock(sid)
            elif u.kind == "qpack-decoder":
                self.framer.feed_decoder(u.data)

    def _section(self, stream_id: int, u: _Unit) -> None:
        self.on_event(HeadersReceived(stream_id, u.fields, trailers=u.kind == "trailers"))

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
        if tx is None or self.is_client:  # only response bodies are tracked
            return
        units, i, acked = tx.data_units, tx.next_unit, 0
        n = len(units)
        while i < n:
            start, prefix, payload = units[i]
            if acked_offset >= start + prefix + payload:
                tx.acked_payload += payload
                i += 1
                continue
            acked = acked_offset - start - prefix  # below start + prefix + payload here
            if acked < 0:
                acked = 0
            break
        tx.next_unit = i
        self.on_event(DataAcked(stream_id, tx.acked_payload + acked))


def transport_for(sim: Simulator, path, version: str, config: TransportConfig, *, name: str, **options):
    """The transport model that carries HTTP ``version`` on ``path``: the QUIC model for h3,
    the TCP model for h1 and h2 (``options``: the model's own, e.g. ``handshake``).  Every
    HTTP connection over the models gets its transport here."""
    if version == "h3":
        return QuicConnection(sim, path, config, name=name, **options)
    return TcpConnection(sim, path, config, name=name, **options)


def reference_transport(sim: Simulator, network, *, name: str) -> Ref2017Connection:
    """The 2017 HOL simulator's network model (``net.ref2017``) on ``network``: its RTT,
    independent loss and reordering jitter; it has no path, bandwidth or queue.  The one
    place besides ``transport_for`` where HTTP gets a transport."""
    jitter = network.jitter
    return Ref2017Connection(
        sim,
        rtt_s=network.rtt_s,
        loss_p=network.loss.p,
        reorder_prob=jitter.prob if jitter is not None else 0.0,
        reorder_max_s=jitter.max_s if jitter is not None else 0.100,
        name=name,
    )


class ModelConnection:
    """An HTTP connection of ``version`` over a transport model (TCP, QUIC, or the 2017
    reference network, whose ends offer the same calls): the transport and its two ends,
    and ``on_event``, which the connection's ``http.events`` reach.  ``HttpConnection``
    (whole messages) and ``http.blocks``' connections (header blocks) are built on it."""

    def __init__(self, transport, version: str) -> None:
        self.transport = transport
        self.version = version
        self.on_event: Callable[[Event], None] = ignore

    def bind(self, on_data, on_stream_acked) -> None:
        """Have both transport ends call ``on_data(end, ...)`` and ``on_stream_acked(end, ...)``."""
        for end in (self.transport.client, self.transport.server):
            end.on_data = _bound(on_data, end)
            end.on_stream_acked = _bound(on_stream_acked, end)

    def sender(self, kind: str):
        """The transport end that sends ``kind`` ("request" or "response") messages or blocks."""
        return self.transport.client if kind == "request" else self.transport.server

    def receiver(self, kind: str):
        """The transport end that receives ``kind`` messages or blocks."""
        return self.transport.server if kind == "request" else self.transport.client

    @staticmethod
    def incoming(endpoint) -> str:
        """The kind of what arrives at transport end ``endpoint``: responses at the client."""
        return "response" if endpoint.is_client else "request"

    @staticmethod
    def outgoing(endpoint) -> str:
        """What transport end ``endpoint`` sends: requests from the client, responses from the server."""
        return "request" if endpoint.is_client else "response"


def _bound(method, endpoint):
    return lambda *args: method(endpoint, *args)


class HttpConnection(ModelConnection):
    """One warm HTTP connection of ``version`` (h1, h2, h3) on ``path``: ``client`` and ``server``
    ends, each with its own ``on_event``."""

    def __init__(
        self,
        sim: Simulator,
        path,
        version: str,
        *,
        cc: str = "reno",
        qpack_table_bytes: int = 4096,
        qpack_blocked_streams: int = 16,
        name: str = "http",
    ) -> None:
        self.qpack_table_bytes, self.qpack_blocked_streams = qpack_table_bytes, qpack_blocked_streams
        # aioquic's defaults where they differ from RFC 9002: initial RTT 100 ms.
        config = TransportConfig(cc=cc, initial_rtt_s=0.1) if version == "h3" else TransportConfig(cc=cc)
        super().__init__(transport_for(sim, path, version, config, name=name), version)
        # Warm: one RTT sample of the path, as the handshake would have given it (RFC 6298
        # section 2.2, RFC 9002 section 5.2), so a loss costs what it costs on a live
        # connection (not the 1 s initial RTO or a PTO from the default initial RTT).
        for end in (self.transport.client, self.transport.server):
            end.rtt.update(path.rtt_s)
        self.client = HttpEnd(self, self.transport.client, is_client=True)
        self.server = HttpEnd(self, self.transport.server, is_client=False)
        self.client.peer, self.server.peer = self.server, self.client
        if version == "h3":
            self.client.open_qpack_streams()
            self.server.open_qpack_streams()
