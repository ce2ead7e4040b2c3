"""Four ways a single-threaded HTTP/2 client hands DATA frames to N stream consumers.

Each receiver reads the connection's bytes from a ``source`` (``recv_into(view) ->
bytes read``, 0 when nothing is there; ``send(data)`` for its WINDOW_UPDATEs) into one
read buffer, finds frame boundaries with the project's frame scanner (``H2Scanner.feed``
+ ``results_into`` preallocated arrays: no object per frame from the scanner; the C one
or its pure-Python twin), and gives each DATA payload to the application:

- ``stop-the-train``: reading is done for the stream being serviced; its frames go to
  its consumer straight from the read buffer; the first frame of another stream stops
  the train: the wakeup ends and the loop re-dispatches that stream (one more wakeup and
  one dispatch per change of stream);
- ``side-track``: frames of the serviced stream go straight to its consumer; frames of
  other streams are copied into a fixed side area of ``side_bytes``; a frame that does
  not fit blocks the reader: the wakeup ends, the loop drains the side area to the
  parked frames' consumers and switches the train to the blocked frame's stream; parked
  frames are also handed on at the end of every wakeup;
- ``per-stream``: every DATA payload is copied into its stream's ``bytearray``, which
  grows as frames arrive; the consumers drain (and shrink) the buffers after the reads;
- ``direct``: every DATA frame goes to its stream's consumer as soon as it is scanned,
  from the read buffer; nothing is copied.

The application (``Consumer``) takes every byte offered to any stream (callbacks, as
libcurl write callbacks are): ``work`` is ``count`` (bytes only: a download to
/dev/null) or ``crc32`` (``zlib.crc32`` over every byte, which also checks each body).
As it consumes, the receiver returns the windows with h2's own receive-window
algorithm (``h2.windows.WindowManager``, per stream and for the connection): a
WINDOW_UPDATE (RFC 9113 section 6.9, built by ``hyperframe``) once half a window has
been consumed.  Received bytes count against the windows when a frame is read
(``window_consumed`` raises if the server overruns one).

An application that takes the streams one after another in a fixed order is not a
parameter: it refuses the frames of every stream but one, so only buffering receivers
can serve it (stop-the-train and the side track would wait forever on a frame nobody
takes, and direct dispatch has no consumer to hand it to); per-stream buffers then hold
N x window for the same reason as under eager reading.

``reading`` decides how much a wakeup reads: ``eager`` reads until the socket is empty
(a server on the same host keeps refilling it, so that is until the windows are
exhausted) before the consumers run; ``paced`` reads once per wakeup.  Eager reading
is what lets per-stream buffers grow toward N x window: everything the windows admit is
read before anything is consumed.

Counters (all deterministic for a given byte stream): ``reads``, ``frames``,
``data_frames``, ``wakeups`` (calls of ``wakeup``: one event-loop turn each),
``dispatches`` (hand-offs to a consumer), ``copied_bytes`` (payload bytes copied out of
the read buffer), ``buffered_bytes`` / ``peak_buffered_bytes`` (DATA payload read into
the process and not yet consumed: read buffer, side area, stream buffers) and per
stream ``peak_stream_buffered``.  Written by hand: the strategies are the subject.
"""

from __future__ import annotations

import zlib
from array import array

from h2.windows import WindowManager
from hyperframe.frame import WindowUpdateFrame

__all__ = ["STRATEGIES", "RECEIVERS", "READING", "WORK", "Consumer", "make_receiver", "Receiver"]

READING = ("eager", "paced")
WORK = ("count", "crc32")
DATA, PADDED, END_STREAM = 0x0, 0x8, 0x1
_HEADER_BYTES = 9


def window_update(stream_id: int, increment: int) -> bytes:
    """An HTTP/2 WINDOW_UPDATE frame for ``stream_id`` (0: the connection) of ``increment`` bytes (RFC 9113 6.9)."""
    return WindowUpdateFrame(stream_id, window_increment=increment).serialize()


