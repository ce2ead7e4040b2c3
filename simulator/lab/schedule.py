"""The lab's servers sending in the order a scheduler of ``http.priority`` picks
(``serve --scheduler NAME``), so that the priorities study's schedulers run behind real
Chromium with the signals it really sends.  Hand-written here: the two adapters; the
schedulers are the model's own (``http.priority.make_scheduler``).

Without ``--scheduler`` the servers keep their own order: hypercorn's HTTP/2 asks the
``priority`` library's RFC 7540 tree, aioquic's HTTP/3 fills each packet round-robin over
its streams (``serve.SERVER_SCHEDULER``).

The signals, per request stream, are what the browser sent: RFC 9218's urgency and
incremental flag from the request's ``Priority`` field (section 5; a malformed one counts as
absent, section 4: a server ignores what it does not understand), on HTTP/2 also the RFC 7540
placement of its HEADERS and PRIORITY frames (section 5.3; the tree's parent, weight and
exclusive flag), and the field values of PRIORITY_UPDATE frames (RFC 9218 section 7: h2 type
0x10, h3 0xF0700 on the client's control stream).  A response joins the scheduler when the
server has bytes of it to send and leaves it when it has none (the scheduler's ``add`` and
``remove``); its rank is the order in which responses first had bytes ready, as in the model.

HTTP/2 (``install_h2``): hypercorn's connection asks ``next(self.priority)`` for the stream
whose next DATA frame it writes (at most the peer's SETTINGS_MAX_FRAME_SIZE, 16 KiB by
default, RFC 9113 section 6.5.2); ``SchedulerTree`` answers in place of the ``priority``
library's tree, charging each pick a frame of ``FRAME_BYTES``.  The model's chunk is a
packet's worth, so a round-robin here turns every 16 KiB rather than every packet.  A frame
picked is committed once written, so the scheduling server writes only what the link will take
soon, as the model's writer does (it keeps the congestion window written, no more): each
connection's socket holds at most ``NOTSENT_LOWAT_BYTES`` not yet sent (``TCP_NOTSENT_LOWAT``)
and asyncio's write buffers (TLS and TCP) are drained before the next frame is picked.

HTTP/3 (``install_h3``): aioquic fills each packet from its streams in its queue's order,
as much of each as fits (``QuicConnection._write_application``); ``ScheduledQuicConnection``
gives it the queue with the control and QPACK streams (and finished ones) first and the
request streams in the scheduler's order (``aioquic_patches.StreamPull.stream_order``), the
scheduler charged the packet room each used.  A stream picked again in the same packet (its
FIN still to go, or flow control holding the rest) leaves the scheduler until the next packet,
so the room goes to the next pick.

Both install by rebinding names inside hypercorn's modules, in the server's own process
(``serve`` is one process that serves the lab only).
"""

from __future__ import annotations

import struct
from dataclasses import replace

from ..http.priority import PrioritySignal, make_scheduler, parse_priority_field
from ..http.priority_signals import ROOT

__all__ = ["ReadyStreams", "SchedulerTree", "packet_order", "install", "FRAME_BYTES"]

FRAME_BYTES = 16384  # a DATA frame hypercorn writes: min(window, SETTINGS_MAX_FRAME_SIZE)
# Unsent bytes the kernel may hold past what TCP has in flight (TCP_NOTSENT_LOWAT), as servers
# that prioritize are configured (without it the socket's buffer, megabytes once autotuned, takes
# the responses in the order written long before the link does, and no scheduler can act).
NOTSENT_LOWAT_BYTES = 16384
WRITE_BUFFER_BYTES = 16384  # asyncio's TLS transport: at most a frame waiting above the socket
PRIORITY_UPDATE_FRAME = 0x10  # RFC 9218 section 7.1 (HTTP/2)
_MIN_ROOM = 32  # packet room below which no STREAM frame (up to 19 bytes of header, RFC 9000 19.8) is worth a pick


