"""The page-load network over the transport models (TCP for h2, QUIC for h3).  Written by hand.

One shared access path (the client's bottleneck: every connection of the load shares
its bandwidth, queue and loss stream), one ``TcpConnection`` or ``QuicConnection`` per
connection key.  HTTP is modelled by sizes, as ``stacks.model_replay`` does: header
blocks are encoded with the real ``hpack`` encoder (one per connection and direction),
frames add their headers (HTTP/2 9 bytes, RFC 9113 section 4.1; HTTP/3 about 3, RFC 9114
section 7.1), and bodies are padding of their size.

Server behaviour, as the real stacks' (``stacks.common.Endpoint``): when a request has
arrived the server sends at once its 103 (RFC 8297) and, for each push, a PUSH_PROMISE
on the request stream (RFC 9113 section 8.4.1 / RFC 9114 section 7.2.5: frame header,
promised stream or push id, header block) followed by the pushed response on a stream
of its own; ``think_s`` later the final response.

Response bodies go through one writer per connection that keeps at most a congestion
window (at least two packets, at most two bandwidth-delay products) written but not yet
acknowledged -- a server that writes as its socket drains -- so a cancelled push stops
where it is and the order of the writer decides who gets the connection:
``scheduler`` = ``urgency`` (RFC 9218: the lowest urgency first, from the request's
``priority`` field, default 3; round-robin among equals, a packet's worth per turn),
``round-robin`` (aioquic's stream rotation), or ``fifo`` (request order, as the h2
stack writes).

Cancelling a push: the client writes a 13-byte RST_STREAM (HTTP/2) or STOP_SENDING
(QUIC, about the same size) on a fresh stream; the server stops the pushed stream when
that arrives.  What the server wrote of a pushed response until then crosses the path
anyway (the transport delivers what it was handed), so a push's bytes are what the
server wrote; the load runs on after the page is done until every push is settled
(written in full, or its cancel reached the server), as the cancel of a push for a
cached resource often lands after the page has loaded.  Connection set-up: the QUIC model and the TCP model here have no
handshake of their own, so a cold connection is usable after ``setup_s``: DNS, then one
RTT (TCP) plus one RTT for TLS 1.3 (``tls``), or one RTT (QUIC), plus the
serialisation of the server's first flight (about 2.5 KB with an Ed25519 certificate).
"""

from __future__ import annotations

import re
from collections import deque

import hpack

from ...engine import Simulator
from ...net.link import Path
from ...net.quic import QuicConnection
from ...net.tcp import TcpConnection
from ...net.transport import TransportConfig
from ...stacks.common import ExchangeSpec

__all__ = ["ModelNetwork", "setup_s"]

SERVER_FIRST_FLIGHT_BYTES = 2560        # TLS server flight with an Ed25519 certificate (aioquic's)
CLIENT_HELLO_BYTES = 1280
_FRAME = {"tcp": 9, "quic": 3}
_RESET_BYTES = 13                       # RST_STREAM: 9-byte frame header + 4-byte error code
_H2_MAX_FRAME = 16384
SCHEDULERS = ("urgency", "round-robin", "fifo")
DEFAULT_URGENCY = 3                     # RFC 9218 section 4.1
_URGENCY = re.compile(rb"(?:^|,)\s*u\s*=\s*([0-7])")


def urgency(headers) -> int:
    """The urgency of a request's ``priority`` field (RFC 9218 section 4.1), default 3."""
    for name, value in headers:
        if name == b"priority":
            m = _URGENCY.search(value)
            if m:
                return int(m.group(1))
    return DEFAULT_URGENCY


def setup_s(params) -> float:
    """Seconds before a cold connection can carry requests (see the module docstring)."""
    serialisation = 0.0
    if params.bandwidth_bps and (params.protocol == "h3" or params.tls):
        serialisation = (CLIENT_HELLO_BYTES + SERVER_FIRST_FLIGHT_BYTES) * 8 / params.bandwidth_bps
    rtts = 1 if params.protocol == "h3" else (2 if params.tls else 1)
    return params.dns_s + rtts * params.rtt_s + serialisation


class _Incoming:
    """What the client knows of one stream: which resource or push, and events at byte offsets."""

    __slots__ = ("index", "push_key", "marks", "received", "ended", "header_bytes", "promised")

    def __init__(self, index: int | None = None, push_key=None, header_bytes: int = 0) -> None:
        self.index = index
        self.push_key = push_key
        self.marks: deque = deque()       # (end offset, callback, args) in stream order
        self.received = 0
        self.ended = False
        self.header_bytes = header_bytes
        self.promised = push_key is None   # a pushed stream may finish before its promise arrives