class Consumer:
    """The application: N stream consumers on the receiver's one thread."""

    def __init__(self, sizes: dict[int, int], window_bytes: int, work: str = "count") -> None:
        self.sizes = dict(sizes)
        self.work = work
        self.consumed = {sid: 0 for sid in sizes}
        self.crc = {sid: 0 for sid in sizes}
        self.total = sum(sizes.values())
        self.consumed_total = 0
        self.windows = {sid: WindowManager(window_bytes) for sid in sizes}
        self.connection = WindowManager(min(window_bytes * len(sizes), 2**31 - 1))
        self.updates = bytearray()  # WINDOW_UPDATE frames not yet sent
        self.window_updates = 0

    def received(self, sid: int, flow_bytes: int) -> None:
        """A DATA frame was read: RFC 9113 section 6.9.1, its whole payload counts."""
        self.windows[sid].window_consumed(flow_bytes)
        self.connection.window_consumed(flow_bytes)

    def consume(self, sid: int, view, flow_bytes: int) -> None:
        """Take ``view`` for stream ``sid``; queue WINDOW_UPDATEs once h2's window manager asks (RFC 9113 6.9)."""
        n = len(view)
        if self.work == "crc32":
            self.crc[sid] = zlib.crc32(view, self.crc[sid])
        self.consumed[sid] += n
        self.consumed_total += n
        if self.consumed[sid] < self.sizes[sid]:  # no update for a finished stream
            inc = self.windows[sid].process_bytes(flow_bytes)
            if inc:
                self.updates += window_update(sid, inc)
                self.window_updates += 1
        inc = self.connection.process_bytes(flow_bytes)
        if inc and self.consumed_total < self.total:
            self.updates += window_update(0, inc)
            self.window_updates += 1

    @property
    def done(self) -> bool:
        """True when every stream's bytes have been consumed."""
        return self.consumed_total >= self.total


