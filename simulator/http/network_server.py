"""The server side of ``http.network``'s connections over the transport models (the mixin
``_ServerSide`` of its ``_Conn``), and what both ends of such a connection share: a
stream's record on the client (``_Incoming``, its byte-offset events kept in order by
``_add_mark``) and a request's RFC 9218 urgency (``urgency``).  Written by hand.

Moved out of ``http.network`` (which re-exports ``urgency`` and ``DEFAULT_URGENCY``) so
that the module stays under the size limit, as ``net/tcp_sack.py`` and
``net/tcp_receiver.py`` are mixins of the TCP endpoint: the behaviour is the one
``http.network``'s docstring describes ("Server behaviour", the writer's ``scheduler``,
cancelling a push).  The server answers when a request has arrived: its 103 (RFC 8297)
and every PUSH_PROMISE at once on the request stream, each pushed response on a stream of
its own, the final response ``think_s`` later, all handed to the connection's response
writer (``net.writer`` or ``http.priority``'s), which ``_Conn._open`` makes.  The
connection's set-up, its client side and the sizes of what it writes (``_block``,
``_frame``, ``_body_wire_bytes``, ``_records``) stay in ``http.network``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import deque

from ..net.transport import write_padding
from ..stacks.common import ExchangeSpec
from .handshake import TLS_MAX_RECORD_PLAINTEXT_BYTES, TLS_RECORD_OVERHEAD_BYTES
from .header_sizes import H2_SETTINGS_ACK_BYTES

__all__ = ["urgency", "DEFAULT_URGENCY", "record_end"]

DEFAULT_URGENCY = 3  # RFC 9218 section 4.1
_URGENCY = re.compile(rb"(?:^|,)\s*u\s*=\s*([0-7])")
_name = operator.itemgetter(0)


def urgency(headers) -> int:
    """The urgency of a request's ``priority`` field (RFC 9218 section 4.1), default 3."""
    if type(headers) is tuple:  # the names looked through at C speed, to the first priority
        try:
            headers = headers[operator.indexOf(map(_name, headers), b"priority") :]
        except ValueError:
            return DEFAULT_URGENCY
    for name, value in headers:
        if name == b"priority":
            try:
                u = _field_urgency(value)
            except TypeError:  # an unhashable value (a bytearray): read as it is
                u = _field_urgency.__wrapped__(value)
            if u is not None:
                return u
    return DEFAULT_URGENCY


@functools.lru_cache(maxsize=1 << 10)
def _field_urgency(value) -> int | None:
    """The ``u`` of one ``priority`` value, or None; memoized (a page's requests share a few values)."""
    m = _URGENCY.search(value)
    return int(m.group(1)) if m else None


