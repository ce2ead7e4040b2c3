"""A scheduler of ``http.priority`` on the real ``h2`` server (``stacks.h2``): the same page
and scheduler run on the real stack and on the model.  Written by hand: ``h2`` sends
frames in the order its caller writes them and has no scheduler of its own.

``ScheduledH2Server`` is the server end of an ``H2Session`` (``H2Session(...,
server_end=...)``, ``scheduled_h2_server(plan)``).  Its final responses are not written
when ready, as the stack's server does; each joins ``make_scheduler(plan.scheduler)``
with the signals the model gives it (``PriorityPlan.signal``: the resource's, or the
request's ``priority`` urgency), and the server writes as the transport drains, as the
model's writer (``priority_writer.ScheduledWriter``) does: while the response bytes
written and not yet acknowledged are below the larger of TCP's congestion window and two
chunks, the scheduler picks a stream and the server writes one chunk of it (on every
acknowledgement and when a response joins).

A chunk is the model's: the model counts a response as its HEADERS frame and its body
in DATA frames of up to 16 KiB (a 9-byte frame header each, RFC 9113 section 4.1), and
writes it ``chunk_bytes`` (1,460, one segment) at a time.  The server writes the first
chunk as the HEADERS frame (encoded at that moment, so the HPACK dynamic table follows
the write order, RFC 7541 section 2.3.2) and a DATA frame with the chunk's share of the
body, and every later chunk as one DATA frame with its share; so the real run has as
many DATA frames per response as the model has chunks, each with the body bytes of its
chunk, and a frame header (9 bytes) more per chunk on the wire.

A PRIORITY_UPDATE (RFC 9218 section 7.1: type 0x10 on stream 0, the prioritized stream
and the ``Priority`` field value) that reaches the server moves its stream in the
scheduler.  The frame's field carries urgency and incremental only; the server takes the
rest of the new signal (an RFC 7540 tree placement) from the plan, as the model does.

Not scheduled (written as the stack's server writes them, at once): 103 Early Hints,
pushes, responses reset by the server, bodies produced over time or buffered, trailers.
Flow control is not a limit with the stack's windows (16 MiB); when it is, the stream
waits for its WINDOW_UPDATE and the writer stops until then.

``response_frames`` lists (stream, frame type, payload bytes) of every frame the
server wrote, read back from its bytes by the frame scanner (``frames.H2Scanner``).
"""

from __future__ import annotations

import struct
from collections import deque

import h2.events

from ..frames import H2Scanner
from ..stacks.h2 import H2End
from .framing import H2_FRAME_HEADER_BYTES, H2_MAX_FRAME_BYTES
from .network import urgency
from .priority import PriorityPlan, make_scheduler, with_urgency
from .priority_qlog import priority_field_value
from .priority_signals import parse_priority_field

__all__ = [
    "ScheduledH2Server",
    "scheduled_h2_server",
    "PRIORITY_UPDATE_FRAME",
    "priority_update_payload",
    "model_body_before",
    "DATA_FRAME",
    "HEADERS_FRAME",
]

PRIORITY_UPDATE_FRAME = 0x10  # RFC 9218 section 7.1 (HTTP/2)
DATA_FRAME, HEADERS_FRAME = 0x0, 0x1  # RFC 9113 sections 6.1, 6.2
CHUNK_BYTES = 1460  # the model's chunk over TCP (http.network: one segment)


def priority_update_payload(stream_id: int, signal) -> bytes:
    """An HTTP/2 PRIORITY_UPDATE frame's payload (RFC 9218 section 7.1): a reserved bit and
    the 31-bit prioritized stream id, then the ``Priority`` field value (section 5)."""
    return struct.pack(">I", stream_id & 0x7FFFFFFF) + priority_field_value(signal).encode("ascii")


def model_body_before(offset: int, headers_bytes: int, body_bytes: int) -> int:
    """Body bytes in the first ``offset`` bytes of a response as the model counts it: the
    HEADERS frame (``headers_bytes``), then DATA frames of up to 16 KiB, each after its
    9-byte header (RFC 9113 section 4.1)."""
    x = offset - headers_bytes
    if x <= 0:
        return 0
    frame = H2_FRAME_HEADER_BYTES + H2_MAX_FRAME_BYTES
    full, rest = divmod(x, frame)
    return min(body_bytes, full * H2_MAX_FRAME_BYTES + max(0, rest - H2_FRAME_HEADER_BYTES))


