"""Header-compression head-of-line blocking: HPACK vs QPACK vs QCRAM.

The question (the one the QUIC working group faced in 2017-2018, and that QPACK, RFC 9204,
answered): HPACK (RFC 7541) assumes the decoder sees header blocks in exactly the order
they were encoded, which TCP guarantees.  Over QUIC, streams are delivered independently,
so a lost packet carrying one stream's data should not stall the others, unless the
header-compression scheme makes one stream's header block depend on another's.  The
2017 candidates were HPACK kept as is (decode strictly in sequence), QCRAM
(draft-krasic-quic-qcram: an entry is referenced only once the packet carrying its
insert is acknowledged by the transport, else a literal is sent) and QPACK (RFC 9204:
encoder and decoder streams, a Required Insert Count per field section, at most
SETTINGS_QPACK_BLOCKED_STREAMS streams blocked, 0 by default).  This
study replays a trace's header lists over a simulated path, once per scheme with the
same seed, and measures, block by block, when each header block was sent, when all of
its own bytes had arrived, when the transport delivered it in order and when the
decoder could decode it.

- ``hol_delay`` = decoded - arrived: the time a block waited, with all of its own bytes
  already at the receiver, for something else: an earlier block (HPACK for QUIC decodes
  in encode order), an encoder-stream insert (QPACK, RFC 9204 section 2.1.2), or a hole
  in the connection's byte stream (any scheme over TCP, RFC 9293 in-order delivery).
- A block is *blocked* when its hol_delay is above zero.

The 2017 reference simulator (HTTP Workshop, London; ``simulator.net.ref2017``) is the
baseline; this one adds a real transport (loss recovery, congestion control, acks that
can be lost), encoder and decoder streams packetised on their own, per-block delay
distributions, the blocked-streams limit, both directions, and a decode of every block
checked against its input.

Published reference points: the 2017 simulator's run on one HAR (185 requests, 14 losses,
one seed) gave HPACK in order 9 blocked blocks, 1,344 ms total HOL delay and a 73%
saving, QCRAM 7 blocked blocks, 1,004 ms and 68% (shown at the HTTP Workshop, London,
June 2017).  The QUIC working group's header
compression design team reported in January 2018 roughly ten times fewer HOL-blocking
events for QPACK and QCRAM than for HPACK, since about 9 blocks in 10 are not
vulnerable, and that blocking buys most of its compression gain early in a connection.
Offline, on the QPACK interop trace ``traces/qif/fb-resp-hq.qif`` (340,737 raw bytes),
HPACK encodes to 90,448 bytes (26.5%) and QPACK with a 4 KiB table to about 51,800
(15.2%), with 16 KiB to about 44,600 (13.1%).

Schedule: a timed trace (HAR) replays at its start times, idle gaps capped at
``max_idle_s`` (1 s, as in 2017) and start times floored to ``coalesce_s`` (1 ms) so
that requests starting within the same millisecond share packets.  QIF traces carry no
timing: request ``i`` starts at ``i * spacing_s``.  How soon QPACK's acknowledgements come
back relative to that spacing decides how much of its table the encoder may reference,
so ``spacing_s`` is an explicit parameter of every result.

One compression context and one connection per origin (as in 2017); the request and
response directions have separate contexts (RFC 9204 section 2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
from collections import deque
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from .. import __version__, argtypes
from ..engine import Simulator
from ..errors import InputError
from ..frames import H2Scanner, H3Scanner
from ..frames import encode_varint as _varint
from ..net.link import Jitter, Path
from ..net.transport import TransportConfig
from ..traces.model import Trace, raw_size
from ..units import parse_bandwidth, parse_duration, parse_size
from .summary_json import rows_by_index

__all__ = ["HolParams", "HolResult", "run", "run_seeds", "SCHEMES", "confidence_band"]

SCHEMES = ("hpack", "qpack", "qcram", "qcram-blocking")
DIRECTIONS = ("auto", "requests", "responses", "both")
# quic and tcp: the transport models; ref2017: the 2017 simulator's own network model.
TRANSPORTS = ("quic", "tcp", "ref2017")



@dataclass(frozen=True)
class HolParams:
    """Everything that determines a run.  Units are in the names."""

    schemes: tuple[str, ...] = ("hpack", "qpack", "qcram")
    transport: str = "quic"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"                       # "0.01" Bernoulli, "ge:P,R[,h,k]" Gilbert-Elliott
    table_bytes: int = 4096               # dynamic table capacity (SETTINGS_QPACK_MAX_TABLE_CAPACITY)
    max_blocked: int = 100                # SETTINGS_QPACK_BLOCKED_STREAMS (2017 default 100)
    direction: str = "auto"               # auto: what the trace holds (requests, responses or both)
    seed: int = 1
    spacing_s: float = 0.010              # untimed traces: request i starts at i * spacing_s
    max_idle_s: float = 1.0               # timed traces: idle gaps capped (2017 model)
    coalesce_s: float = 0.001             # timed traces: starts within one bucket share packets
    think_s: float = 0.0                  # direction "both": server think time before a response
    jitter_prob: float = 0.0              # 2017 model used 0.05 ...
    jitter_max_s: float = 0.100           # ... with an extra U(0, 100 ms)
    queue_bytes: int | None = None        # bottleneck queue; None = one BDP, at least 64 KiB
    cc: str = "reno"
    cookie_crumbs: bool = True            # RFC 9113 section 8.2.3 / RFC 9204 section 4.2.1 split

    def __post_init__(self) -> None:
        for s in self.schemes:
            if s not in SCHEMES:
                raise InputError(f"unknown scheme {s!r} (choose from {', '.join(SCHEMES)})")
        if self.transport not in TRANSPORTS:
            raise InputError(f"unknown transport {self.transport!r} (choose {', '.join(TRANSPORTS)})")
        if self.transport == "ref2017":
            try:
                float(self.loss)
            except ValueError:
                raise InputError(f"the 2017 reference model has independent loss only, not {self.loss!r}") from None
        if self.direction not in DIRECTIONS:
            raise InputError(f"unknown direction {self.direction!r} (choose {', '.join(DIRECTIONS)})")
        if self.table_bytes < 0 or self.max_blocked < 0:
            raise InputError("table size and max blocked streams must be >= 0")
        if self.rtt_s <= 0:
            raise InputError(f"RTT must be above 0, got {self.rtt_s}")
        if self.spacing_s < 0:
            raise InputError(f"request spacing must be >= 0, got {self.spacing_s}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["schemes"] = ",".join(self.schemes)
        return d


@dataclass
class HolResult:
    """One row per header block (``blocks``) and one per scheme (``summary``)."""

    blocks: pd.DataFrame
    summary: pd.DataFrame
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        schemes = rows_by_index(self.summary)
        return {"schemes": schemes, "params": self.params, "trace": self.trace}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)


# ---------------------------------------------------------------------------------------
# The schedule


@dataclass(slots=True)
class _Item:
    """One header list to send: who sends it, when, on which stream."""

    exchange: int
    kind: str                 # "request" | "response"
    headers: tuple
    origin: str
    start_s: float | None     # None: a response sent when its request is decoded


def resolve_direction(trace: Trace, direction: str) -> str:
    """``auto`` -> the header lists the trace holds: ``both`` when it has requests and
    responses (a HAR), else ``requests`` or ``responses`` (a QIF holds one kind)."""
    if direction != "auto":
        return direction
    has_requests = any(e.request_headers is not None for e in trace.exchanges)
    has_responses = any(e.response_headers is not None for e in trace.exchanges)
    if has_requests and has_responses:
        return "both"
    if has_responses:
        return "responses"
    if has_requests:
        return "requests"
    raise InputError("the trace has no header lists to replay", path=trace.source)


def _schedule(trace: Trace, params: HolParams) -> list[_Item]:
    direction = resolve_direction(trace, params.direction)
    lists = trace.header_lists(direction)
    if not lists:
        raise InputError(f"the trace has no {direction} header lists to replay",
                         path=trace.source)
    if trace.timed:
        starts, prev_raw, prev_t = {}, None, 0.0
        ordered = sorted({e.index: e for e, _, _ in lists}.values(), key=lambda e: (e.start_s or 0.0, e.index))
        for e in ordered:
            raw = e.start_s or 0.0
            t = 0.0 if prev_raw is None else prev_t + min(max(raw - prev_raw, 0.0), params.max_idle_s)
            prev_raw, prev_t = raw, t
            starts[e.index] = t
        quantum = params.coalesce_s
        start_of = {i: (math.floor(t / quantum + 1e-9) * quantum if quantum > 0 else t) for i, t in starts.items()}
    else:
        start_of = {}
        for n, index in enumerate(dict.fromkeys(e.index for e, _, _ in lists)):
            start_of[index] = n * params.spacing_s
    items = []
    for e, kind, headers in lists:
        has_request = direction == "both" and e.request_headers is not None
        start = None if (kind == "response" and has_request) else start_of[e.index]
        items.append(_Item(e.index, kind, headers, e.origin or "-", start))
    return items


# ---------------------------------------------------------------------------------------
# One direction's compression context


class _Side:
    """One direction of one connection: the encoder at the sender, the decoder at the
    receiver, and the records of its header blocks.  The wire moves the bytes."""

    def __init__(self, run: "_SchemeRun", wire: "_Wire", kind: str) -> None:
        from .. import compression

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
    def send(self, stream_id: int, item: _Item) -> None:
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
        from .. import compression

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

    def __init__(self, run: "_SchemeRun", transport) -> None:
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
        frame = b"\x01" + _varint(len(block)) + block
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
    MAX_FRAME = 16384              # SETTINGS_MAX_FRAME_SIZE default (RFC 9113 section 6.5.2)
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

    def _frame(self, ftype: int, flags: int, h2_stream: int, payload: bytes) -> bytes:
        n = len(payload)
        return struct.pack(">BHBBL", n >> 16, n & 0xFFFF, ftype, flags, h2_stream) + payload

    def _write(self, endpoint, frames: bytes, ack_tag: tuple) -> tuple[int, int]:
        start = self.sent[id(endpoint)]
        end = start + len(frames)
        self.sent[id(endpoint)] = end
        self.unacked[id(endpoint)].append((end, ack_tag))
        endpoint.write(self.LABEL, frames)
        return start, end

    def send_instructions(self, kind: str, role: str, data: bytes) -> None:
        endpoint = self.sender(kind) if role == "encoder" else self.receiver(kind)
        frames = b"".join(self._frame(self.EXT_TYPE[role], 0, 0, data[i:i + self.MAX_FRAME])
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
                frames.append(self._frame(0x1, 0x1 | (0x4 if last else 0), h2_stream, chunk))
            else:
                frames.append(self._frame(0x9, 0x4 if last else 0, h2_stream, chunk))
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


class _SchemeRun:
    """One scheme over the whole trace: a simulator, one path and connection per origin."""

    def __init__(self, scheme: str, items: list[_Item], params: HolParams) -> None:
        self.scheme = scheme
        self.params = params
        self.sim = Simulator(seed=params.seed)
        self.items = items
        self.blocks: list[dict] = []
        self.connections: dict[str, dict] = {}
        self.responses: dict[int, _Item] = {}

    def wire(self, origin: str) -> _Wire:
        conn = self.connections.get(origin)
        if conn is not None:
            return conn["wire"]
        p = self.params
        n = len(self.connections)
        if p.transport == "ref2017":
            from ..net.ref2017 import Ref2017Connection
            loss_p = float(str(p.loss).rstrip("%")) / (100 if str(p.loss).endswith("%") else 1)
            transport = Ref2017Connection(self.sim, rtt_s=p.rtt_s, loss_p=loss_p,
                                          reorder_prob=p.jitter_prob, reorder_max_s=p.jitter_max_s,
                                          name=f"ref2017-{n}")
            wire = _H3Wire(self, transport)
            self.connections[origin] = {"transport": transport, "path": None, "wire": wire}
            return wire
        queue = p.queue_bytes
        if queue is None and p.bandwidth_bps is not None:
            queue = max(65536, int(p.bandwidth_bps * p.rtt_s / 8))
        jitter = Jitter(p.jitter_prob, p.jitter_max_s) if p.jitter_prob > 0 else None
        path = Path(self.sim, rtt_s=p.rtt_s, bandwidth_bps=p.bandwidth_bps, queue_bytes=queue,
                    loss=p.loss, jitter=jitter, name=f"path{n}")
        config = TransportConfig(cc=p.cc)
        if p.transport == "quic":
            from ..net.quic import QuicConnection
            transport = QuicConnection(self.sim, path, config, name=f"quic{n}")
            wire = _H3Wire(self, transport)
        else:
            from ..net.tcp import TcpConnection
            transport = TcpConnection(self.sim, path, config, name=f"tcp{n}")
            wire = _H2Wire(self, transport)
        self.connections[origin] = {"transport": transport, "path": path, "wire": wire}
        return wire

    def start(self, item: _Item, stream_id: int | None = None) -> None:
        wire = self.wire(item.origin)
        if stream_id is None:
            # Requests (and, without requests, responses) use the client's next bidi stream.
            stream_id = wire.transport.client.open_stream()
        wire.side(item.kind).send(stream_id, item)

    def on_decoded(self, record: dict) -> None:
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
        self.responses = {it.exchange: it for it in self.items if it.kind == "response" and it.start_s is None}
        for it in self.items:
            if it.start_s is not None:
                self.sim.call_at(it.start_s, self.start, it)
        last_start = max((it.start_s for it in self.items if it.start_s is not None), default=0.0)
        self.sim.run(until_s=last_start + 3600.0)
        expected = len(self.items)
        if len(self.blocks) != expected:
            missing = expected - len(self.blocks)
            raise RuntimeError(f"{self.scheme}: {missing} of {expected} header blocks were never decoded "
                               f"(simulation stopped at {self.sim.now:.3f} s)")
        # Counted on the wire, the same way for both transports: every packet both ways
        # (acks included) and every packet the loss model or a full queue dropped.
        packets = losses = retransmissions = max_buffered = 0
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
        return {"packets": packets, "losses": losses, "retransmissions": retransmissions,
                "max_decoder_buffered_bytes": max_buffered,
                "connections": len(self.connections), "sim_end_s": self.sim.now}


# ---------------------------------------------------------------------------------------
# Entry points


def run(trace: Trace, params: HolParams | None = None, *, progress: bool = False) -> HolResult:
    """Replay ``trace`` once per scheme in ``params.schemes`` and measure HOL blocking."""
    params = params or HolParams()
    given_direction = params.direction
    params = replace(params, direction=resolve_direction(trace, params.direction))
    items = _schedule(trace, params)
    frames, summaries = [], {}
    schemes = params.schemes
    iterator = schemes
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(schemes, desc="schemes", leave=False)
    for scheme in iterator:
        sr = _SchemeRun(scheme, items, params)
        totals = sr.execute()
        df = pd.DataFrame.from_records(sr.blocks)
        df = df.drop(columns=[c for c in df.columns if c.startswith("_")])
        df["hol_delay_ms"] = (df["decoded_s"] - df["arrived_s"]) * 1000.0
        df["blocked"] = df["hol_delay_ms"] > 1e-6
        df = df.sort_values(["sent_s", "seq"], kind="stable").reset_index(drop=True)
        frames.append(df)
        summaries[scheme] = _summarize(df, totals)
    blocks = pd.concat(frames, ignore_index=True)
    pdict = params.to_dict()
    for k in ("transport", "rtt_s", "bandwidth_bps", "loss", "table_bytes", "max_blocked", "direction",
              "seed", "spacing_s"):
        blocks[k] = pdict[k]
    tinfo = {"source": trace.source, "format": trace.format, "content_hash": trace.content_hash(),
             "header_lists": len(items), "timed": trace.timed}
    summary = pd.DataFrame.from_dict(summaries, orient="index")
    summary.index.name = "scheme"
    return HolResult(blocks=blocks, summary=summary,
                     params={**pdict, "direction_given": given_direction, "version": __version__}, trace=tinfo)


def _summarize(df: pd.DataFrame, totals: dict) -> dict:
    hol = df["hol_delay_ms"].to_numpy()
    raw = int(df["raw_bytes"].sum())
    header = int(df["header_bytes"].sum())
    enc = int(df["encoder_stream_bytes"].sum())
    blocked = df["blocked"].to_numpy()
    return {
        "blocks": int(len(df)),
        "blocked": int(blocked.sum()),
        "hol_total_ms": float(hol.sum()),
        "hol_p50_ms": float(np.percentile(hol, 50)),
        "hol_p95_ms": float(np.percentile(hol, 95)),
        "hol_p99_ms": float(np.percentile(hol, 99)),
        "hol_max_ms": float(hol.max()),
        "hol_mean_blocked_ms": float(hol[blocked].mean()) if blocked.any() else 0.0,
        "raw_bytes": raw,
        "header_bytes": header,
        "encoder_stream_bytes": enc,
        "ratio": (header + enc) / raw if raw else math.nan,
        "saving_percent": 100.0 - 100.0 * (header + enc) / raw if raw else math.nan,
        "may_block": int(df["may_block"].sum()),
        **totals,
    }


def run_seeds(trace: Trace, params: HolParams, seeds, *, progress: bool = False) -> pd.DataFrame:
    """Summaries over several seeds: one row per (seed, scheme)."""
    rows = []
    seeds = list(seeds)
    iterator = seeds
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(seeds, desc="seeds")
    for seed in iterator:
        result = run(trace, replace(params, seed=seed))
        s = result.summary.reset_index()
        s["seed"] = seed
        rows.append(s)
    return pd.concat(rows, ignore_index=True)


def confidence_band(values, *, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and a bootstrap percentile confidence interval (seeded, so reproducible)."""
    x = np.asarray(list(values), dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan, math.nan)
    if len(x) == 1:
        return (float(x[0]), float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = rng.choice(x, size=(resamples, len(x)), replace=True).mean(axis=1)
    lo, hi = np.percentile(means, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return (float(x.mean()), float(lo), float(hi))


# ---------------------------------------------------------------------------------------
# CLI


def params_from_args(args: argparse.Namespace) -> HolParams:
    if not 0.0 <= float(args.jitter) <= 1.0:
        raise InputError(f"--jitter is a probability in [0, 1], got {args.jitter}")
    # --table / --blocked not given: the defaults (an interop trace's own, in _cmd).
    table = HolParams.table_bytes if args.table is None else parse_size(args.table)
    blocked = HolParams.max_blocked if args.blocked is None else int(args.blocked)
    return HolParams(
        schemes=tuple(s.strip() for s in args.scheme.split(",") if s.strip()),
        transport=args.transport, rtt_s=parse_duration(args.rtt), bandwidth_bps=parse_bandwidth(args.bw),
        loss=str(args.loss), table_bytes=table, max_blocked=blocked, direction=args.direction,
        seed=int(args.seed), spacing_s=parse_duration(args.spacing), think_s=parse_duration(args.think),
        jitter_prob=float(args.jitter), cc=args.cc,
    )


def _interop_table(trace: Trace, params: HolParams, args: argparse.Namespace) -> HolParams:
    """A QPACK interop file was encoded with the table capacity and blocked-streams limit of
    its name (``<name>.out.<capacity>.<blocked>.<ack>``, read as ``workbench interop decode``
    and the loader read it): the study uses them too unless --table / --blocked are given."""
    if trace.format != "qpack-interop" or (args.table is not None and args.blocked is not None):
        return params
    taken = {}
    if args.table is None:
        taken["table_bytes"] = int(trace.meta["max_table_capacity"])
    if args.blocked is None:
        taken["max_blocked"] = int(trace.meta["blocked_streams"])
    said = " and ".join(f"{'table capacity' if k == 'table_bytes' else 'max blocked streams'} {v}"
                        for k, v in taken.items())
    print(f"workbench: note: {said} from the interop file name {os.path.basename(trace.source)} "
          f"(give --table / --blocked to override)", file=sys.stderr)
    return replace(params, **taken)


def _cmd(args: argparse.Namespace) -> int:
    from ..traces import load

    params = params_from_args(args)
    trace = load(args.trace)
    params = _interop_table(trace, params, args)
    result = run(trace, params, progress=not args.json and sys.stderr.isatty())
    if args.blocks:
        result.blocks.to_csv(args.blocks, index=False)
    if args.json:
        print(result.to_json())
        return 0
    cols = ["blocks", "blocked", "hol_total_ms", "hol_p50_ms", "hol_p95_ms", "hol_max_ms",
            "raw_bytes", "header_bytes", "encoder_stream_bytes", "ratio", "packets", "losses"]
    print(f"trace {trace.source} ({len(trace)} exchanges, {result.trace['header_lists']} header lists), "
          f"{params.transport}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, seed {params.seed}")
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="HAR, QIF or QPACK interop file")
    p.add_argument("--scheme", default="hpack,qpack,qcram", type=argtypes.names(SCHEMES, "scheme"),
                   help="comma-separated: " + ",".join(SCHEMES))
    p.add_argument("--transport", default="quic", choices=list(TRANSPORTS),
                   help="quic or tcp (transport models), or ref2017 (the 2017 simulator's network model)")
    p.add_argument("--rtt", default="100ms", type=argtypes.positive_duration, help="round-trip time, e.g. 100ms")
    p.add_argument("--bw", default="10mbit", type=argtypes.bandwidth,
                   help="bottleneck bandwidth, e.g. 10mbit (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--table", default=None, type=argtypes.size,
                   help="dynamic table capacity in bytes (default 4096; a QPACK interop trace: from its file name)")
    p.add_argument("--blocked", default=None, type=argtypes.count(0),
                   help="max blocked streams (default 100; a QPACK interop trace: from its file name)")
    p.add_argument("--direction", default="auto", choices=list(DIRECTIONS),
                   help="header lists to replay; auto (default): what the trace holds")
    p.add_argument("--spacing", default="10ms", type=argtypes.duration, help="request spacing for untimed traces (QIF)")
    p.add_argument("--think", default="0ms", type=argtypes.duration,
                   help="server think time before a response (direction both)")
    p.add_argument("--jitter", default="0", type=argtypes.probability, help="probability of an extra U(0,100ms) delay")
    p.add_argument("--cc", default="reno", choices=["reno", "cubic"])
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--blocks", metavar="CSV", type=argtypes.output_file, help="also write the per-block table to CSV")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("hol", help="header-compression HOL blocking: HPACK vs QPACK vs QCRAM")
    add_arguments(p)
    p.set_defaults(func=_cmd)