class _Conn:
    def __init__(self, net: "ModelNetwork", key: str, number: int, protocol: str | None = None,
                 setup: float | None = None) -> None:
        self.net, self.key = net, key
        sim, params = net.sim, net.params
        self.sim = sim
        self.transport = "tcp" if (protocol or params.protocol) == "h2" else "quic"
        if self.transport == "tcp":
            self.t = TcpConnection(sim, net.path, TransportConfig(cc=params.cc), name=f"tcp{number}", handshake=False)
        else:
            config = TransportConfig(cc=params.cc, initial_rtt_s=0.1)       # aioquic's initial RTT
            self.t = QuicConnection(sim, net.path, config, name=f"quic{number}")
        self.t.server.on_stream_acked = self._on_stream_acked
        self.t.client.on_data = self._client_data
        self.t.server.on_data = self._server_data
        self.ready_s = sim.now + (setup_s(params) if setup is None else setup)
        self.request_encoder, self.response_encoder = hpack.Encoder(), hpack.Encoder()
        self.incoming: dict[int, _Incoming] = {}
        self.requests: dict[int, ExchangeSpec] = {}       # client stream -> spec (both ends in one process)
        self.cancels: dict[int, int] = {}                 # client stream carrying a cancel -> pushed stream
        self.cancelled: set[int] = set()
        self.written: dict[int, int] = {}                 # bytes the server has written per stream
        # The writer: per urgency level a rotation of [stream_id, bytes left to write, order].
        self.scheduler = params.scheduler
        self._active: dict[int, deque] = {}
        self._order = 0
        self._acked: dict[int, int] = {}
        self._unacked_bytes = 0
        self._chunk_bytes = 1460 if self.transport == "tcp" else 1252 - 40
        bdp = params.bandwidth_bps * params.rtt_s / 8 if params.bandwidth_bps else float("inf")
        self._pacing_cap_bytes = 2 * bdp

    # -- client -----------------------------------------------------------------------
    def request(self, spec: ExchangeSpec) -> None:
        if self.sim.now < self.ready_s:
            self.sim.call_at(self.ready_s, self.request, spec)
            return
        sid = self.t.client.open_stream()
        self.requests[sid] = spec
        self.incoming[sid] = _Incoming(index=spec.index)
        block = len(self.request_encoder.encode(list(spec.request_headers)))
        self.t.client.write(sid, b"q" * (block + _FRAME[self.transport]), end=True)

    def cancel(self, pushed_sid: int) -> None:
        if self.sim.now < self.ready_s:
            return
        sid = self.t.client.open_stream()
        self.cancels[sid] = pushed_sid
        self.t.client.write(sid, b"c" * _RESET_BYTES, end=True)

    def _client_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        inc = self.incoming.get(stream_id)
        if inc is None:
            return
        inc.received += len(data)
        marks = inc.marks
        while marks and marks[0][0] <= inc.received:
            _, callback, args = marks.popleft()
            callback(*args)
        if end and not inc.ended:
            inc.ended = True
            if inc.push_key is None:
                self.net.listener.on_response_complete(inc.index)
            elif inc.promised:
                self.net.listener.on_push_complete(inc.push_key)

    def _promise_arrived(self, pushed_sid: int, url: str) -> None:
        inc = self.incoming[pushed_sid]
        inc.promised = True
        self.net.listener.on_push_promise(inc.push_key, url)
        if inc.ended:
            self.net.listener.on_push_complete(inc.push_key)

    # -- server -----------------------------------------------------------------------
    def _server_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        if not end:
            return
        if stream_id in self.cancels:
            self._stop(self.cancels[stream_id])
            return
        spec = self.requests.get(stream_id)
        if spec is None:
            return
        frame = _FRAME[self.transport]
        inc = self.incoming[stream_id]
        if spec.early_hints:
            hints = [(b":status", b"103")] + [(b"link", v) for v in spec.early_hints]
            self._write_now(stream_id, len(self.response_encoder.encode(hints)) + frame,
                            inc, self.net.listener.on_informational, (spec.index, spec.early_hints))
        pushed = []
        for push in spec.pushes:             # every PUSH_PROMISE first, then the pushed responses (as the stacks)
            authority = push.authority or dict(spec.request_headers).get(b":authority", b"")
            request = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority), (b":path", push.path)]
            pushed_sid = self.t.server.open_stream(unidirectional=self.transport == "quic")
            url = f"https://{authority.decode('latin-1')}{push.path.decode('latin-1')}"
            response = [(b":status", b"200"), (b"content-length", str(push.body_bytes).encode())]
            block = len(self.response_encoder.encode(response)) + frame
            self.incoming[pushed_sid] = _Incoming(push_key=(self.key, pushed_sid), header_bytes=block)
            self.net.unsettled.add((self.key, pushed_sid))
            promise = len(self.response_encoder.encode(request)) + frame + 4   # + promised stream / push id
            self._write_now(stream_id, promise, inc, self._promise_arrived, (pushed_sid, url))
            pushed.append((pushed_sid, block + self._body_wire_bytes(push.body_bytes)))
        for pushed_sid, size in pushed:
            self._send_response(pushed_sid, size, self.net.push_urgency)
        self.sim.call_later(spec.think_s or 0.0, self._respond, stream_id, spec)

    def _respond(self, stream_id: int, spec: ExchangeSpec) -> None:
        block = len(self.response_encoder.encode(list(spec.response_headers))) + _FRAME[self.transport]
        self._send_response(stream_id, block + self._body_wire_bytes(spec.response_body_bytes),
                            urgency(spec.request_headers))

    def _body_wire_bytes(self, body: int) -> int:
        if not body:
            return 0
        if self.transport == "tcp":
            return body + 9 * -(-body // _H2_MAX_FRAME)          # one DATA frame header per 16 KiB
        return body + 3                                          # aioquic: one DATA frame per write

    def _write_now(self, stream_id: int, size: int, inc: _Incoming, callback, args) -> None:
        offset = self.written.get(stream_id, 0) + size
        self.written[stream_id] = offset
        inc.marks.append((offset, callback, args))
        self.t.server.write(stream_id, b"h" * size)

    def _send_response(self, stream_id: int, size: int, level: int) -> None:
        if self.scheduler != "urgency":
            level = 0
        self._order += 1
        self._active.setdefault(level, deque()).append([stream_id, size, self._order])
        self._fill()

    def _stop(self, pushed_sid: int) -> None:
        """The cancel has reached the server: nothing more of that stream is written."""
        self.cancelled.add(pushed_sid)
        for level, queue in self._active.items():
            self._active[level] = deque(e for e in queue if e[0] != pushed_sid)
        self.net.settle((self.key, pushed_sid))

    def _fill(self) -> None:
        server = self.t.server
        cwnd = server.cwnd_bytes if self.transport == "tcp" else server.cc.cwnd_bytes
        window = max(min(cwnd, self._pacing_cap_bytes), 2 * self._chunk_bytes)
        while self._unacked_bytes < window:
            level = min((lv for lv, q in self._active.items() if q), default=None)
            if level is None:
                return
            queue = self._active[level]
            entry = queue.popleft()
            stream_id, remaining, _ = entry
            n = min(remaining, self._chunk_bytes)
            entry[1] = remaining - n
            self.written[stream_id] = self.written.get(stream_id, 0) + n
            self._unacked_bytes += n
            server.write(stream_id, b"r" * n, end=entry[1] == 0)
            if entry[1] == 0:
                self.net.settle((self.key, stream_id))
            if entry[1]:
                if self.scheduler == "fifo":
                    queue.appendleft(entry)        # the oldest response keeps the connection
                else:
                    queue.append(entry)            # served: to the back of its rotation

    def _on_stream_acked(self, stream_id: int, acked_offset: int) -> None:
        acked = min(acked_offset, self.written.get(stream_id, 0))
        self._unacked_bytes -= acked - self._acked.get(stream_id, 0)
        self._acked[stream_id] = acked
        self._fill()


class ModelNetwork:
    """Connections over the transport models for one page load (see the module docstring)."""

    def __init__(self, sim: Simulator, params, listener) -> None:
        self.sim, self.params, self.listener = sim, params, listener
        self.path = Path(sim, rtt_s=params.rtt_s, bandwidth_bps=params.bandwidth_bps, queue_bytes=params.queue_bytes,
                         loss=params.loss, name="access")
        self.conns: dict[str, _Conn] = {}
        self.push_urgency = getattr(params, "push_urgency", DEFAULT_URGENCY)
        self.unsettled: set = set()       # pushes neither written in full nor stopped by a cancel

    def connect(self, key: str, *, protocol: str | None = None, setup: float | None = None) -> _Conn:
        """The connection ``key``, opened now if new: over ``protocol`` (default the load's)
        and usable after ``setup`` seconds (default ``setup_s(params)``), for a browser
        model that times DNS and handshakes itself (``studies.coalescing``)."""
        conn = self.conns.get(key)
        if conn is None:
            conn = self.conns[key] = _Conn(self, key, len(self.conns), protocol, setup)
        return conn

    def fetch(self, key: str, spec: ExchangeSpec) -> None:
        self.connect(key).request(spec)

    def cancel_push(self, push_key) -> None:
        key, pushed_sid = push_key
        self.conns[key].cancel(pushed_sid)

    def settle(self, push_key) -> None:
        """A push is settled: once the page is done and none is left, hand control back."""
        if push_key in self.unsettled:
            self.unsettled.discard(push_key)
            if not self.unsettled and self.listener.done:
                self.sim.stop()

    def settled(self) -> bool:
        return not self.unsettled

    def push_bytes(self, push_key) -> int:
        """Pushed body bytes that cross the path: what the server wrote (the transport
        delivers it, cancelled or not), at least what the client has received."""
        key, pushed_sid = push_key
        conn = self.conns[key]
        inc = conn.incoming[pushed_sid]
        return max(0, max(inc.received, conn.written.get(pushed_sid, 0)) - inc.header_bytes)

    def check(self) -> None:
        """The models never give up; the run loop's deadline catches a load that cannot end."""

    def stats(self) -> dict:
        links = (self.path.forward.stats, self.path.reverse.stats)
        return {"connections": len(self.conns),
                "packets_sent": sum(s.packets_sent for s in links),
                "packets_lost": sum(s.packets_lost + s.packets_dropped for s in links)}