def field_signal(value, base: PrioritySignal | None = None) -> PrioritySignal:
    """``base`` with the urgency and incremental flag of a ``Priority`` field value (RFC 9218
    section 5); a malformed value leaves ``base`` as it is (section 4)."""
    base = base or PrioritySignal()
    try:
        urgency, incremental = parse_priority_field(value)
    except ValueError:
        return base
    return replace(base, urgency=urgency, incremental=incremental)


def request_signal(headers) -> PrioritySignal:
    """The signals of a request's header list ((name, value) byte pairs)."""
    for name, value in headers:
        if name == b"priority":
            return field_signal(value)
    return PrioritySignal()


class ReadyStreams:
    """A scheduler of ``http.priority`` over the request streams a live server has: their
    signals as they come (``signal``), and which of them have bytes to send now (``ready``)."""

    def __init__(self, name: str) -> None:
        self.scheduler = make_scheduler(name)
        self.signals: dict[int, PrioritySignal] = {}
        self.ranks: dict[int, int] = {}  # stream -> its rank among responses with bytes ready
        self.waiting: set[int] = set()  # streams in the scheduler now

    def signal(self, stream_id: int, signal: PrioritySignal) -> None:
        """New signals for ``stream_id`` (a request, a PRIORITY frame or a PRIORITY_UPDATE)."""
        self.signals[stream_id] = signal
        if stream_id in self.waiting:
            self.scheduler.update(stream_id, signal)

    def update_field(self, stream_id: int, value: bytes) -> None:
        """A PRIORITY_UPDATE's ``Priority`` field value for ``stream_id`` (RFC 9218 section 7)."""
        self.signal(stream_id, field_signal(value, self.signals.get(stream_id)))

    def ready(self, stream_id: int, has_bytes: bool) -> None:
        """``stream_id`` has bytes to send now, or has none."""
        if has_bytes and stream_id not in self.waiting:
            rank = self.ranks.setdefault(stream_id, len(self.ranks) + 1)
            self.waiting.add(stream_id)
            self.scheduler.add(stream_id, self.signals.get(stream_id, PrioritySignal()), rank)
        elif not has_bytes and stream_id in self.waiting:
            self.waiting.discard(stream_id)
            self.scheduler.remove(stream_id)

    def pick(self) -> int:
        """The stream whose next bytes go now (some stream waits)."""
        return self.scheduler.pick()

    def wrote(self, stream_id: int, nbytes: int) -> None:
        """``nbytes`` of ``stream_id`` went (its turn used)."""
        if self.scheduler.charges_bytes and nbytes > 0:
            self.scheduler.wrote(stream_id, nbytes)

    def forget(self, stream_id: int) -> None:
        """``stream_id`` is closed."""
        self.ready(stream_id, False)
        self.signals.pop(stream_id, None)


# ----------------------------------------------------------------------------------- HTTP/2


