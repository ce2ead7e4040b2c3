"""The writers that let a scheduler choose each chunk's stream: ``ScheduledWriter``
(``net.writer.ResponseWriter`` with a scheduler's ``pick`` in place of its rotation per
level) and, over the C TCP endpoint and the C QUIC one (``NativeQuicEndpoint``), the C
writer of ``net.writer`` (``net._tcp.ResponseWriter``, ``net._quic.ResponseWriter``: the
same turns, ``net/_writer_turns.h``): for a scheduler of levels and groups with the groups
as its levels (``_NativeLevelWriter``, no Python per chunk; ``cf-shared-sequential``'s split
counted there too), for any other (``tree``, added ones) with the scheduler's ``pick_run``,
``settle`` and ``remove`` as hooks (``_NativeScheduledWriter``: the window keeping or the
pulls, the acknowledgements and the writes in C, the scheduler's own calls in Python once a
run of chunks), so a scheduler costs about what the fixed writer does over h2 and h3.  The
RFC 7540 tree (``TreeScheduler``), whose runs are one chunk long among weighted siblings, is
given its C twin (``StrideTree`` of the writer's extension) wherever the C extension is in
use: the C writer picks from it with no Python call per chunk (``ResponseWriter.tree``), and
a Python ``ScheduledWriter``'s ``pick`` and ``wrote`` are the twin's.  Written by hand
around those.
"""

from __future__ import annotations

from ..net import native
from ..net.quic.native import NativeQuicEndpoint
from ..net.writer import ResponseWriter, _pad
from .priority_levels import LevelScheduler
from .priority_signals import PrioritySignal, Scheduler
from .priority_tree import TreeScheduler

__all__ = ["ScheduledWriter", "scheduled_writer"]


class ScheduledWriter(ResponseWriter):
    """``net.writer.ResponseWriter`` with a scheduler choosing each chunk's stream: the
    same window keeping over TCP and the same pulls over QUIC, ``add`` taking a
    ``PrioritySignal`` where the fixed writer takes an urgency level."""

    __slots__ = ("scheduler", "_left", "_count")

    def __init__(
        self,
        endpoint,
        chunk_bytes: int,
        written: dict[int, int],
        on_written,
        *,
        fill_on_ack: bool,
        scheduler: Scheduler,
    ) -> None:
        super().__init__(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack)
        self.scheduler = scheduler
        self._left: dict[int, int] = {}  # stream -> bytes still to write
        self._count = 0

    @property
    def waiting(self) -> bool:
        """Whether some response still has bytes to write."""
        return bool(self._left)

    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        """A response of ``size`` bytes with data ready joins the scheduler with its signals."""
        self._count += 1
        self._left[stream_id] = size
        self.scheduler.add(stream_id, signal, self._count)

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """A PRIORITY_UPDATE (or PRIORITY frame) for ``stream_id`` reached the server."""
        if stream_id in self._left:
            self.scheduler.update(stream_id, signal)

    def stop(self, stream_id: int) -> None:
        """The response is cancelled (RST_STREAM or STOP_SENDING): nothing more of it is written."""
        if self._left.pop(stream_id, None) is not None:
            self.scheduler.remove(stream_id)

    def write_next(self, limit: int) -> int:
        # _write_chunk's body inlined: QUIC's pull calls this once a packet.
        """Write one chunk (at most ``limit`` bytes) of the stream the scheduler picks; its size."""
        left = self._left
        if not left:
            return 0
        scheduler = self.scheduler
        stream_id = scheduler.pick()
        remaining = left[stream_id]
        n = remaining if remaining < limit else limit
        remaining -= n
        written = self.written
        written[stream_id] = written.get(stream_id, 0) + n
        self.unacked_bytes += n
        self.endpoint.write(stream_id, _pad(n), end=not remaining)
        if scheduler.charges_bytes:
            scheduler.wrote(stream_id, n)
        if remaining:
            left[stream_id] = remaining
        else:
            del left[stream_id]
            scheduler.remove(stream_id)
            self.on_written(stream_id)
        return n

    def _write_chunk(self, stream_id: int, n: int) -> None:
        """Write ``n`` bytes of ``stream_id``'s response (the stream already picked)."""
        left, scheduler = self._left, self.scheduler
        remaining = left[stream_id] - n
        self.written[stream_id] = self.written.get(stream_id, 0) + n
        self.unacked_bytes += n
        self.endpoint.write(stream_id, _pad(n), end=not remaining)
        if scheduler.charges_bytes:
            scheduler.wrote(stream_id, n)
        if remaining:
            left[stream_id] = remaining
        else:
            del left[stream_id]
            scheduler.remove(stream_id)
            self.on_written(stream_id)

    def fill(self) -> None:
        # write_next's body inlined: the writer's hot loop over TCP (one pass per acknowledgement).
        """Write chunks the scheduler picks until the window (the larger of cwnd and two chunks) is full."""
        left = self._left
        if not left:
            return
        chunk = self.chunk_bytes
        endpoint = self.endpoint
        window = max(endpoint.cwnd_bytes, 2 * chunk)
        scheduler = self.scheduler
        pick, charges = scheduler.pick, scheduler.charges_bytes
        written, write, pad = self.written, endpoint.write, _pad
        while left and self.unacked_bytes < window:
            stream_id = pick()
            remaining = left[stream_id]
            n = remaining if remaining < chunk else chunk
            remaining -= n
            written[stream_id] = written.get(stream_id, 0) + n
            self.unacked_bytes += n
            write(stream_id, pad(n), end=not remaining)
            if charges:
                scheduler.wrote(stream_id, n)
            if remaining:
                left[stream_id] = remaining
            else:
                del left[stream_id]
                scheduler.remove(stream_id)
                self.on_written(stream_id)

    def on_stream_acked(self, stream_id: int, acked_offset: int) -> None:
        """ResponseWriter's, with the refill skipped when nothing waits (most acknowledgements
        near a load's end): called from the transport for every acknowledgement."""
        written = self.written.get(stream_id, 0)
        acked = acked_offset if acked_offset < written else written
        done = self._acked
        self.unacked_bytes -= acked - done.get(stream_id, 0)
        done[stream_id] = acked
        if self._left and self.fill_on_ack:
            self.fill()