class Receiver:
    """The read buffer, the scanner and the counters the four strategies share."""

    name = ""

    def __init__(
        self,
        consumer: Consumer,
        *,
        read_bytes: int,
        max_frame_bytes: int,
        scanner_impl,
        reading: str = "eager",
        side_bytes: int = 65536,
    ) -> None:
        self.consumer = consumer
        self.read_bytes = read_bytes
        self.reading = reading
        self.side_bytes = side_bytes
        self.scanner = scanner_impl.H2Scanner(max_frame_bytes, preface=False, validate=True)
        # read buffer: one read plus the carried tail of an incomplete frame
        self.rb = bytearray(read_bytes + max_frame_bytes + _HEADER_BYTES)
        self.mv = memoryview(self.rb)
        self.fill = 0  # valid bytes in rb
        self.base = 0  # absolute stream offset of rb[0]
        self.done_abs = 0  # absolute offset after the last frame handled
        cap = read_bytes // _HEADER_BYTES + 2
        u32 = "I" if array("I").itemsize == 4 else "L"
        self.out = (
            array("B", bytes(cap)),
            array("B", bytes(cap)),
            array(u32, [0]) * cap,
            array("Q", [0]) * cap,
            array(u32, [0]) * cap,
        )
        self.nframes = 0  # records of the last read
        self.k = 0  # next record to handle
        self.reads = self.frames = self.data_frames = self.wakeups = self.dispatches = 0
        self.copied_bytes = 0
        self.bytes_read = 0
        self.buffered_bytes = 0
        self.peak_buffered_bytes = 0
        self.stream_buffered = {sid: 0 for sid in consumer.sizes}
        self.peak_stream_buffered = {sid: 0 for sid in consumer.sizes}

    # -- shared steps ----------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True when the application has consumed every stream."""
        return self.consumer.done

    @property
    def has_pending(self) -> bool:
        """Frames already read but not handled (the loop must wake the receiver again
        without the socket being readable)."""
        return self.k < self.nframes

    def _read(self, source) -> int:
        """One recv into the read buffer (after moving the unhandled tail to its front);
        scans the new bytes.  Returns the bytes read.  WINDOW_UPDATEs due are written
        first (a client writes them as soon as the application has consumed)."""
        self._flush_updates(source)
        start = self.done_abs - self.base
        if start:
            tail = self.fill - start
            if tail:
                self.mv[:tail] = self.mv[start : self.fill]
            self.fill = tail
            self.base = self.done_abs
        n = source.recv_into(self.mv[self.fill : self.fill + self.read_bytes])
        if n <= 0:
            return 0
        self.reads += 1
        self.bytes_read += n
        new = self.mv[self.fill : self.fill + n]
        self.fill += n
        count = self.scanner.feed(new)
        new.release()
        if count:
            self.scanner.results_into(self.out)
        self.nframes = count
        self.k = 0
        self.frames += count
        # DATA payloads now in the process count against the windows and the buffer
        types, flags, sids, offs, lens = self.out
        for j in range(count):
            if types[j] == DATA:
                sid = sids[j]
                self.data_frames += 1
                self.consumer.received(sid, lens[j])
                self._buffer(sid, lens[j])
        return n

    def _buffer(self, sid: int, n: int) -> None:
        self.buffered_bytes += n
        if self.buffered_bytes > self.peak_buffered_bytes:
            self.peak_buffered_bytes = self.buffered_bytes
        b = self.stream_buffered[sid] + n
        self.stream_buffered[sid] = b
        if b > self.peak_stream_buffered[sid]:
            self.peak_stream_buffered[sid] = b

    def _payload(self, j: int):
        """(stream id, payload view into rb, flow-controlled length) of DATA record j."""
        _, flags, sids, offs, lens = self.out
        length = lens[j]
        at = offs[j] - self.base
        if flags[j] & PADDED:  # RFC 9113 section 6.1: Pad Length, data, padding
            pad = self.rb[at]
            return sids[j], self.mv[at + 1 : at + length - pad], length
        return sids[j], self.mv[at : at + length], length

    def _deliver(self, sid: int, view, flow: int) -> None:
        self.consumer.consume(sid, view, flow)
        view.release()
        self.buffered_bytes -= flow
        self.stream_buffered[sid] -= flow

    def _handled(self, j: int) -> None:
        self.done_abs = self.out[3][j] + self.out[4][j]
        self.k = j + 1

    def _flush_updates(self, source) -> None:
        if self.consumer.updates:
            source.send(bytes(self.consumer.updates))
            self.consumer.updates.clear()

    def wakeup(self, source) -> None:
        """One turn of the event loop for this connection."""
        self.wakeups += 1
        self._turn(source)
        self._flush_updates(source)

    def _turn(self, source) -> None:  # pragma: no cover - each strategy has its own
        raise NotImplementedError


class Direct(Receiver):
    """Hands every DATA payload to its stream's consumer as soon as it is scanned, from the read buffer."""

    name = "direct"

    def _turn(self, source) -> None:
        out = self.out
        while True:
            if not self._read(source):
                return
            types = out[0]
            for j in range(self.nframes):
                if types[j] == DATA:
                    sid, view, flow = self._payload(j)
                    self.dispatches += 1
                    self._deliver(sid, view, flow)
                self._handled(j)
            if self.reading == "paced":
                return


class StopTheTrain(Receiver):
    """Serves one stream per dispatch from the read buffer; another stream's frame ends the wakeup."""

    name = "stop-the-train"

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.serviced = 0
        self.stops = 0

    def _turn(self, source) -> None:
        out = self.out
        while True:
            if self.k >= self.nframes and not self._read(source):
                return
            types, sids = out[0], out[2]
            for j in range(self.k, self.nframes):
                if types[j] == DATA:
                    sid = sids[j]
                    if sid != self.serviced:
                        if self.serviced:
                            # the train stops: back to the loop, which re-dispatches sid
                            self.stops += 1
                            self.serviced = sid
                            self.k = j
                            return
                        self.serviced = sid
                        self.dispatches += 1
                    elif j == self.k and self._resumed:
                        self.dispatches += 1  # the re-dispatched stream reads on
                    self._resumed = False
                    _, view, flow = self._payload(j)
                    self._deliver(sid, view, flow)
                self._handled(j)
            if self.reading == "paced":
                return

    _resumed = False

    def wakeup(self, source) -> None:
        """A wakeup that notes whether it resumes frames already read (a re-dispatch counts one more dispatch)."""
        self._resumed = self.has_pending
        super().wakeup(source)