class SchedulerTree(ReadyStreams):
    """What hypercorn's HTTP/2 connection asks of the ``priority`` library's ``PriorityTree``
    (insert, reprioritize, block, unblock, remove, next), answered by a scheduler of
    ``http.priority``: ``block`` and ``unblock`` are hypercorn's "no bytes now" and "bytes
    now", ``next`` the stream whose next DATA frame goes."""

    def __init__(self, name: str, errors) -> None:
        super().__init__(name)
        self._errors = errors  # the priority library's exceptions, which hypercorn catches
        self._known: set[int] = set()

    def _place(self, stream_id, depends_on, weight, exclusive) -> None:
        # RFC 7540 section 5.3: the placement its HEADERS or PRIORITY frame carried.
        base = self.signals.get(stream_id) or PrioritySignal()
        parent = depends_on if depends_on else ROOT
        self.signal(stream_id, replace(base, parent=parent, weight=int(weight or 16), exclusive=bool(exclusive)))

    def insert_stream(self, stream_id, depends_on=None, weight=16, exclusive=False) -> None:
        """A new request stream, with its HEADERS frame's placement if it had one."""
        if stream_id in self._known:
            raise self._errors.DuplicateStreamError(stream_id)
        self._known.add(stream_id)
        if depends_on is not None or weight != 16 or exclusive:
            self._place(stream_id, depends_on, weight, exclusive)

    def reprioritize(self, stream_id, depends_on=None, weight=16, exclusive=False) -> None:
        """A PRIORITY frame's (or a HEADERS frame's) placement (RFC 7540 section 5.3.3)."""
        if stream_id not in self._known:
            raise self._errors.MissingStreamError(stream_id)
        self._place(stream_id, depends_on, weight, exclusive)

    def block(self, stream_id) -> None:
        """hypercorn has no bytes of ``stream_id`` to send now."""
        self.ready(stream_id, False)

    def unblock(self, stream_id) -> None:
        """hypercorn has bytes of ``stream_id`` to send."""
        if stream_id in self._known:
            self.ready(stream_id, True)

    def remove_stream(self, stream_id) -> None:
        """``stream_id`` is closed."""
        self._known.discard(stream_id)
        self.forget(stream_id)

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if not self.waiting:
            raise self._errors.DeadlockError("no stream has bytes to send")
        stream_id = self.pick()
        self.wrote(stream_id, FRAME_BYTES)
        return stream_id


def install_h2(name: str) -> None:
    """hypercorn's HTTP/2 connections schedule with ``name``: their ``priority`` is a
    ``SchedulerTree``, told each request's ``Priority`` field and PRIORITY_UPDATE frames."""
    import socket
    import types

    import h2.events
    import hypercorn.protocol.h2 as hypercorn_h2
    import priority
    from hypercorn.asyncio.tcp_server import TCPServer

    shim = types.SimpleNamespace(**{k: getattr(priority, k) for k in dir(priority) if k.endswith("Error")})
    shim.PriorityTree = lambda: SchedulerTree(name, priority)
    hypercorn_h2.priority = shim
    protocol = hypercorn_h2.H2Protocol
    create_stream, handle_events = protocol._create_stream, protocol._handle_events

    async def _create_stream(self, request):
        await create_stream(self, request)
        tree, sent = self.priority, request_signal(request.headers)
        placed = tree.signals.get(request.stream_id) or PrioritySignal()
        tree.signal(request.stream_id, replace(placed, urgency=sent.urgency, incremental=sent.incremental))

    async def _handle_events(self, events):
        for event in events:
            frame = getattr(event, "frame", None)
            if isinstance(event, h2.events.UnknownFrameReceived) and frame.type == PRIORITY_UPDATE_FRAME:
                body = bytes(frame.body)
                if len(body) >= 4:  # else a PROTOCOL_ERROR (RFC 9218 section 7.1), ignored here
                    self.priority.update_field(struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF, body[4:])
        await handle_events(self, events)

    protocol._create_stream, protocol._handle_events = _create_stream, _handle_events
    serve_connection = TCPServer.run

    async def run(self):
        # The frames picked go to the link soon: at most NOTSENT_LOWAT_BYTES unsent in the
        # kernel (checked per buffer segment), a frame's worth in asyncio's TLS transport.
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, NOTSENT_LOWAT_BYTES)
        transport = self.writer.transport
        transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
        await serve_connection(self)

    TCPServer.run = run


# ----------------------------------------------------------------------------------- HTTP/3


def _is_request(stream_id: int) -> bool:
    return stream_id % 4 == 0  # client-initiated bidirectional (RFC 9000 section 2.1; RFC 9114 6.1)


