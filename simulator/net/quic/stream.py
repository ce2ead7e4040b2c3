"""Per-stream state of the QUIC model (RFC 9000 section 2): what a sender wrote and the
peer acknowledged, what a receiver holds out of order.

Written by hand.  The endpoint (``connection.QuicEndpoint``) does the work; these are
its records.  Receivers deliver each stream's bytes as soon as they are contiguous in
that stream's order: no head-of-line blocking across streams (RFC 9000 section 2.2).
The C twin (``simulator.net._quic``) has its own types of these records, ``_quic.SendStream``
and ``RecvStream`` (``net/_quic_streams.h``: the same fields and methods, read in place by the
core); the native endpoint makes those, the reference these.
"""

from __future__ import annotations

from collections import deque

from .rangeset import RangeSet

__all__ = ["SendStream", "RecvStream"]


class SendStream:
    """A sending stream: the bytes sent and not yet acknowledged (kept for retransmission,
    RFC 9000 section 13.3), what is acknowledged, and the writes not yet sent.

    ``buf`` holds the stream from offset ``buf_offset`` on, up to what packets have read
    (``data``): once the peer has acknowledged a prefix, nothing will be sent of it again
    (``drop_acked``), so a stream holds what is in flight, not everything it ever wrote (a
    page's bytes).  Writes wait in ``later`` as the writer's own objects (references, not
    copies) until a packet reads them: a body written at once (a declared size, as padding
    slices of ``transport.write_padding``) costs what is in flight, not its size."""

    __slots__ = (
        "stream_id",
        "buf",
        "buf_offset",
        "later",
        "later_bytes",
        "fin",
        "fin_offset",
        "acked",
        "acked_prefix",
        "fin_acked",
    )

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self.buf = bytearray()  # the stream's bytes from buf_offset on, as far as packets read
        self.buf_offset = 0  # bytes before it are acknowledged and gone
        self.later: deque = deque()  # writes after buf, not yet read by a packet (bytes / memoryview)
        self.later_bytes = 0
        self.fin = False
        self.fin_offset = -1
        self.acked = RangeSet()
        self.acked_prefix = 0
        self.fin_acked = False

    @property
    def written(self) -> int:
        """Bytes written on the stream so far (the next write's offset)."""
        return self.buf_offset + len(self.buf) + self.later_bytes

    def append(self, data: bytes) -> None:
        """A write of ``data`` (immutable: ``bytes`` or a view of them), kept by reference."""
        if data:
            self.later.append(data)
            self.later_bytes += len(data)

    def data(self, offset: int, length: int) -> bytes:
        """``length`` bytes of the stream from ``offset`` (not yet acknowledged)."""
        start = offset - self.buf_offset
        short = start + length - len(self.buf)
        later = self.later
        while short > 0 and later:  # read on from the writes: only as far as this packet
            chunk = later.popleft()
            n = len(chunk)
            if n > short:
                view = memoryview(chunk)
                later.appendleft(view[short:])
                chunk, n = view[:short], short
            self.buf += chunk
            self.later_bytes -= n
            short -= n
        return bytes(self.buf[start : start + length])

    def drop_acked(self) -> None:
        """Let go of the acknowledged prefix (a bytearray drops its front without copying the rest)."""
        drop = self.acked_prefix - self.buf_offset
        if drop > 0:
            del self.buf[:drop]
            self.buf_offset = self.acked_prefix


class RecvStream:
    """A receiving stream: the delivered prefix and a heap of bytes that arrived out of order."""

    __slots__ = ("delivered", "fin_offset", "heap", "heap_bytes", "finished")

    def __init__(self) -> None:
        self.delivered = 0  # bytes handed to the application, in order
        self.fin_offset = -1
        self.heap: list[tuple[int, bytes]] = []  # out-of-order (offset, data)
        self.heap_bytes = 0
        self.finished = False
