"""The HOL study's model: header blocks encoded by the real codecs, framed as HTTP/3 over
the QUIC model or HTTP/2 over the TCP model (``http.blocks``, whose events say what
arrived when), and decoded where and when the transport delivers them (one simulator per
scheme; ``study.run`` drives it)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ... import compression
from ...engine import Simulator
from ...errors import InputError
from ...http.blocks import HeaderBlockConnection
from ...http.connection import reference_transport, transport_for
from ...http.events import (
    DecoderStreamReceived,
    EncoderStreamAcked,
    EncoderStreamReceived,
    HeaderBlockAcked,
    HeaderBlockArrived,
    HeaderBlockReceived,
)
from ...net.transport import TransportConfig, timer_counts

__all__ = ["HeaderItem", "SchemeRun"]


@dataclass(slots=True)
class HeaderItem:
    """One header list to send: who sends it, when, on which stream."""

    exchange: int
    kind: str  # "request" | "response"
    headers: tuple
    origin: str
    start_s: float | None  # None: a response sent when its request is decoded


# ---------------------------------------------------------------------------------------
# One direction's compression context


class _Side:
    """One direction of one connection: the encoder at the sender, the decoder at the
    receiver, and the records of its header blocks.  The wire moves the bytes."""

    def __init__(self, run: "SchemeRun", wire: HeaderBlockConnection, kind: str) -> None:
        p = run.params
        self.run, self.wire, self.kind = run, wire, kind
        # HPACK decodes in byte-stream order over TCP, in encode order over per-stream delivery.
        codec = dict(
            table_bytes=p.table_bytes,
            max_blocked=p.max_blocked,
            transport="tcp" if p.transport == "tcp" else "quic",
            cookie_crumbs=p.cookie_crumbs,
        )
        self.encoder = compression.make_encoder(run.scheme, **codec)
        self.decoder = compression.make_decoder(run.scheme, **codec)
        self.pending: dict[int, dict] = {}  # stream id -> record of a block not yet decoded
        self.seq_of: dict[int, int] = {}  # stream id -> seq, until its frame is acked
        self.buffered_bytes = 0
        self.max_buffered_bytes = 0

    # sender ----------------------------------------------------------------------------
    def send(self, stream_id: int, item: HeaderItem) -> None:
        unit = self.encoder.encode(stream_id, item.headers)
        if unit.encoder_stream:
            self.wire.send_instructions(self.kind, "encoder", unit.encoder_stream)
        frame_bytes = self.wire.send_block(self.kind, stream_id, unit.header_block)
        self.seq_of[stream_id] = unit.seq
        self.pending[stream_id] = {
            "scheme": self.run.scheme,
            "kind": item.kind,
            "exchange": item.exchange,
            "origin": item.origin,
            "stream_id": stream_id,
            "seq": unit.seq,
            "raw_bytes": unit.raw_bytes,
            "header_bytes": len(unit.header_block),
            "encoder_stream_bytes": len(unit.encoder_stream),
            "frame_bytes": frame_bytes,
            "may_block": bool(unit.may_block),
            "sent_s": self.run.sim.now,
            "arrived_s": math.nan,
            "delivered_s": math.nan,
            "decoded_s": math.nan,
            "_headers": item.headers,
        }

    def encoder_stream_acked(self, acked_offset: int) -> None:
        self.encoder.on_encoder_stream_acked(acked_offset)  # QCRAM's commit

    def block_acked(self, stream_id: int) -> None:
        seq = self.seq_of.pop(stream_id, None)
        if seq is not None:
            self.encoder.on_header_block_acked(seq)  # QCRAM may evict its references

    def decoder_instructions(self, data: bytes) -> None:
        self.encoder.feed_decoder_stream(data)

    # receiver --------------------------------------------------------------------------
    def block_arrived(self, stream_id: int, time_s: float) -> None:
        """Every byte of the block's frame is at the receiver (in order or not)."""
        record = self.pending.get(stream_id)
        if record is not None and math.isnan(record["arrived_s"]):
            record["arrived_s"] = time_s

    def block_delivered(self, stream_id: int, block: bytes, time_s: float) -> None:
        """The transport delivered the whole block in order: hand it to the decoder."""
        record = self.pending[stream_id]
        record["delivered_s"] = time_s
        if math.isnan(record["arrived_s"]):
            record["arrived_s"] = time_s
        self.buffered_bytes += len(block)
        self.max_buffered_bytes = max(self.max_buffered_bytes, self.buffered_bytes)
        decoded = self.decoder.feed_header_block(stream_id, block, record["seq"])
        if decoded is not None:
            self._decoded(decoded, time_s)
        for extra in self.decoder.take_unblocked():  # HPACK for QUIC: later blocks released
            self._decoded(extra, time_s)
        self._send_decoder_instructions()

    def encoder_instructions(self, data: bytes, time_s: float) -> None:
        for decoded in self.decoder.feed_encoder_stream(data):
            self._decoded(decoded, time_s)
        self._send_decoder_instructions()

    def _decoded(self, decoded, time_s: float) -> None:
        record = self.pending.pop(decoded.stream_id)
        original = record.pop("_headers")
        # The list given back as it was given passes the check at once (the check compares
        # the lists with their cookie crumbs joined); any other goes through it.
        if decoded.headers != original:
            compression.verify(
                original,
                decoded.headers,
                where=f"{self.run.scheme} {record['kind']} block on stream {decoded.stream_id}",
            )
        record["decoded_s"] = time_s
        self.buffered_bytes -= record["header_bytes"]
        self.run.blocks.append(record)
        self.run.on_decoded(record)

    def _send_decoder_instructions(self) -> None:
        data = self.decoder.take_decoder_stream()
        if data:
            self.wire.send_instructions(self.kind, "decoder", data)