class SideTrack(Receiver):
    """Serves one stream from the read buffer, parks other streams' frames in a fixed side area."""

    name = "side-track"

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.side = bytearray(self.side_bytes)
        self.side_mv = memoryview(self.side)
        self.side_fill = 0
        self.parked: list[tuple[int, int, int, int]] = []  # (sid, start, length, flow)
        self.serviced = 0
        self.blocks = 0
        self._blocked = False

    def _drain_side(self) -> None:
        last = 0
        for sid, start, length, flow in self.parked:
            if sid != last:
                self.dispatches += 1
                last = sid
            self._deliver(sid, self.side_mv[start : start + length], flow)
        self.parked.clear()
        self.side_fill = 0

    def _turn(self, source) -> None:
        if self._blocked:  # the loop hands the parked frames on, then the train moves
            self._drain_side()
            self._blocked = False
            self.dispatches += 1
        out = self.out
        while True:
            if self.k >= self.nframes and not self._read(source):
                break
            types = out[0]
            for j in range(self.k, self.nframes):
                if types[j] == DATA:
                    sid, view, flow = self._payload(j)
                    if not self.serviced or self.consumer.consumed[self.serviced] >= self.consumer.sizes[self.serviced]:
                        self.serviced = sid
                        self.dispatches += 1
                    if sid == self.serviced:
                        self._deliver(sid, view, flow)
                    else:
                        n = len(view)
                        if self.side_fill + n > self.side_bytes:
                            view.release()
                            # blocked: back to the loop, which drains the side area
                            self.blocks += 1
                            self._blocked = True
                            self.serviced = sid
                            self.k = j
                            return
                        self.side_mv[self.side_fill : self.side_fill + n] = view
                        view.release()
                        self.parked.append((sid, self.side_fill, n, flow))
                        self.side_fill += n
                        self.copied_bytes += n
                self._handled(j)
            if self.reading == "paced":
                break
        self._drain_side()  # the loop turn ends: parked frames reach their consumers

    @property
    def has_pending(self) -> bool:
        """True when frames remain unhandled or one is blocked waiting for room in the side area."""
        return self._blocked or self.k < self.nframes


class PerStream(Receiver):
    """Copies every DATA payload into its stream's growing buffer; the consumers drain them after the reads."""

    name = "per-stream"

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.bufs = {sid: bytearray() for sid in self.consumer.sizes}
        self.flow = {sid: 0 for sid in self.consumer.sizes}

    def _turn(self, source) -> None:
        out = self.out
        bufs = self.bufs
        while True:
            if not self._read(source):
                break
            types = out[0]
            for j in range(self.nframes):
                if types[j] == DATA:
                    sid, view, flow = self._payload(j)
                    bufs[sid] += view  # grows
                    self.copied_bytes += len(view)
                    self.flow[sid] += flow
                    view.release()
                self._handled(j)
            if self.reading == "paced":
                break
        for sid, buf in bufs.items():  # the consumers drain their buffers
            if buf:
                self.dispatches += 1
                flow = self.flow[sid]
                self.flow[sid] = 0
                with memoryview(buf) as view:
                    self.consumer.consume(sid, view, flow)
                self.buffered_bytes -= flow
                self.stream_buffered[sid] -= flow
                buf.clear()  # shrinks (frees the storage)


# strategy -> its ``Receiver`` class, or the module whose ``RECEIVER`` it is (imported when
# first asked for).  Adding a strategy: its module and one line here (``docs/extending.md``).
RECEIVERS: dict[str, type | str] = {
    "stop-the-train": StopTheTrain,
    "side-track": SideTrack,
    "per-stream": PerStream,
    "direct": Direct,
}
STRATEGIES = tuple(RECEIVERS)


def make_receiver(strategy: str, consumer: Consumer, **kw) -> Receiver:
    """The receiver of ``strategy`` (stop-the-train, side-track, per-stream, direct, or an added one)."""
    cls = RECEIVERS[strategy]
    if isinstance(cls, str):
        import importlib

        cls = importlib.import_module(cls).RECEIVER
    return cls(consumer, **kw)
