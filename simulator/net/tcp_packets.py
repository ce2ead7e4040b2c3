"""What a TCP model packet carries: a data segment, a pure ACK, a handshake packet (see
``tcp``'s docstring).  The C twin's packets are registered as these classes, so
``isinstance`` holds for either (the capture writer relies on it).  Written by hand."""

from __future__ import annotations

from abc import ABCMeta

from . import native

__all__ = ["TcpSegment", "TcpAck", "TcpControl"]


class TcpSegment(metaclass=ABCMeta):
    """A data segment: ``length`` sequence numbers starting at ``seq``.

    ``pieces`` is a tuple of ``(stream_id, stream_offset, data, end)`` with ``data`` a
    memoryview slice of the application's write.
    """

    __slots__ = ("seq", "length", "payload_bytes", "pieces", "sent_s", "retransmitted", "mark")

    def __init__(self, seq: int, length: int, payload_bytes: int, pieces: tuple) -> None:
        self.seq = seq
        self.length = length
        self.payload_bytes = payload_bytes
        self.pieces = pieces
        self.sent_s = 0.0
        self.retransmitted = False
        self.mark = 0  # the sender's scoreboard: 1 SACKed, 2 lost, 3 lost and resent

    def __repr__(self) -> str:
        return f"TcpSegment(seq={self.seq}, len={self.length})"


class TcpAck(metaclass=ABCMeta):
    """A pure cumulative ACK: every sequence number below ``ack`` has been received.

    ``echo_s`` is the timestamp option's echo (RFC 7323 section 4.3, TSecr): the send
    time of the segment the receiver took TS.Recent from, which tells the sender whether
    the ACK answers an original transmission or a retransmission (RFC 3522).  ``sack`` is
    the SACK option (RFC 2018 section 3): up to 4 ``(left_edge, right_edge)`` blocks of
    data held above ``ack`` (3 beside timestamps), the most recently changed first."""

    __slots__ = ("ack", "echo_s", "sack")

    def __init__(self, ack: int, echo_s: float = 0.0, sack: tuple = ()) -> None:
        self.ack = ack
        self.echo_s = echo_s
        self.sack = sack

    def __repr__(self) -> str:
        return f"TcpAck({self.ack}, sack={self.sack!r})" if self.sack else f"TcpAck({self.ack})"


class TcpControl(metaclass=ABCMeta):
    """A handshake packet: ``kind`` is "SYN", "SYN-ACK" or "ACK"."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"TcpControl({self.kind})"


if native.C is not None:  # the C twin's packets are these too
    TcpSegment.register(native.C.TcpSegment)
    TcpAck.register(native.C.TcpAck)
    TcpControl.register(native.C.TcpControl)


_MAX_BACKOFF = 1 << 16  # the retransmission timer's largest backoff factor
# A sent segment's mark on the SACK scoreboard (TcpSegment.mark; Linux's TCPCB_SACKED_ACKED,
# TCPCB_LOST and TCPCB_SACKED_RETRANS): in flight (0), SACKed, lost, lost and resent since.
_SACKED, _LOST, _RESENT = 1, 2, 3