class _Connection:
    """One origin's connection: its header blocks over a transport (``http.blocks``) and one
    ``_Side`` per direction, which the connection's events reach."""

    def __init__(self, run: "SchemeRun", wire: HeaderBlockConnection, path) -> None:
        self.run, self.wire, self.transport, self.path = run, wire, wire.transport, path
        self.sides: dict[str, _Side] = {}
        wire.on_event = self.on_event

    def side(self, kind: str) -> _Side:
        side = self.sides.get(kind)
        if side is None:
            side = self.sides[kind] = _Side(self.run, self.wire, kind)
        return side

    def on_event(self, event) -> None:
        side = self.side(event.kind)
        kind = type(event)
        if kind is HeaderBlockReceived:
            side.block_delivered(event.stream_id, event.block, event.time_s)
        elif kind is HeaderBlockArrived:
            side.block_arrived(event.stream_id, event.time_s)
        elif kind is EncoderStreamReceived:
            side.encoder_instructions(event.data, event.time_s)
        elif kind is DecoderStreamReceived:
            side.decoder_instructions(event.data)
        elif kind is HeaderBlockAcked:
            side.block_acked(event.stream_id)
        elif kind is EncoderStreamAcked:
            side.encoder_stream_acked(event.offset)


class SchemeRun:
    """One scheme over the whole trace: a simulator, one path and connection per origin."""

    def __init__(self, scheme: str, items: list[HeaderItem], params) -> None:
        self.scheme = scheme
        self.params = params
        self.sim = Simulator(seed=params.seed)
        self.items = items
        self.blocks: list[dict] = []
        self.connections: dict[str, _Connection] = {}
        self.responses: dict[int, HeaderItem] = {}

    def connection(self, origin: str) -> _Connection:
        """The connection for ``origin`` (made on first use: a path and a TCP, QUIC or 2017-model transport)."""
        conn = self.connections.get(origin)
        if conn is not None:
            return conn
        p = self.params
        n = len(self.connections)
        if p.transport == "ref2017":
            # Independent loss only (``HolParams`` says so where the value enters).
            transport = reference_transport(self.sim, p.network, name=f"ref2017-{n}")
            conn = self.connections[origin] = _Connection(self, HeaderBlockConnection.over(transport), None)
            return conn
        # HTTP/3 over the QUIC model, or HTTP/2 over the TCP model (``http.connection.transport_for``).
        path = p.network.path(self.sim, name=f"path{n}")
        transport = transport_for(
            self.sim, path, "h3" if p.transport == "quic" else "h2", TransportConfig(cc=p.cc), name=f"{p.transport}{n}"
        )
        wire = HeaderBlockConnection.over(transport)
        conn = self.connections[origin] = _Connection(self, wire, path)
        return conn

    def start(self, item: HeaderItem, stream_id: int | None = None) -> None:
        """Send header block ``item`` on ``stream_id`` (default: the client's next bidirectional stream)."""
        conn = self.connection(item.origin)
        if stream_id is None:
            # Requests (and, without requests, responses) use the client's next bidi stream.
            stream_id = conn.transport.client.open_stream()
        conn.side(item.kind).send(stream_id, item)

    def on_decoded(self, record: dict) -> None:
        """A header block was decoded: a decoded request sends its response (after ``think_s``)."""
        # Direction "both": the response goes out when its request has been decoded.
        if record["kind"] == "request":
            response = self.responses.get(record["exchange"])
            if response is None:
                return
            if self.params.think_s:
                self.sim.call_later(self.params.think_s, self.start, response, record["stream_id"])
            else:
                # No think time: the server writes the response while it handles the request,
                # so it leaves in the same packets as the decoder-stream instructions that
                # handling wrote (a QUIC stack sends after it has processed a datagram, as
                # aioquic's transmit() does), not in packets of its own a moment later.
                self.start(response, record["stream_id"])

    def execute(self) -> dict:
        """Run the whole trace; packets, losses, retransmissions, peak decoder buffer and connections."""
        self.responses = {it.exchange: it for it in self.items if it.kind == "response" and it.start_s is None}
        for it in self.items:
            if it.start_s is not None:
                self.sim.call_at(it.start_s, self.start, it)
        last_start = max((it.start_s for it in self.items if it.start_s is not None), default=0.0)
        self.sim.run(until_s=last_start + 3600.0)
        expected = len(self.items)
        if len(self.blocks) != expected:
            missing = expected - len(self.blocks)
            # Not a bug but a link too slow or lossy for the trace (--bw 1bit): said in one line.
            raise InputError(
                f"{self.scheme}: {missing} of {expected} header blocks were not decoded within "
                f"3600 s of simulated time after the last request (stopped at {self.sim.now:.3f} s); "
                "the link (--bw, --rtt, --loss) is too slow or lossy for this trace."
            )
        # Counted on the wire, the same way for both transports: every packet both ways
        # (acks included) and every packet the loss model or a full queue dropped.
        packets = losses = retransmissions = max_buffered = 0
        timers = timer_counts(conn.transport.stats() for conn in self.connections.values())
        for conn in self.connections.values():
            stats = conn.transport.stats()
            if conn.path is None:
                packets += stats["wire_packets"]
                losses += stats["wire_losses"]
            else:
                for link in (conn.path.forward, conn.path.reverse):
                    packets += link.stats.packets_sent
                    losses += link.stats.packets_lost + link.stats.packets_dropped
            retransmissions += stats.get("packets_lost", 0)
            for side in conn.sides.values():
                max_buffered = max(max_buffered, side.max_buffered_bytes)
        return {
            "packets": packets,
            "losses": losses,
            "retransmissions": retransmissions,
            **timers,
            "max_decoder_buffered_bytes": max_buffered,
            "connections": len(self.connections),
            "sim_end_s": self.sim.now,
        }