def record_end(mark: tuple) -> tuple:
    """``mark`` (offset, callback, args) moved to the end of the 16 KiB TLS record that holds its
    offset (a stream's records counted from its start): a receiver uses a record's bytes only
    once it has all of it (RFC 8446 section 5.2).  A mark past the stream's end is met by it."""
    offset, callback, args = mark
    size = TLS_MAX_RECORD_PLAINTEXT_BYTES + TLS_RECORD_OVERHEAD_BYTES
    return (-(-offset // size) * size, callback, args)


def _add_mark(inc: "_Incoming", mark: tuple) -> None:
    """Put ``mark`` (offset, callback, args) in ``inc.marks`` in offset order (after equal
    ones): the browser's marks for streamed discovery are known when it asks, the server's
    (a 103's end) when it writes, and each must fire at its own offset."""
    marks = inc.marks
    if not marks or marks[-1][0] <= mark[0]:
        marks.append(mark)
        return
    i = len(marks)
    while i > 0 and marks[i - 1][0] > mark[0]:
        i -= 1
    marks.insert(i, mark)


class _Incoming:
    """What the client knows of one stream: which resource or push, and events at byte offsets."""

    __slots__ = ("index", "push_key", "marks", "received", "ended", "header_bytes", "promised")

    def __init__(self, index: int | None = None, push_key=None, header_bytes: int = 0) -> None:
        self.index = index
        self.push_key = push_key
        self.marks: deque = deque()  # (end offset, callback, args) in stream order
        self.received = 0
        self.ended = False
        self.header_bytes = header_bytes
        self.promised = push_key is None  # a pushed stream may finish before its promise arrives


class _ServerSide:
    """The server side of ``http.network._Conn`` (a mixin: the state is the connection's)."""

    def _server_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        if stream_id == self.tls_stream:
            self.tls_handshake.server_data(len(data))
            return
        if self.h2_control is not None and not self._settings_acked[1]:
            # The client's SETTINGS came first (RFC 9113 6.5.3).  The h2 stack's server
            # writes its ACK after handling all it received, so it leaves with the response
            # to a request in the same segment: written one turn later here.
            self._settings_acked[1] = True
            self.sim.call_soon(self.t.server.write, self.h2_control[1], b"a" * self._records(H2_SETTINGS_ACK_BYTES))
        if not end:
            return
        if stream_id in self.cancels:
            self._stop(self.cancels[stream_id])
            return
        spec = self.requests.get(stream_id)
        if spec is None:
            return
        frame = self._frame
        inc = self.incoming[stream_id]
        if spec.early_hints:
            hints = [(b":status", b"103")] + [(b"link", v) for v in spec.early_hints]
            self._write_now(
                stream_id,
                self._block(self.response_encoder, hints) + frame,
                inc,
                self.net.listener.on_informational,
                (spec.index, spec.early_hints),
            )
        pushed = []
        for push in spec.pushes:  # every PUSH_PROMISE first, then the pushed responses (as the stacks)
            authority = push.authority or dict(spec.request_headers).get(b":authority", b"")
            scheme = dict(spec.request_headers).get(b":scheme", b"https")  # RFC 9113 8.4.1: the parent's
            request = [(b":method", b"GET"), (b":scheme", scheme), (b":authority", authority), (b":path", push.path)]
            pushed_sid = self.t.server.open_stream(unidirectional=self.transport == "quic")
            url = f"{scheme.decode('latin-1')}://{authority.decode('latin-1')}{push.path.decode('latin-1')}"
            response = [(b":status", b"200"), (b"content-length", str(push.body_bytes).encode())]
            size = self._records(
                self._block(self.response_encoder, response) + frame + self._body_wire_bytes(push.body_bytes)
            )
            self.incoming[pushed_sid] = _Incoming(push_key=(self.key, pushed_sid), header_bytes=size - push.body_bytes)
            self.net.unsettled.add((self.key, pushed_sid))
            promise = self._block(self.response_encoder, request) + frame + 4  # + promised stream / push id
            self._write_now(stream_id, promise, inc, self._promise_arrived, (pushed_sid, url))
            pushed.append((pushed_sid, size))
        for pushed_sid, size in pushed:
            self._send_response(pushed_sid, size, self.net.push_urgency)
        self.sim.call_later(spec.think_s or 0.0, self._respond, stream_id, spec)

    def _respond(self, stream_id: int, spec: ExchangeSpec) -> None:
        block = self._block(self.response_encoder, spec.response_headers) + self._frame
        self._send_response(
            stream_id,
            self._records(block + self._body_wire_bytes(spec.response_body_bytes)),
            urgency(spec.request_headers),
            spec.index,
        )

    def _write_now(self, stream_id: int, size: int, inc: _Incoming, callback, args) -> None:
        size = self._records(size)
        self.writer.unacked_bytes += size
        offset = self.written.get(stream_id, 0) + size
        self.written[stream_id] = offset
        _add_mark(inc, (offset, callback, args))
        self.t.server.write(stream_id, b"h" * size)

    def _send_response(self, stream_id: int, size: int, level: int, index: int | None = None) -> None:
        if self.prioritized:
            # The scheduler's signals: the resource's (a push: its urgency, RFC 9218 defaults).
            self.writer.add(stream_id, size, self.net.priorities.signal(index, level))
            if self.pull:
                self.t.server.want_to_send()
            else:
                self.writer.fill()
            return
        if self.scheduler == "fifo":
            # As the h2 stack: the whole response goes to the transport's send buffer at
            # once, in the order responses are ready; a cancel cannot take it back.
            self.written[stream_id] = self.written.get(stream_id, 0) + size
            self.writer.unacked_bytes += size
            write_padding(self.t.server, stream_id, size, end=True, fill=b"r")  # not ``size`` bytes made
            self.net.settle((self.key, stream_id))
            return
        if self.scheduler != "urgency":
            level = 0
        self.writer.add(stream_id, size, level)
        if self.pull:
            self.t.server.want_to_send()
        else:
            self.writer.fill()

    def _stop(self, pushed_sid: int) -> None:
        """The cancel has reached the server: nothing more of that stream is written."""
        self.cancelled.add(pushed_sid)
        self.writer.stop(pushed_sid)
        self.net.settle((self.key, pushed_sid))

    def _written_in_full(self, stream_id: int) -> None:
        self.net.settle((self.key, stream_id))


class _Pushes:
    """``ModelNetwork``'s side of server push: cancels, and the pushes still unsettled."""

    def cancel_push(self, push_key) -> None:
        """The client cancels a pushed stream (RST_STREAM / STOP_SENDING, ``http.network``'s docstring)."""
        key, pushed_sid = push_key
        self.conns[key].cancel(pushed_sid)

    def settle(self, push_key) -> None:
        """A push is settled: once the page is done and none is left, hand control back."""
        if push_key in self.unsettled:
            self.unsettled.discard(push_key)
            if not self.unsettled and self.listener.done:
                self.sim.stop()

    def settled(self) -> bool:
        """True when every push is written in full or its cancel reached the server."""
        return not self.unsettled

    def push_bytes(self, push_key) -> int:
        """Pushed body bytes that cross the path: what the server wrote (the transport
        delivers it, cancelled or not), at least what the client has received."""
        key, pushed_sid = push_key
        conn = self.conns[key]
        inc = conn.incoming[pushed_sid]
        return max(0, max(inc.received, conn.written.get(pushed_sid, 0)) - inc.header_bytes)
