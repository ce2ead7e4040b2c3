"""Per-stream state of the QUIC model (RFC 9000 section 2): what a sender wrote and the
peer acknowledged, what a receiver holds out of order.

Written by hand.  The endpoint (``connection.QuicEndpoint``) does the work; these are
its records.  Receivers deliver each stream's bytes as soon as they are contiguous in
that stream's order: no head-of-line blocking across streams (RFC 9000 section 2.2).
"""

from __future__ import annotations

from .rangeset import RangeSet

__all__ = ["SendStream", "RecvStream"]


class SendStream:
    """A sending stream: every byte written (kept for retransmission) and what is acknowledged."""

    __slots__ = ("stream_id", "buf", "fin", "fin_offset", "acked", "acked_prefix", "fin_acked")

    def __init__(self, stream_id: int) -> None:
        self.stream_id = stream_id
        self.buf = bytearray()            # every byte written (kept for retransmission)
        self.fin = False
        self.fin_offset = -1
        self.acked = RangeSet()
        self.acked_prefix = 0
        self.fin_acked = False


class RecvStream:
    """A receiving stream: the delivered prefix and a heap of bytes that arrived out of order."""

    __slots__ = ("delivered", "fin_offset", "heap", "heap_bytes", "finished")

    def __init__(self) -> None:
        self.delivered = 0                # bytes handed to the application, in order
        self.fin_offset = -1
        self.heap: list[tuple[int, bytes]] = []   # out-of-order (offset, data)
        self.heap_bytes = 0
        self.finished = False