class _NativeLevelWriter:
    """``ScheduledWriter`` with a ``LevelScheduler`` over the C ``TcpEndpoint``: the same
    writes in the same order, on the C writer (``net._tcp.ResponseWriter``), whose rotations
    per level take the scheduler's groups as levels: a sequential response is a level of its
    own keyed by its order (newest first: by minus its order), the shared group of an urgency
    one level after them; with the split (``cf-shared-sequential``) the C writer counts each
    group's bytes per urgency and serves the shared group while the sequential one is ahead.  The h2 hot
    path (a chunk per acknowledgement) and h3's (a packet's worth per pull) then run in C, as
    the fixed writer's do.  ``ext``: the C extension of the endpoint (``native.C`` or
    ``native.QUIC``)."""

    __slots__ = (
        "_c",
        "scheduler",
        "written",
        "_body",
        "_count",
        "_on_written",
        "fill",
        "write_next",
        "on_stream_acked",
        "pull",
    )

    def __init__(
        self,
        endpoint,
        chunk_bytes: int,
        written: dict[int, int],
        on_written,
        *,
        fill_on_ack: bool,
        scheduler: "LevelScheduler",
        ext=None,
    ) -> None:
        self._c = (ext or native.C).ResponseWriter(endpoint, chunk_bytes, written, self._done, fill_on_ack)
        if scheduler.split:
            self._c.split_levels()  # the groups of an urgency take turns by bytes, as LevelScheduler's
        self.scheduler, self.written, self._on_written = scheduler, written, on_written
        self._body: dict[int, tuple[int, int, int]] = {}  # stream -> (offset of its body, size, order)
        self._count = 0
        self.fill, self.write_next, self.on_stream_acked = self._c.fill, self._c.write_next, self._c.on_stream_acked
        self.pull = getattr(self._c, "pull", None)  # QUIC's on_send_ready

    @property
    def unacked_bytes(self) -> int:
        return self._c.unacked_bytes

    @unacked_bytes.setter
    def unacked_bytes(self, value: int) -> None:
        self._c.unacked_bytes = value

    @property
    def waiting(self) -> bool:
        return bool(self._body)

    def _level(self, signal: PrioritySignal, order: int) -> int:
        s = self.scheduler
        level = (signal.urgency if s.by_urgency else 0) << 42
        if s._is_sequential(signal):
            return level + (-order if s.newest_first else order)
        return level + (1 << 41)

    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        self._count += 1
        self._body[stream_id] = (self.written.get(stream_id, 0), size, self._count)
        self._c.add(stream_id, size, self._level(signal, self._count))

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        """As ``LevelScheduler.update``: out of its group, into the new one (at the back of a rotation)."""
        body = self._body.get(stream_id)
        if body is None:
            return
        offset, size, order = body
        self._c.stop(stream_id)
        self._c.add(stream_id, size - (self.written.get(stream_id, 0) - offset), self._level(signal, order))

    def stop(self, stream_id: int) -> None:
        if self._body.pop(stream_id, None) is not None:
            self._c.stop(stream_id)

    def _done(self, stream_id: int) -> None:
        self._body.pop(stream_id, None)
        self._on_written(stream_id)