def _model_size(headers_bytes: int, body_bytes: int) -> int:
    """The model's bytes of a response (``http.network._Conn._body_wire_bytes`` over TCP)."""
    frames = -(-body_bytes // H2_MAX_FRAME_BYTES)
    return headers_bytes + body_bytes + H2_FRAME_HEADER_BYTES * frames


class ScheduledResponse:
    """A response in the scheduler: its spec, and how far its chunks (the model's bytes) have gone."""

    __slots__ = ("spec", "body_bytes", "headers_bytes", "size", "offset", "body_sent")

    def __init__(self, spec) -> None:
        self.spec = spec
        self.body_bytes = spec.response_body_bytes
        self.headers_bytes = -1  # its HEADERS frame's bytes, once written (its first chunk)
        self.size = 0  # the model's bytes of it (known with its HEADERS)
        self.offset = 0  # of ``size``: how far the chunks have gone
        self.body_sent = 0


class ScheduledResponses:
    """What the h2 and h3 scheduling servers share: a final response joins the scheduler
    (``_schedule``), and a PRIORITY_UPDATE re-signals a response that still waits
    (``_reprioritize``).  The server sets ``plan``, ``scheduler``, ``_waiting``,
    ``_signals``, ``_updates`` and ``_count``."""

    def _schedule(self, stream_id: int, spec) -> bool:
        """``spec``'s response joins the scheduler; False for those the module docstring names
        as not scheduled (the caller writes them as the stack's server writes them)."""
        if (
            spec.reset_by == "server"
            or spec.body_rate_bytes_per_s is not None
            or spec.buffer_body
            or spec.body_tail_bytes
            or spec.trailers
        ):
            return False
        signal = self.plan.signal(spec.index, urgency(spec.request_headers))
        self._count += 1
        self._waiting[stream_id] = ScheduledResponse(spec)
        self._signals[stream_id] = signal
        self.scheduler.add(stream_id, signal, self._count)
        return True

    def _reprioritize(self, stream_id: int, field_value: bytes) -> None:
        """RFC 9218 section 7: the prioritized stream's new signals (the ``Priority`` field
        value of its PRIORITY_UPDATE, section 5), if it still waits."""
        if stream_id not in self._waiting:
            return
        urgency_, incremental = parse_priority_field(field_value)
        index = self._waiting[stream_id].spec.index
        signal = self._updates.get(index) or with_urgency(self._signals[stream_id], urgency_, incremental)
        self._signals[stream_id] = signal
        self.scheduler.update(stream_id, signal)


class ScheduledH2Server(ScheduledResponses, H2End):
    """The ``h2`` server with a scheduler of ``http.priority`` choosing each chunk's stream
    (the module docstring)."""

    def __init__(
        self, session, *, is_client: bool, tcp_end, tls, plan: PriorityPlan, chunk_bytes: int = CHUNK_BYTES
    ) -> None:
        assert not is_client, "a scheduled end is a server"
        self.plan = plan
        self.scheduler = make_scheduler(plan.scheduler)
        self.chunk_bytes = chunk_bytes
        self.response_frames: list[tuple[int, int, int]] = []  # (stream, frame type, payload bytes)
        self.unacked_bytes = 0  # the model's bytes of the chunks not yet acknowledged
        self._tcp_written = 0  # bytes written to TCP (the connection's byte stream)
        self._in_flight: deque = deque()  # (start, end, model bytes left) of each chunk in TCP bytes, unacked
        self._waiting: dict[int, ScheduledResponse] = {}
        self._signals: dict[int, object] = {}
        self._updates = dict(plan.updates)
        self._count = 0
        self._blocked = False  # a stream waits for flow control
        self._frame_scanner = H2Scanner((1 << 24) - 1, preface=False, validate=False)
        super().__init__(session, is_client=False, tcp_end=tcp_end, tls=tls)
        send = self._send

        def scanned(data: bytes) -> None:  # every byte the server sends, read back frame by frame
            if self._frame_scanner.feed(data):
                self.response_frames += [
                    (sid, ftype, n)
                    for ftype, _, sid, _, n in self._frame_scanner.results()
                    if ftype in (DATA_FRAME, HEADERS_FRAME)
                ]
            send(data)

        self._send = scanned
        tcp_end.on_stream_acked = self._on_acked

    # -- the window (as priority_writer.ScheduledWriter) --------------------------------
    def _write_tcp(self, data: bytes) -> None:
        self._tcp_written += len(data)
        super()._write_tcp(data)

    def _on_acked(self, _stream: int, acked_offset: int) -> None:
        """TCP acknowledged the connection's bytes up to ``acked_offset``: the chunks among
        them leave the count in flight (by the model's bytes of each, a partly acknowledged
        one by its bytes acknowledged), and the window is filled again."""
        flight = self._in_flight
        while flight and flight[0][0] < acked_offset:
            start, end, left = flight[0]
            if acked_offset >= end:
                self.unacked_bytes -= left
                flight.popleft()
                continue
            credit = min(left, acked_offset - start)
            self.unacked_bytes -= credit
            flight[0] = (acked_offset, end, left - credit)
            break
        if self._waiting:
            self.fill()

    def fill(self) -> None:
        """Chunks the scheduler picks until the window (the larger of cwnd and two chunks) is
        full, counted in the model's bytes of each chunk so that as many go as the model's
        writer sends (the real chunk has a DATA frame header more)."""
        self.flush()  # what h2 holds (SETTINGS ACK, WINDOW_UPDATE) goes first, uncounted
        start = self._tcp_written
        window = max(self.tcp.cwnd_bytes, 2 * self.chunk_bytes)
        chunks = []  # (bytes given to h2, the model's bytes)
        while self._waiting and self.unacked_bytes < window:
            wrote, model_n = self._write_chunk(self.scheduler.pick())
            if wrote < 0:
                self._blocked = True
                break
            chunks.append((wrote, model_n))
            self.unacked_bytes += model_n
        self.flush()
        span, plain = self._tcp_written - start, sum(w for w, _ in chunks)
        at = 0
        for wrote, model_n in chunks:  # each chunk's place in the TCP bytes (TLS records scale it)
            a, at = at, at + wrote
            self._in_flight.append((start + a * span // plain, start + at * span // plain, model_n))

    def _write_chunk(self, stream_id: int) -> tuple[int, int]:
        """One chunk of ``stream_id`` (its HEADERS first): the bytes given to h2 (-1 if flow
        control admits none of its body now) and the model's bytes of the chunk."""
        r = self._waiting[stream_id]
        wrote = 0
        if r.headers_bytes < 0:
            spec = r.spec
            end = r.body_bytes == 0
            frames, _ = self._write_headers(stream_id, spec.response_headers, end)
            self.headers_frames_sent += 1
            self._record_headers_bytes(stream_id, "response", frames, 0)
            r.headers_bytes = frames
            r.size = _model_size(frames, r.body_bytes)
            wrote = frames
        n = min(r.size - r.offset, self.chunk_bytes) if r.offset < r.size else self.chunk_bytes
        share = model_body_before(r.offset + n, r.headers_bytes, r.body_bytes) - r.body_sent
        if r.offset + n >= r.size:
            share = r.body_bytes - r.body_sent  # the last chunk: the rest (none left in the model's count)
        r.offset += n
        charged = n  # the scheduler is charged the model's bytes, so it decides as there
        if share > 0:
            allowed = self._writable(stream_id)
            if allowed <= 0 and not wrote:
                r.offset -= n
                return -1, 0
            share = min(share, allowed, self.conn.max_outbound_frame_size)
            last = r.body_sent + share == r.body_bytes
            self._write_data(stream_id, b"\0" * share, last)
            self.data_bytes_written[stream_id] = self.data_bytes_written.get(stream_id, 0) + share
            r.body_sent += share
            wrote += H2_FRAME_HEADER_BYTES + share
        if self.scheduler.charges_bytes:
            self.scheduler.wrote(stream_id, charged)
        if r.body_sent == r.body_bytes:
            del self._waiting[stream_id]
            self.scheduler.remove(stream_id)
        return wrote, charged

    # -- responses ----------------------------------------------------------------------
    def _respond(self, stream_id: int, spec) -> None:
        """A final response is ready: it joins the scheduler (``ScheduledResponses._schedule``)."""
        if self._schedule(stream_id, spec):
            self.fill()
        else:
            super()._respond(stream_id, spec)

    def pump(self, stream_id: int | None = None) -> None:
        """The stack's own pump, then the scheduler's: a WINDOW_UPDATE may have unblocked a write."""
        super().pump(stream_id)
        if self._blocked:  # a WINDOW_UPDATE may have come in
            self._blocked = False
            self.fill()

    def _handle(self, event) -> None:
        if isinstance(event, h2.events.UnknownFrameReceived) and event.frame.type == PRIORITY_UPDATE_FRAME:
            self._priority_update(bytes(event.frame.body))
            return
        super()._handle(event)

    def _priority_update(self, payload: bytes) -> None:
        """RFC 9218 section 7.1: the prioritized stream id, then its new signals."""
        if len(payload) < 4:
            return  # section 7.1: a PROTOCOL_ERROR; the workbench's own client never sends it
        self._reprioritize(struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF, payload[4:])


def scheduled_h2_server(plan: PriorityPlan, chunk_bytes: int = CHUNK_BYTES):
    """The ``server_end`` of an ``H2Session`` that schedules with ``plan``."""

    def make(session, *, is_client: bool, tcp_end, tls):
        return ScheduledH2Server(
            session, is_client=is_client, tcp_end=tcp_end, tls=tls, plan=plan, chunk_bytes=chunk_bytes
        )

    return make