def packet_order(streams: ReadyStreams, queue, builder):
    """Every stream of aioquic's ``queue`` once, in the order one packet is to be filled from
    them: the control and QPACK streams (and finished ones, which aioquic then discards) as
    queued, then the request streams the scheduler picks, each charged the room it used, then
    the other request streams as queued."""
    requests = []
    for stream in queue:
        if _is_request(stream.stream_id) and not stream.is_finished:
            requests.append(stream)
        else:
            yield stream
    for stream in requests:
        streams.ready(stream.stream_id, not stream.sender.buffer_is_empty)
    by_id = {stream.stream_id: stream for stream in requests}
    served = set()
    while streams.waiting and builder.remaining_flight_space >= _MIN_ROOM:
        stream_id = streams.pick()
        stream = by_id.get(stream_id)
        if stream is None:
            break
        if stream_id in served:
            # It wrote what it could (its FIN still to go, or flow control holds the rest):
            # the packet's room goes to the next pick; the stream rejoins with the next packet.
            streams.ready(stream_id, False)
            continue
        served.add(stream_id)
        room = builder.remaining_flight_space
        yield stream
        streams.wrote(stream_id, room - builder.remaining_flight_space)
        if stream.sender.buffer_is_empty:
            streams.ready(stream_id, False)
    yield from (s for s in requests if s.stream_id not in served)


def install_h3(name: str) -> None:
    """hypercorn's HTTP/3 connections schedule with ``name`` (the module docstring)."""
    import hypercorn.protocol.h3 as hypercorn_h3
    import hypercorn.protocol.quic as hypercorn_quic
    from aioquic.quic.connection import QuicConnection
    from aioquic.quic.events import StreamDataReceived

    from ..http.priority_stacks_h3 import ControlStreamReader
    from ..stacks.aioquic_patches import StreamPull

    class ScheduledQuicConnection(StreamPull, QuicConnection):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.lab_streams = ReadyStreams(name)
            self.lab_control = ControlStreamReader()
            self.stream_order = self._order

        def _order(self, queue, builder):
            return packet_order(self.lab_streams, queue, builder)

    hypercorn_quic.QuicConnection = ScheduledQuicConnection
    protocol = hypercorn_h3.H3Protocol
    create_stream, handle_event = protocol._create_stream, protocol.handle

    async def _create_stream(self, request):
        quic = self.connection._quic
        quic.lab_streams.signal(request.stream_id, request_signal(request.headers))
        await create_stream(self, request)

    async def handle(self, quic_event):
        await handle_event(self, quic_event)  # aioquic learns which stream is the control stream here
        quic = self.connection._quic
        if type(quic_event) is StreamDataReceived and quic_event.stream_id == self.connection._peer_control_stream_id:
            for stream_id, value in quic.lab_control.feed(quic_event.data):
                quic.lab_streams.update_field(stream_id, value)

    protocol._create_stream, protocol.handle = _create_stream, handle


def check_hypercorn() -> None:
    """Raise ``RuntimeError`` (one line) unless hypercorn still has what the adapters rebind."""
    import inspect

    import hypercorn.protocol.h2 as hypercorn_h2
    import hypercorn.protocol.h3 as hypercorn_h3
    import hypercorn.protocol.quic as hypercorn_quic

    missing = [
        f"{module.__name__}.{name}"
        for module, name in (
            (hypercorn_h2, "priority"),
            (hypercorn_h2.H2Protocol, "_create_stream"),
            (hypercorn_h2.H2Protocol, "_handle_events"),
            (hypercorn_h3.H3Protocol, "_create_stream"),
            (hypercorn_h3.H3Protocol, "handle"),
            (hypercorn_quic, "QuicConnection"),
            (__import__("hypercorn.asyncio.tcp_server", fromlist=["TCPServer"]).TCPServer, "run"),
        )
        if not hasattr(module, name)
    ]
    if "priority.PriorityTree()" not in inspect.getsource(hypercorn_h2.H2Protocol.__init__):
        missing.append("H2Protocol's priority.PriorityTree()")
    if missing:
        raise RuntimeError("hypercorn lacks what simulator/lab/schedule.py rebinds: " + ", ".join(missing))


def install(name: str, proto: str) -> None:
    """The servers of ``proto`` (h2 or h3; h3's TCP fallback is HTTP/2) schedule with ``name``."""
    make_scheduler(name)  # an unknown name: InputError naming the choices
    check_hypercorn()
    install_h2(name)
    if proto == "h3":
        install_h3(name)
