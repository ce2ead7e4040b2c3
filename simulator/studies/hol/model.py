"""The HOL study's model: header blocks encoded by the real codecs, framed as HTTP/3 over
the QUIC model or HTTP/2 over the TCP model, and decoded where and when the transport
delivers them (one simulator per scheme; ``study.run`` drives it)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from ...engine import Simulator
from ...errors import InputError
from ...frames import H2Scanner, H3Scanner, h2_frame, h3_frame
from ...http.framing import H2_MAX_FRAME_BYTES
from ...net.transport import TransportConfig, timer_counts
from ...traces.model import raw_size

__all__ = ["HeaderItem", "SchemeRun"]


@dataclass(slots=True)
class HeaderItem:
    """One header list to send: who sends it, when, on which stream."""

    exchange: int
    kind: str                 # "request" | "response"
    headers: tuple
    origin: str
    start_s: float | None     # None: a response sent when its request is decoded



# ---------------------------------------------------------------------------------------
# One direction's compression context


class _Side:
    """One direction of one connection: the encoder at the sender, the decoder at the
    receiver, and the records of its header blocks.  The wire moves the bytes."""

    def __init__(self, run: "SchemeRun", wire: "_Wire", kind: str) -> None:
        from ... import compression

        p = run.params
        self.run, self.wire, self.kind = run, wire, kind
        # HPACK decodes in byte-stream order over TCP, in encode order over per-stream delivery.
        codec = dict(table_bytes=p.table_bytes, max_blocked=p.max_blocked,
                     transport="tcp" if p.transport == "tcp" else "quic", cookie_crumbs=p.cookie_crumbs)
        self.encoder = compression.make_encoder(run.scheme, **codec)
        self.decoder = compression.make_decoder(run.scheme, **codec)
        self.pending: dict[int, dict] = {}        # stream id -> record of a block not yet decoded
        self.seq_of: dict[int, int] = {}          # stream id -> seq, until its frame is acked
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
            "scheme": self.run.scheme, "kind": item.kind, "exchange": item.exchange, "origin": item.origin,
            "stream_id": stream_id, "seq": unit.seq, "raw_bytes": raw_size(item.headers),
            "header_bytes": len(unit.header_block), "encoder_stream_bytes": len(unit.encoder_stream),
            "frame_bytes": frame_bytes, "may_block": bool(unit.may_block),
            "sent_s": self.run.sim.now, "arrived_s": math.nan, "delivered_s": math.nan, "decoded_s": math.nan,
            "_headers": item.headers,
        }

    def encoder_stream_acked(self, acked_offset: int) -> None:
        self.encoder.on_encoder_stream_acked(acked_offset)     # QCRAM's commit

    def block_acked(self, stream_id: int) -> None:
        seq = self.seq_of.pop(stream_id, None)
        if seq is not None:
            self.encoder.on_header_block_acked(seq)          # QCRAM may evict its references

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
        for extra in self.decoder.take_unblocked():          # HPACK for QUIC: later blocks released
            self._decoded(extra, time_s)
        self._send_decoder_instructions()

    def encoder_instructions(self, data: bytes, time_s: float) -> None:
        for decoded in self.decoder.feed_encoder_stream(data):
            self._decoded(decoded, time_s)
        self._send_decoder_instructions()

    def _decoded(self, decoded, time_s: float) -> None:
        from ... import compression

        record = self.pending.pop(decoded.stream_id)
        compression.verify(record.pop("_headers"), decoded.headers,
                           where=f"{self.run.scheme} {record['kind']} block on stream {decoded.stream_id}")
        record["decoded_s"] = time_s
        self.buffered_bytes -= record["header_bytes"]
        self.run.blocks.append(record)
        self.run.on_decoded(record)

    def _send_decoder_instructions(self) -> None:
        data = self.decoder.take_decoder_stream()
        if data:
            self.wire.send_instructions(self.kind, "decoder", data)


# ---------------------------------------------------------------------------------------
# The wire: HTTP/3 framing over the QUIC model, HTTP/2 framing over the TCP model.
# Receivers find frame boundaries with the frame scanner (C when built).


class _Wire:
    """Frames a connection's header blocks and instructions, and routes what arrives to the
    side it belongs to.  ``kind`` names a direction: "request" (client to server) or
    "response"; the encoder of a kind sits at its sender, the decoder at its receiver."""

    def __init__(self, run: "SchemeRun", transport) -> None:
        self.run = run
        self.transport = transport
        self.sides: dict[str, _Side] = {}
        for endpoint in (transport.client, transport.server):
            endpoint.on_data = self._bind(self.on_data, endpoint)
            endpoint.on_stream_acked = self._bind(self.on_stream_acked, endpoint)

    @staticmethod
    def _bind(method, endpoint):
        return lambda *args: method(endpoint, *args)

    def side(self, kind: str) -> _Side:
        side = self.sides.get(kind)
        if side is None:
            side = self.sides[kind] = _Side(self.run, self, kind)
        return side

    def sender(self, kind: str):
        return self.transport.client if kind == "request" else self.transport.server

    def receiver(self, kind: str):
        return self.transport.server if kind == "request" else self.transport.client

    @staticmethod
    def incoming(endpoint) -> str:
        """The kind of the blocks and encoder instructions that arrive at ``endpoint``."""
        return "response" if endpoint.is_client else "request"

    @staticmethod
    def outgoing(endpoint) -> str:
        return "request" if endpoint.is_client else "response"


class _H3Wire(_Wire):
    """HTTP/3: a HEADERS frame (RFC 9114 section 7.2.2) on each request stream; QPACK
    encoder and decoder streams as unidirectional streams of types 0x02 and 0x03
    (RFC 9204 section 4.2); QCRAM's control stream takes the encoder type."""

    STREAM_TYPE = {"encoder": 0x02, "decoder": 0x03}

    def __init__(self, run, transport) -> None:
        super().__init__(run, transport)
        self.uni_out: dict[tuple[str, str], int] = {}     # (kind, role) -> stream id
        self.uni_in: dict[tuple[int, int], int | None] = {}   # (endpoint, stream) -> stream type
        self.scanners: dict[tuple[int, int], tuple] = {}   # (endpoint, stream) -> (H3Scanner, buffer)
        self.block_frames: dict[tuple[int, int], int] = {}  # (sender, stream) -> frame bytes, until acked

    def send_instructions(self, kind: str, role: str, data: bytes) -> None:
        endpoint = self.sender(kind) if role == "encoder" else self.receiver(kind)
        stream_id = self.uni_out.get((kind, role))
        if stream_id is None:
            stream_id = self.uni_out[(kind, role)] = endpoint.open_stream(unidirectional=True)
            data = bytes([self.STREAM_TYPE[role]]) + data
        endpoint.write(stream_id, data)

    def send_block(self, kind: str, stream_id: int, block: bytes) -> int:
        frame = h3_frame(0x1, block)                            # HEADERS (RFC 9114 section 7.2.2)
        sender = self.sender(kind)
        self.block_frames[(id(sender), stream_id)] = len(frame)
        sender.write(stream_id, frame, end=True)
        return len(frame)

    def on_data(self, endpoint, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        key = (id(endpoint), stream_id)
        if stream_id & 0x2:                                      # unidirectional
            stream_type = self.uni_in.get(key)
            if stream_type is None:
                stream_type, data = data[0], data[1:]            # one-byte varint types
                self.uni_in[key] = stream_type
            if not data:
                return
            if stream_type == self.STREAM_TYPE["encoder"]:
                self.side(self.incoming(endpoint)).encoder_instructions(data, time_s)
            else:
                self.side(self.outgoing(endpoint)).decoder_instructions(data)
            return
        state = self.scanners.get(key)
        if state is None:
            state = self.scanners[key] = (H3Scanner(kind="request"), bytearray())
        scanner, buffer = state
        buffer += data
        if scanner.feed(data):
            for ftype, offset, length in scanner.results():
                if ftype == 0x01:                                # HEADERS
                    block = bytes(buffer[offset:offset + length])
                    self.side(self.incoming(endpoint)).block_delivered(stream_id, block, time_s)
        if end:
            del self.scanners[key]

    def on_stream_acked(self, endpoint, stream_id: int, acked_offset: int) -> None:
        kind = self.outgoing(endpoint)
        if self.uni_out.get((kind, "encoder")) == stream_id:
            self.side(kind).encoder_stream_acked(acked_offset - 1)   # less the stream-type byte
            return
        frame_bytes = self.block_frames.get((id(endpoint), stream_id))
        if frame_bytes is not None and acked_offset >= frame_bytes:
            del self.block_frames[(id(endpoint), stream_id)]
            self.side(kind).block_acked(stream_id)


class _H2Wire(_Wire):
    """HTTP/2 over the one TCP byte stream per direction: HEADERS (+ CONTINUATION) frames
    (RFC 9113 sections 6.2, 6.10) on odd stream ids.  QPACK and QCRAM have no HTTP/2
    mapping; to run them over TCP for comparison, their encoder and decoder instructions
    travel in extension frames on stream 0 (types 0xf0 and 0xf1; RFC 9113 section 5.5
    lets peers that agree use extension frames)."""

    LABEL = 0                      # the transport model's label for the connection's byte stream
    MAX_FRAME = H2_MAX_FRAME_BYTES   # SETTINGS_MAX_FRAME_SIZE default (RFC 9113 section 6.5.2)
    EXT_TYPE = {"encoder": 0xF0, "decoder": 0xF1}

    def __init__(self, run, transport) -> None:
        super().__init__(run, transport)
        for endpoint in (transport.client, transport.server):
            endpoint.on_received = self._bind(self.on_received, endpoint)
        self.sent = {id(transport.client): 0, id(transport.server): 0}    # bytes written per sender
        # Per sender: frames awaiting acknowledgement, in stream order:
        #   [end offset, ("block", kind, stream id) | ("encoder", kind, encoder-stream offset)]
        self.unacked: dict[int, deque] = {id(transport.client): deque(), id(transport.server): deque()}
        self.encoder_sent: dict[str, int] = {"request": 0, "response": 0}
        # Per receiver: blocks whose bytes are not all received yet: stream id -> [start, end, covered ranges]
        self.in_flight: dict[int, dict[int, list]] = {id(transport.client): {}, id(transport.server): {}}
        self.scanners: dict[int, list] = {}          # receiver -> [H2Scanner, buffer, base offset, fragments]

    @staticmethod
    def h2_stream_id(stream_id: int) -> int:
        """The study numbers streams as QUIC does (0, 4, 8, ...); HTTP/2 clients use 1, 3, 5."""
        return 2 * (stream_id >> 2) + 1

    def _write(self, endpoint, frames: bytes, ack_tag: tuple) -> tuple[int, int]:
        start = self.sent[id(endpoint)]
        end = start + len(frames)
        self.sent[id(endpoint)] = end
        self.unacked[id(endpoint)].append((end, ack_tag))
        endpoint.write(self.LABEL, frames)
        return start, end

    def send_instructions(self, kind: str, role: str, data: bytes) -> None:
        endpoint = self.sender(kind) if role == "encoder" else self.receiver(kind)
        frames = b"".join(h2_frame(self.EXT_TYPE[role], 0, 0, data[i:i + self.MAX_FRAME])
                          for i in range(0, len(data), self.MAX_FRAME))
        if role == "encoder":
            self.encoder_sent[kind] += len(data)
            self._write(endpoint, frames, ("encoder", kind, self.encoder_sent[kind]))
        else:
            self._write(endpoint, frames, ("decoder", kind, 0))

    def send_block(self, kind: str, stream_id: int, block: bytes) -> int:
        h2_stream = self.h2_stream_id(stream_id)
        chunks = [block[i:i + self.MAX_FRAME] for i in range(0, len(block), self.MAX_FRAME)] or [b""]
        frames = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            if i == 0:   # END_STREAM 0x1 on HEADERS; END_HEADERS 0x4 on the last frame
                frames.append(h2_frame(0x1, 0x1 | (0x4 if last else 0), h2_stream, chunk))
            else:
                frames.append(h2_frame(0x9, 0x4 if last else 0, h2_stream, chunk))
        wire = b"".join(frames)
        sender = self.sender(kind)
        start, end = self._write(sender, wire, ("block", kind, stream_id))
        self.in_flight[id(self.receiver(kind))][stream_id] = [start, end, []]
        return len(wire)

    def on_received(self, endpoint, label: int, offset: int, length: int, time_s: float) -> None:
        """Connection bytes reached the receiver, maybe out of order (TCP's HOL blocking)."""
        pending = self.in_flight[id(endpoint)]
        end = offset + length
        for stream_id, block in list(pending.items()):
            start, stop, cover = block
            if offset < stop and end > start:
                cover.append((max(offset, start), min(end, stop)))
                cover.sort()
                reach = start
                for a, b in cover:
                    if a > reach:
                        break
                    reach = max(reach, b)
                if reach >= stop:
                    del pending[stream_id]
                    self.side(self.incoming(endpoint)).block_arrived(stream_id, time_s)

    def on_data(self, endpoint, label: int, data: bytes, end: bool, time_s: float) -> None:
        state = self.scanners.get(id(endpoint))
        if state is None:
            state = self.scanners[id(endpoint)] = [H2Scanner(self.MAX_FRAME, preface=False), bytearray(), 0, b""]
        scanner, buffer, base, _ = state
        buffer += data
        if scanner.feed(data):
            for ftype, flags, h2_stream, offset, length in scanner.results():
                payload = bytes(buffer[offset - base:offset - base + length])
                if ftype in (0x1, 0x9):                         # HEADERS, CONTINUATION
                    state[3] += payload
                    if flags & 0x4:                             # END_HEADERS: the block is whole
                        block, state[3] = state[3], b""
                        stream_id = (h2_stream - 1) // 2 << 2
                        self.side(self.incoming(endpoint)).block_delivered(stream_id, block, time_s)
                elif ftype == self.EXT_TYPE["encoder"]:
                    self.side(self.incoming(endpoint)).encoder_instructions(payload, time_s)
                elif ftype == self.EXT_TYPE["decoder"]:
                    self.side(self.outgoing(endpoint)).decoder_instructions(payload)
        # Drop what the scanner has consumed (it keeps at most a partial frame header).
        consumed = scanner.offset - scanner.pending - base
        if consumed > 0:
            del buffer[:consumed]
            state[2] = base + consumed

    def on_stream_acked(self, endpoint, label: int, acked_offset: int) -> None:
        queue = self.unacked[id(endpoint)]
        while queue and queue[0][0] <= acked_offset:
            _, (what, kind, value) = queue.popleft()
            if what == "block":
                self.side(kind).block_acked(value)
            elif what == "encoder":
                self.side(kind).encoder_stream_acked(value)


class SchemeRun:
    """One scheme over the whole trace: a simulator, one path and connection per origin."""

    def __init__(self, scheme: str, items: list[HeaderItem], params) -> None:
        self.scheme = scheme
        self.params = params
        self.sim = Simulator(seed=params.seed)
        self.items = items
        self.blocks: list[dict] = []
        self.connections: dict[str, dict] = {}
        self.responses: dict[int, HeaderItem] = {}

    def wire(self, origin: str) -> _Wire:
        """The connection for ``origin`` (made on first use: a path and a TCP, QUIC or 2017-model transport)."""
        conn = self.connections.get(origin)
        if conn is not None:
            return conn["wire"]
        p = self.params
        n = len(self.connections)
        if p.transport == "ref2017":
            from ...net.ref2017 import Ref2017Connection
            # Independent loss only (``HolParams`` says so where the value enters).
            transport = Ref2017Connection(self.sim, rtt_s=p.rtt_s, loss_p=p.network.loss.p,
                                          reorder_prob=p.jitter_prob, reorder_max_s=p.jitter_max_s,
                                          name=f"ref2017-{n}")
            wire = _H3Wire(self, transport)
            self.connections[origin] = {"transport": transport, "path": None, "wire": wire}
            return wire
        path = p.network.path(self.sim, name=f"path{n}")
        config = TransportConfig(cc=p.cc)
        if p.transport == "quic":
            from ...net.quic import QuicConnection
            transport = QuicConnection(self.sim, path, config, name=f"quic{n}")
            wire = _H3Wire(self, transport)
        else:
            from ...net.tcp import TcpConnection
            transport = TcpConnection(self.sim, path, config, name=f"tcp{n}")
            wire = _H2Wire(self, transport)
        self.connections[origin] = {"transport": transport, "path": path, "wire": wire}
        return wire

    def start(self, item: HeaderItem, stream_id: int | None = None) -> None:
        """Send header block ``item`` on ``stream_id`` (default: the client's next bidirectional stream)."""
        wire = self.wire(item.origin)
        if stream_id is None:
            # Requests (and, without requests, responses) use the client's next bidi stream.
            stream_id = wire.transport.client.open_stream()
        wire.side(item.kind).send(stream_id, item)

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
            raise InputError(f"{self.scheme}: {missing} of {expected} header blocks were not decoded within "
                             f"3600 s of simulated time after the last request (stopped at {self.sim.now:.3f} s); "
                             "the link (--bw, --rtt, --loss) is too slow or lossy for this trace.")
        # Counted on the wire, the same way for both transports: every packet both ways
        # (acks included) and every packet the loss model or a full queue dropped.
        packets = losses = retransmissions = max_buffered = 0
        timers = timer_counts(conn["transport"].stats() for conn in self.connections.values())
        for conn in self.connections.values():
            stats = conn["transport"].stats()
            if conn["path"] is None:
                packets += stats["wire_packets"]
                losses += stats["wire_losses"]
            else:
                for link in (conn["path"].forward, conn["path"].reverse):
                    packets += link.stats.packets_sent
                    losses += link.stats.packets_lost + link.stats.packets_dropped
            retransmissions += stats.get("packets_lost", 0)
            for side in conn["wire"].sides.values():
                max_buffered = max(max_buffered, side.max_buffered_bytes)
        return {"packets": packets, "losses": losses, "retransmissions": retransmissions, **timers,
                "max_decoder_buffered_bytes": max_buffered,
                "connections": len(self.connections), "sim_end_s": self.sim.now}

