"""A scheduler of ``http.priority`` on the real aioquic HTTP/3 server (``stacks.h3``): the
same page and scheduler run on the real stack and on the model, as ``priority_stacks``
does for ``h2``.  Written by hand: aioquic serves its streams in its own rotation and has
no scheduler; ``stacks.aioquic_patches.StreamPull`` gives it the hook this server uses.

``ScheduledH3Server`` is the server end of an ``H3Session`` (``H3Session(...,
server_end=...)``, ``scheduled_h3_server(plan)``).  Its final responses are not written
when ready, as the stack's server does; each joins ``make_scheduler(plan.scheduler)`` with
the signals the model gives it (``PriorityPlan.signal``), and aioquic asks for data as it
builds each packet (``stream_pull``), as the model's QUIC pulls a packet's worth from its
writer (``net.writer.ResponseWriter.pull``): while the packet has room, up to one model chunk
(``chunk_bytes``, the model's packet payload: the datagram less 40 bytes) per packet, the scheduler picks a stream and
the server writes the next piece of its response, a DATA frame (RFC 9114 section 7.2.1)
with the body bytes the model's count of that piece holds, which aioquic packs into the
packet at once.  So the pieces go in the scheduler's order, a packet's worth at a time;
what aioquic already holds goes first (its control and QPACK streams, and the bytes of a
lost packet, RFC 9000 section 13.3), as the model resends lost data in its stream's turn.

A piece is counted in the model's bytes: a response is its HEADERS frame (encoded when its
first piece is written, so the QPACK encoder follows the write order) and its body with one
DATA frame header (``framing.H3_FRAME_HEADER_BYTES``); the real run writes a DATA frame per
piece, so its frame headers add a few bytes per packet on the wire, which the next packet's
room absorbs (aioquic sends what it holds first).

PRIORITY_UPDATE (RFC 9218 section 7.2): aioquic has no API for it, so the client writes the
frame (type 0xF0700, the request stream's id and the ``Priority`` field value) on its
control stream itself (``send_priority_update``), and this server reads the client's control
stream beside aioquic (which discards frame types it does not know, RFC 9114 section 9) and
moves the stream in its scheduler; as on h2 the
field carries urgency and incremental, the rest of the signal comes from the plan.
Not scheduled (written as the stack's server writes them): 103 Early Hints, pushes,
responses reset by the server, bodies produced over time or buffered, trailers.

``response_frames`` lists (stream, frame type, body bytes) of every DATA frame the server
wrote, in the order written (each goes into the packet being built when written).
"""

from __future__ import annotations

from aioquic.buffer import Buffer, BufferReadError, encode_uint_var
from aioquic.h3.connection import encode_frame
from aioquic.quic.events import StreamDataReceived

from ..stacks import aioquic_patches
from ..stacks.h3 import H3End, SimQuicConnection
from .framing import H3_FRAME_HEADER_BYTES
from .priority import PriorityPlan, make_scheduler
from .priority_qlog import priority_field_value
from .priority_stacks import ScheduledResponses, ScheduledResponse

__all__ = [
    "ScheduledH3Server",
    "scheduled_h3_server",
    "PulledQuicConnection",
    "DATA_FRAME",
    "PRIORITY_UPDATE_REQUEST_FRAME",
    "send_priority_update",
    "ControlStreamReader",
]

DATA_FRAME = 0x0  # RFC 9114 section 7.2.1
PRIORITY_UPDATE_REQUEST_FRAME = 0xF0700  # RFC 9218 section 7.2: for a request stream
_MODEL_PACKET_OVERHEAD = 40  # the model's QUIC chunk: the datagram less this (http.network)
_STREAM_FRAME_BYTES = 12  # a STREAM frame's type, stream id, offset and length (RFC 9000 19.8), at most
_MIN_ROOM = 64  # a packet with less room left takes no new piece


class ControlStreamReader:
    """A peer's HTTP/3 control stream, read beside aioquic (which discards the frame types it
    does not know as they arrive, RFC 9114 section 9): its stream type, then frames (type,
    length, payload; RFC 9114 section 7.1).  ``feed(data)`` returns the PRIORITY_UPDATEs for
    request streams completed by ``data``, as (stream id, ``Priority`` field value) (RFC 9218
    section 7.2: the prioritized stream's id, a varint, then the field); one whose id does not
    parse is a frame error there and is skipped here."""

    def __init__(self) -> None:
        self._unparsed = bytearray()
        self._typed = False

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """The PRIORITY_UPDATEs made whole by ``data`` (the stream's next bytes)."""
        self._unparsed += data
        buf = Buffer(data=bytes(self._unparsed))
        done, updates = 0, []
        try:
            if not self._typed:
                buf.pull_uint_var()  # the stream type (0x00, RFC 9114 section 6.2.1)
                self._typed, done = True, buf.tell()
            while True:
                frame_type, length = buf.pull_uint_var(), buf.pull_uint_var()
                if buf.capacity - buf.tell() < length:
                    break
                payload = buf.pull_bytes(length)
                done = buf.tell()
                if frame_type == PRIORITY_UPDATE_REQUEST_FRAME:
                    inner = Buffer(data=payload)
                    try:
                        stream_id = inner.pull_uint_var()
                    except BufferReadError:
                        continue
                    updates.append((stream_id, payload[inner.tell() :]))
        except BufferReadError:
            pass  # a frame not whole yet: the rest comes with the next bytes
        del self._unparsed[:done]
        return updates


class PulledQuicConnection(aioquic_patches.StreamPull, SimQuicConnection):
    """``SimQuicConnection`` whose server asks for stream data as each packet is built."""


