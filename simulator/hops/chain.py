"""Responses through a chain of HTTP intermediaries, over the transport models.

    client ==segment 0== hop 1 ==segment 1== hop 2 ... hop N ==segment N== origin

Written by hand.  Each segment is its own HTTP connection on its own simulated path
(``net.link.Path``): the TCP model for HTTP/1.1 and HTTP/2, the QUIC model for HTTP/3.
Segment 0 (the client's) has the run's RTT, bandwidth and loss; the segments behind
the first hop have ``hop_rtt_s`` and ``hop_bandwidth_bps`` and no loss (a backbone).
Connections are warm: no handshake, but each transport starts with one RTT sample of
its path, as after a handshake (the real-stack runs start after theirs).

Bytes on the wire are exact per version (``framing.Framer``, real HPACK / QPACK
encoders); the transports carry placeholder bytes of those lengths, and each receiver
keeps the list of what was written (header section, body write, trailer section, end
of message) to know what it holds as bytes arrive in order, decoding every section
with the real decoder (``framing.Unframer``) when its last byte arrives.  HTTP/3
encoder- and decoder-stream instructions travel on their own unidirectional streams,
so a section whose inserts are late is blocked (RFC 9204 section 2.1.2).  HTTP/1.1
uses one exchange per connection at a time (no pipelining): a segment opens another
warm connection on the same path when its connections are busy.

The origin produces each body over time (``stacks.common.production_schedule``, the
same schedule the real stacks use) and, as the plan says, writes each chunk as it is
produced or buffers the whole body before its header section.

Hop policies (``POLICIES``), with ``te_down`` = the request the hop received carried
``TE: trailers`` (RFC 9110 section 10.1.4; TE is hop-by-hop, section 7.6.1, so each
hop writes its own upstream):

- ``pass``: streams; forwards a trailer section only when ``te_down`` (RFC 9110
  section 6.5.1: TE "trailers" says the client accepts them "on behalf of itself and any
  downstream clients"), otherwise discards it ("in most cases, the trailers are simply
  discarded"); sends ``TE: trailers`` upstream only when ``te_down``;
- ``drop``: streams and always discards trailer sections (RFC 9112 section 7.1.2: a
  recipient that removes the chunked coding "MAY selectively retain or discard" them);
  never sends ``TE: trailers`` upstream;
- ``merge``: as ``pass`` when ``te_down``; otherwise, for a response whose header
  section announces trailer fields (``Trailer``, RFC 9110 section 6.6.2: it lets
  recipients "prepare for their receipt"), buffers the whole message and merges into
  the header section the trailer fields whose definition permits it
  (``fields.MERGEABLE``, RFC 9110 section 6.5.1 "If the entire message can be buffered
  in transit, some intermediaries could merge trailer fields into the header section"),
  dropping the others; the forwarded message has a Content-Length.  A response that
  announces nothing is streamed, and a trailer section it ends with is discarded;
- ``store``: store-and-forward (a cache or a scanning proxy): always buffers the whole
  message, then forwards the trailer section when ``te_down``, else merges as ``merge``.

Memory held (bytes of body): the origin holds what it produced and its peer has not
acknowledged yet; a hop what it received and its downstream peer has not acknowledged.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from ..engine import Simulator
from ..net.link import Path
from ..net.quic import QuicConnection
from ..net.tcp import TcpConnection
from ..net.transport import TransportConfig
from ..stacks.common import production_schedule
from . import fields as _fields
from .framing import Framer, Section, Unframer

__all__ = ["POLICIES", "ChainConfig", "ResponsePlan", "run_chain", "ChainRun"]

POLICIES = ("pass", "drop", "merge", "store")
_HOP_BY_HOP = (b"te", b"connection", b"transfer-encoding", b"keep-alive", b"upgrade", b"proxy-connection")


@dataclass(frozen=True)
class ChainConfig:
    """The network and the intermediaries (units in the names)."""

    version: str = "h2"
    hops: tuple[str, ...] = ()              # policies, from the client toward the origin
    rtt_s: float = 0.050                    # segment 0 (client to first hop or origin)
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    hop_rtt_s: float = 0.010                # segments behind the first hop
    hop_bandwidth_bps: float | None = 1e9
    think_s: float = 0.0                    # origin: request received -> production starts
    qpack_table_bytes: int = 4096           # the receiving decoder's SETTINGS (aioquic's defaults)
    qpack_blocked_streams: int = 16
    cc: str = "reno"
    seed: int = 1


@dataclass
class ResponsePlan:
    """One exchange as the origin will answer it (built by the study for a strategy)."""

    index: int
    start_s: float
    request_headers: tuple
    head: tuple                             # the response header section the origin sends
    body_bytes: int                         # produced at ``rate_bytes_per_s``
    tail_bytes: int = 0                     # written at once after the last produced byte
    trailers: tuple | None = None           # the trailer section, if any
    buffer: bool = False                    # nothing is written before the last byte is produced
    rate_bytes_per_s: float | None = None
    chunk_bytes: int = 16384
    metadata: tuple = ()                    # the metadata field lines (wherever they travel)
    metadata_in_body: bool = False          # gRPC-Web style: they are the body's last message


# ---------------------------------------------------------------------------------------
# One HTTP connection over a transport model


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
        self.segment.upstream.request(self, headers, self.segment.sim.now)

    def on_head(self, headers) -> None:
        self.downstream.response_head(self, headers, self.segment.sim.now)

    def on_data(self, nbytes: int) -> None:
        self.downstream.response_data(self, nbytes, self.segment.sim.now)

    def on_trailers(self, fields) -> None:
        self.downstream.response_trailers(self, fields, self.segment.sim.now)

    def on_end(self) -> None:
        self.ended = True
        self.conn.busy = False
        self.downstream.response_end(self, self.segment.sim.now)

    def on_acked(self, payload_acked: int) -> None:
        if self.on_acked_payload is not None:
            self.on_acked_payload(payload_acked)

    # -- the upstream node answers -------------------------------------------------------
    def respond_head(self, headers, *, end: bool = False) -> None:
        self.chunked = self.conn.version == "h1" and not any(n == b"content-length" for n, _ in headers)
        size = self.conn.server.send_section(self.stream_id, "head", headers, chunked=self.chunked, end=end)
        self.bytes["head"] += size["wire"]
        self.bytes["head_encoder"] += size["encoder"]
        if end:
            self._end(already_fin=True)

    def respond_data(self, nbytes: int, *, end: bool = False) -> None:
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
        size = self.conn.server.send_section(self.stream_id, "trailers", fields, chunked=self.chunked, end=True)
        self.bytes["trailers"] += size["wire"]
        self.bytes["trailer_encoder"] += size["encoder"]
        self._end(already_fin=True)

    def respond_end(self) -> None:
        self._end(already_fin=False)

    def _end(self, *, already_fin: bool) -> None:
        self.bytes["end"] += self.conn.server.send_end(self.stream_id, chunked=self.chunked, already_fin=already_fin)


class Segment:
    """The HTTP connection(s) between a downstream node and an upstream node on one path."""

    def __init__(self, sim: Simulator, config: ChainConfig, name: str, *, rtt_s: float,
                 bandwidth_bps: float | None, loss: str, upstream) -> None:
        self.sim = sim
        self.config = config
        self.version = config.version
        self.name = name
        self.path = Path(sim, rtt_s=rtt_s, bandwidth_bps=bandwidth_bps, loss=loss, name=f"{name}/path")
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
        packets = lost = 0
        for link in (self.path.forward, self.path.reverse):
            packets += link.stats.packets_sent
            lost += link.stats.packets_lost + link.stats.packets_dropped
        return {"packets": packets, "lost": lost, "connections": len(self.conns)}


# ---------------------------------------------------------------------------------------
# The nodes


def _has_te_trailers(headers) -> bool:
    return any(n == b"te" and b"trailers" in v.lower() for n, v in headers)


class _Origin:
    """Answers each request as its plan says, producing the body over time."""

    def __init__(self, sim: Simulator, config: ChainConfig, plans: dict[int, ResponsePlan]) -> None:
        self.sim = sim
        self.config = config
        self.plans = plans
        self.records: dict[int, dict] = {}

    def request(self, ex: Exchange, headers, time_s: float) -> None:
        plan = self.plans[ex.tag]
        self.records[ex.tag] = rec = {"te_at_origin": _has_te_trailers(headers), "request_in_s": time_s,
                                      "produced": 0, "acked": 0, "held_max_bytes": 0}
        ex.on_acked_payload = lambda n: rec.__setitem__("acked", n)
        self.sim.call_later(self.config.think_s, self._start, ex, plan, rec)

    def _start(self, ex: Exchange, plan: ResponsePlan, rec: dict) -> None:
        schedule = production_schedule(plan.body_bytes, plan.rate_bytes_per_s, plan.chunk_bytes)
        total = plan.body_bytes + plan.tail_bytes
        if not plan.buffer:
            ex.respond_head(plan.head, end=total == 0 and not plan.trailers)
        for i, (at_s, n) in enumerate(schedule):
            self.sim.call_later(at_s, self._produced, ex, plan, rec, n, i == len(schedule) - 1)

    def _produced(self, ex: Exchange, plan: ResponsePlan, rec: dict, nbytes: int, last: bool) -> None:
        if last:
            nbytes += plan.tail_bytes
        rec["produced"] += nbytes
        rec["held_max_bytes"] = max(rec["held_max_bytes"], rec["produced"] - rec["acked"])
        if plan.buffer:
            if not last:
                return
            total = rec["produced"]
            ex.respond_head(plan.head, end=total == 0 and not plan.trailers)
            if total:
                ex.respond_data(total, end=not plan.trailers)
        elif nbytes:
            ex.respond_data(nbytes, end=last and not plan.trailers)
        if last and plan.trailers:
            ex.respond_trailers(plan.trailers)
        if last:
            rec["produced_s"] = self.sim.now


class _Relay:
    """One response through one hop."""

    __slots__ = ("down", "up", "te_down", "buffering", "head", "head_in_s", "head_out_s", "received",
                 "acked_down", "held_max_bytes", "trailers_in", "trailers_out", "merged", "dropped",
                 "end_in_s", "end_out_s")

    def __init__(self, down: Exchange, te_down: bool) -> None:
        self.down = down
        self.up: Exchange | None = None
        self.te_down = te_down
        self.buffering = False
        self.head = None
        self.head_in_s = self.head_out_s = self.end_in_s = self.end_out_s = math.nan
        self.received = 0
        self.acked_down = 0
        self.held_max_bytes = 0
        self.trailers_in = 0
        self.trailers_out = 0
        self.merged: list[bytes] = []
        self.dropped: list[bytes] = []


class _Hop:
    """An intermediary with one of ``POLICIES`` (see the module docstring)."""

    def __init__(self, sim: Simulator, index: int, policy: str) -> None:
        self.sim = sim
        self.index = index
        self.policy = policy
        self.upstream_segment: Segment | None = None
        self.relays: dict[int, _Relay] = {}          # by tag

    def request(self, down: Exchange, headers, time_s: float) -> None:
        te_down = _has_te_trailers(headers)
        relay = self.relays[down.tag] = _Relay(down, te_down)
        # RFC 9110 7.6.1: TE and Connection are hop-by-hop; this hop writes its own.
        forward = [(n, v) for n, v in headers if n not in _HOP_BY_HOP]
        if te_down and self.policy != "drop":
            forward.append((b"te", b"trailers"))
        down.on_acked_payload = lambda n: self._acked(relay, n)
        relay.up = self.upstream_segment.request(tuple(forward), downstream=self, tag=down.tag)

    def _acked(self, relay: _Relay, nbytes: int) -> None:
        relay.acked_down = nbytes

    def _held(self, relay: _Relay) -> None:
        relay.held_max_bytes = max(relay.held_max_bytes, relay.received - relay.acked_down)

    def response_head(self, up: Exchange, headers, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.head_in_s = time_s
        relay.head = headers
        announced = any(n == b"trailer" for n, _ in headers)
        relay.buffering = self.policy == "store" or (self.policy == "merge" and not relay.te_down and announced)
        if not relay.buffering:
            relay.head_out_s = time_s
            relay.down.respond_head(tuple((n, v) for n, v in headers if n not in _HOP_BY_HOP))

    def response_data(self, up: Exchange, nbytes: int, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.received += nbytes
        self._held(relay)
        if not relay.buffering:
            relay.down.respond_data(nbytes)

    def response_trailers(self, up: Exchange, fields, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.trailers_in = len(fields)
        if relay.buffering:
            self._flush_buffered(relay, fields)
        elif relay.te_down and self.policy != "drop":
            relay.trailers_out = len(fields)
            relay.down.respond_trailers(fields)
        else:
            relay.dropped = [n for n, _ in fields]            # RFC 9110 6.5.1: discarded

    def response_end(self, up: Exchange, time_s: float) -> None:
        relay = self.relays[up.tag]
        relay.end_in_s = time_s
        if relay.buffering:
            if math.isnan(relay.head_out_s):                  # no trailer section came
                self._flush_buffered(relay, ())
        elif relay.trailers_out == 0:
            relay.down.respond_end()
        relay.end_out_s = time_s

    def _flush_buffered(self, relay: _Relay, fields) -> None:
        """The whole message is here: forward it with its trailers (te_down, store) or with
        the mergeable ones merged into the header section (RFC 9110 6.5.1)."""
        relay.head_out_s = self.sim.now
        head = [(n, v) for n, v in relay.head if n not in _HOP_BY_HOP]
        forward_trailers = bool(fields) and relay.te_down
        if fields and not forward_trailers:
            merged = [(n, v) for n, v in fields if _fields.mergeable(n)]
            relay.merged = [n for n, _ in merged]
            relay.dropped = [n for n, _ in fields if not _fields.mergeable(n)]
            head = [(n, v) for n, v in head if n != b"trailer"] + merged
        if not forward_trailers:
            # the length is known now (RFC 9110 8.6); no chunked coding needed on HTTP/1.1
            head = [(n, v) for n, v in head if n != b"content-length"] + [
                (b"content-length", str(relay.received).encode())]
        relay.down.respond_head(tuple(head), end=relay.received == 0 and not forward_trailers)
        if relay.received:
            relay.down.respond_data(relay.received, end=not forward_trailers)
        if forward_trailers:
            relay.trailers_out = len(fields)
            relay.down.respond_trailers(fields)


class _Client:
    def __init__(self, sim: Simulator, plans: list[ResponsePlan]) -> None:
        self.sim = sim
        self.segment: Segment | None = None
        self.plans = {p.index: p for p in plans}
        self.records: dict[int, dict] = {}
        self.open = 0

    def start(self, plan: ResponsePlan) -> None:
        rec = self.records[plan.index] = {
            "start_s": self.sim.now, "headers_s": math.nan, "first_body_s": math.nan, "trailers_s": math.nan,
            "end_s": math.nan, "body_bytes_received": 0, "arrived": {}, "exchange": None,
        }
        self.open += 1
        rec["exchange"] = self.segment.request(plan.request_headers, downstream=self, tag=plan.index)

    def _arrive(self, rec: dict, fields, where: str, time_s: float) -> None:
        plan = self.plans[rec["exchange"].tag]
        names = {n for n, _ in plan.metadata}
        for n, v in fields:
            if n in names and n not in rec["arrived"]:
                rec["arrived"][n] = (where, time_s, v)

    def response_head(self, ex: Exchange, headers, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["headers_s"] = time_s
        self._arrive(rec, headers, "headers", time_s)

    def response_data(self, ex: Exchange, nbytes: int, time_s: float) -> None:
        rec = self.records[ex.tag]
        if math.isnan(rec["first_body_s"]):
            rec["first_body_s"] = time_s
        rec["body_bytes_received"] += nbytes

    def response_trailers(self, ex: Exchange, fields, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["trailers_s"] = time_s
        self._arrive(rec, fields, "trailers", time_s)

    def response_end(self, ex: Exchange, time_s: float) -> None:
        rec = self.records[ex.tag]
        rec["end_s"] = time_s
        plan = self.plans[ex.tag]
        if plan.metadata_in_body and rec["body_bytes_received"] == plan.body_bytes + plan.tail_bytes:
            self._arrive(rec, plan.metadata, "body", time_s)      # the last message was the metadata
        self.open -= 1


@dataclass
class ChainRun:
    """What one run of ``run_chain`` observed (raw records; the study makes tables)."""

    client: dict[int, dict]
    origin: dict[int, dict]
    hops: list[dict[int, _Relay]]
    segments: list[dict]
    sim_end_s: float
    events: int
    plans: list[ResponsePlan] = field(default_factory=list)


def run_chain(plans: list[ResponsePlan], config: ChainConfig) -> ChainRun:
    """Every plan's exchange, started at its ``start_s``, through ``config.hops``."""
    for policy in config.hops:
        if policy not in POLICIES:
            raise ValueError(f"unknown hop policy {policy!r}")
    sim = Simulator(seed=config.seed)
    origin = _Origin(sim, config, {p.index: p for p in plans})
    hops = [_Hop(sim, i + 1, policy) for i, policy in enumerate(config.hops)]
    client = _Client(sim, plans)
    nodes = hops + [origin]
    segments = []
    for i, upstream in enumerate(nodes):
        if i == 0:
            seg = Segment(sim, config, "seg0", rtt_s=config.rtt_s, bandwidth_bps=config.bandwidth_bps,
                          loss=config.loss, upstream=upstream)
        else:
            seg = Segment(sim, config, f"seg{i}", rtt_s=config.hop_rtt_s, bandwidth_bps=config.hop_bandwidth_bps,
                          loss="0", upstream=upstream)
        segments.append(seg)
    client.segment = segments[0]
    for i, hop in enumerate(hops):
        hop.upstream_segment = segments[i + 1]
    for plan in plans:
        sim.call_at(plan.start_s, client.start, plan)
    last_start = max((p.start_s for p in plans), default=0.0)
    sim.run(until_s=last_start + 3600.0)
    missing = [i for i, rec in client.records.items() if math.isnan(rec["end_s"])]
    if missing or len(client.records) != len(plans):
        raise RuntimeError(f"{len(missing)} of {len(plans)} responses never ended "
                           f"(simulation stopped at {sim.now:.3f} s)")
    return ChainRun(client=client.records, origin=origin.records, hops=[h.relays for h in hops],
                    segments=[s.stats() for s in segments], sim_end_s=sim.now, events=sim.events_run, plans=plans)