class _NativeScheduledWriter:
    """``ScheduledWriter`` over the C ``TcpEndpoint`` on the C writer
    (``net._tcp.ResponseWriter``) with the scheduler's ``pick_run``, ``settle`` and ``remove``
    as its hooks: the scheduler names a stream and how many chunks in a row it would name it,
    the C writer writes them and tells it the run's bytes when the run ends (or early, before
    any change to the scheduler): the same picks and charges in the same order, so the same
    writes; the scheduler's own steps run in Python once a run, not the writer's loop and
    acknowledgements.  A ``TreeScheduler`` run in its C twin is hooked differently
    (``ResponseWriter.tree``): the C writer picks and charges each chunk in the twin and
    calls Python only for ``remove`` once a response is written (weighted siblings take turns
    a chunk at a time, so runs would be one chunk long).  Over QUIC (``ext``: ``native.QUIC``)
    the same on the QUIC C writer, pulled a packet's worth at a time (``pull``): a run also
    ends where a packet's room left is less than a chunk (RFC 9000 section 13: a packet
    carries frames of several streams), as ``ScheduledWriter.write_next``'s limit cuts it."""

    __slots__ = (
        "_c",
        "scheduler",
        "written",
        "_waiting",
        "_count",
        "_on_written",
        "fill",
        "write_next",
        "on_stream_acked",
        "pull",
    )

    def __init__(
        self,
        endpoint,
        chunk_bytes: int,
        written: dict[int, int],
        on_written,
        *,
        fill_on_ack: bool,
        scheduler: Scheduler,
        ext=None,
    ) -> None:
        self._c = (ext or native.C).ResponseWriter(endpoint, chunk_bytes, written, self._done, fill_on_ack)
        twin = getattr(scheduler, "_twin", None)
        if twin is not None:
            self._c.tree(twin, scheduler.remove)  # no runs: settle() has nothing to end
        else:
            self._c.hook(scheduler.pick_run, scheduler.settle, scheduler.remove)
        self.scheduler, self.written, self._on_written = scheduler, written, on_written
        self._waiting: set[int] = set()
        self._count = 0
        self.fill, self.write_next, self.on_stream_acked = self._c.fill, self._c.write_next, self._c.on_stream_acked
        self.pull = getattr(self._c, "pull", None)  # QUIC's on_send_ready

    @property
    def unacked_bytes(self) -> int:
        return self._c.unacked_bytes

    @unacked_bytes.setter
    def unacked_bytes(self, value: int) -> None:
        self._c.unacked_bytes = value

    @property
    def waiting(self) -> bool:
        return bool(self._waiting)

    # Each change to the scheduler ends the open run first (its charges told), as a pick per chunk would have.
    def add(self, stream_id: int, size: int, signal: PrioritySignal) -> None:
        self._c.settle()
        self._count += 1
        self._waiting.add(stream_id)
        self._c.add(stream_id, size, 0)
        self.scheduler.add(stream_id, signal, self._count)

    def update(self, stream_id: int, signal: PrioritySignal) -> None:
        if stream_id in self._waiting:
            self._c.settle()
            self.scheduler.update(stream_id, signal)

    def stop(self, stream_id: int) -> None:
        if stream_id in self._waiting:
            self._c.settle()
            self._waiting.discard(stream_id)
            self._c.stop(stream_id)
            self.scheduler.remove(stream_id)

    def _done(self, stream_id: int) -> None:
        self._waiting.discard(stream_id)
        self._on_written(stream_id)


def _native_ext(endpoint):
    """The C extension whose ``ResponseWriter`` writes on ``endpoint``: ``native.C`` for the C
    ``TcpEndpoint``, ``native.QUIC`` for a ``NativeQuicEndpoint`` (if its writer takes a
    scheduler's hooks), else None."""
    c = getattr(native, "C", None)
    if c is not None and type(endpoint) is c.TcpEndpoint:
        return c
    quic = getattr(native, "QUIC", None)
    if quic is not None and type(endpoint) is NativeQuicEndpoint and hasattr(quic.ResponseWriter, "hook"):
        return quic
    return None


def scheduled_writer(
    endpoint,
    chunk_bytes: int,
    written: dict[int, int],
    on_written,
    *,
    fill_on_ack: bool,
    scheduler: Scheduler,
    qlog=None,
):
    """A writer with ``scheduler`` choosing each chunk's stream: on the C writer when the
    endpoint is the C ``TcpEndpoint`` or a ``NativeQuicEndpoint`` (``_NativeLevelWriter`` for a
    scheduler of levels and groups, ``_NativeScheduledWriter`` for any other), else
    ``ScheduledWriter``; with ``qlog`` (a ``priority_qlog.QlogTrace``) the writer that logs
    each choice, in Python.  A fresh ``TreeScheduler`` is run in its C twin when the C
    extension is in use (the twin of the writer's extension, whose writer picks from it)."""
    ext = _native_ext(endpoint) if qlog is None else None
    if type(scheduler) is TreeScheduler and getattr(native, "IMPLEMENTATION", None) == "c":
        twin_ext = ext if ext is not None and hasattr(ext, "StrideTree") else native.C
        if hasattr(twin_ext, "StrideTree"):
            scheduler.run_in_c(twin_ext.StrideTree())
    if qlog is not None:
        from .priority_qlog import QlogScheduledWriter

        return QlogScheduledWriter(
            endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler, qlog=qlog
        )
    if ext is not None:
        if type(scheduler) is LevelScheduler and (
            not scheduler.split or (not scheduler.newest_first and hasattr(ext.ResponseWriter, "split_levels"))
        ):
            return _NativeLevelWriter(
                endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler, ext=ext
            )
        if hasattr(ext.ResponseWriter, "hook"):
            return _NativeScheduledWriter(
                endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler, ext=ext
            )
    return ScheduledWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack=fill_on_ack, scheduler=scheduler)