def _model_body_before(offset: int, headers_bytes: int, body_bytes: int) -> int:
    """Body bytes in the first ``offset`` bytes of a response as the model counts it: the
    HEADERS frame, one DATA frame header, the body."""
    return max(0, min(body_bytes, offset - headers_bytes - H3_FRAME_HEADER_BYTES))


class ScheduledH3Server(ScheduledResponses, H3End):
    """The aioquic HTTP/3 server with a scheduler of ``http.priority`` choosing each piece's
    stream (the module docstring)."""

    quic_class = PulledQuicConnection

    def __init__(
        self, session, *, is_client: bool, out_link, addr, peer_addr, plan: PriorityPlan, chunk_bytes: int | None = None
    ) -> None:
        assert not is_client, "a scheduled end is a server"
        super().__init__(session, is_client=False, out_link=out_link, addr=addr, peer_addr=peer_addr)
        self.plan = plan
        self.scheduler = make_scheduler(plan.scheduler)
        self.chunk_bytes = chunk_bytes or self.params.max_datagram_bytes - _MODEL_PACKET_OVERHEAD
        self.response_frames: list[tuple[int, int, int]] = []  # (stream, frame type, body bytes)
        self._waiting: dict[int, ScheduledResponse] = {}
        self._signals: dict[int, object] = {}
        self._updates = dict(plan.updates)
        self._control = ControlStreamReader()  # the client's control stream
        self._count = 0

    def start_quic(self, quic) -> None:
        """The stack's, with this server's pull as the connection's ``stream_pull``."""
        super().start_quic(quic)
        quic.stream_pull = self._pull
        handle_event = self.h3.handle_event

        def on_event(event):
            h3_events = handle_event(event)
            if type(event) is StreamDataReceived and event.stream_id == self.h3._peer_control_stream_id:
                self._control_bytes(event.data)
            return h3_events

        self.h3.handle_event = on_event

    def _control_bytes(self, data: bytes) -> None:
        for stream_id, field_value in self._control.feed(data):
            self._reprioritize(stream_id, field_value)

    def _pull(self, builder):
        """aioquic builds a packet: pieces of the streams the scheduler picks, up to the
        model's chunk and while the packet has room, each yielded for aioquic to pack."""
        wrote = 0
        streams = self.quic._streams
        while self._waiting and wrote < self.chunk_bytes:
            room = builder.remaining_flight_space - _STREAM_FRAME_BYTES
            if room < _MIN_ROOM:
                return
            stream_id = self.scheduler.pick()
            wrote += self._write_piece(stream_id, min(self.chunk_bytes - wrote, room))
            stream = streams.get(stream_id)
            if stream is None:
                return
            yield stream
            if not stream.sender.buffer_is_empty:
                return  # the packet is full, or flow control holds it: the rest goes next

    def _write_piece(self, stream_id: int, limit: int) -> int:
        """The next piece of ``stream_id``'s response, at most ``limit`` of the model's bytes (its
        HEADERS first): those bytes, charged to the scheduler."""
        r = self._waiting[stream_id]
        if r.headers_bytes < 0:
            frame_bytes, encoder_bytes = self._write_headers(stream_id, r.spec.response_headers, r.body_bytes == 0)
            self.headers_frames_sent += 1
            self._record_headers_bytes(stream_id, "response", frame_bytes, encoder_bytes)
            r.headers_bytes = frame_bytes
            r.size = frame_bytes + (r.body_bytes + H3_FRAME_HEADER_BYTES if r.body_bytes else 0)
        n = min(r.size - r.offset, limit)
        r.offset += n
        share = _model_body_before(r.offset, r.headers_bytes, r.body_bytes) - r.body_sent
        if r.offset >= r.size:
            share = r.body_bytes - r.body_sent
        if share > 0:
            last = r.body_sent + share == r.body_bytes
            self._write_data(stream_id, b"\0" * share, last)
            self.data_bytes_written[stream_id] = self.data_bytes_written.get(stream_id, 0) + share
            self.response_frames.append((stream_id, DATA_FRAME, share))
            r.body_sent += share
        if self.scheduler.charges_bytes:
            self.scheduler.wrote(stream_id, n)
        if r.offset >= r.size:
            del self._waiting[stream_id]
            self.scheduler.remove(stream_id)
        return n

    def _respond(self, stream_id: int, spec) -> None:
        """A final response is ready: it joins the scheduler (``ScheduledResponses._schedule``)."""
        if self._schedule(stream_id, spec):
            self.pump()  # aioquic builds its packets now, pulling from the scheduler
        else:
            super()._respond(stream_id, spec)


def send_priority_update(client, stream_id: int, signal) -> None:
    """The client end ``client`` (an ``H3End``) writes a PRIORITY_UPDATE for request stream
    ``stream_id`` on its control stream (RFC 9218 section 7.2: type 0xF0700, the stream id
    as a varint, the ``Priority`` field value, section 5) and sends it."""
    payload = encode_uint_var(stream_id) + priority_field_value(signal).encode("ascii")
    client.quic.send_stream_data(
        client.h3._local_control_stream_id, encode_frame(PRIORITY_UPDATE_REQUEST_FRAME, payload)
    )
    client.h3.frames_sent["PRIORITY_UPDATE"] += 1
    client.transmit()


def scheduled_h3_server(plan: PriorityPlan, chunk_bytes: int | None = None):
    """The ``server_end`` of an ``H3Session`` that schedules with ``plan``."""

    def make(session, *, is_client: bool, out_link, addr, peer_addr):
        return ScheduledH3Server(
            session,
            is_client=is_client,
            out_link=out_link,
            addr=addr,
            peer_addr=peer_addr,
            plan=plan,
            chunk_bytes=chunk_bytes,
        )

    return make
