"""QUIC packets as the model sends them: sizes on the wire and the sent-packet record.

Written by hand (no library accounts QUIC sizes over a modelled link).  No real packet
encoding: a packet is its frames and its size in bytes, counted as on the wire.

- a packet on the link is its UDP payload (at most ``config.max_datagram_bytes``) plus
  28 bytes of IPv4 + UDP header;
- every packet carries a 1-RTT short header of 1 (flags) + 8 (DCID) + 2 (packet
  number) bytes and a 16-byte AEAD tag (RFC 9000 section 17.3, RFC 9001 section 5.3);
- every STREAM frame costs type (1) + varint stream id + varint offset (left out at
  offset 0, the OFF bit) + varint length, with RFC 9000 section 16 varint sizes
  (section 19.8; ``frames.varint_len``, the workbench's one varint size).

``QuicPacket`` is the reference; ``simulator.net._quic.QuicPacket`` is its C twin (same
fields, same repr), what ``native.NativeQuicEndpoint`` sends.
"""

from __future__ import annotations

from ...frames import varint_len      # RFC 9000 section 16 (re-exported: simulator.net.quic.varint_len)

__all__ = [
    "QuicPacket", "varint_len", "stream_frame_header_len",
    "UDP_IP_HEADER_BYTES", "SHORT_HEADER_BYTES", "ACK_DELAY_EXPONENT", "MAX_ACK_RANGES",
]

UDP_IP_HEADER_BYTES = 28          # IPv4 (20) + UDP (8)
SHORT_HEADER_BYTES = 1 + 8 + 2 + 16   # flags + DCID + packet number + AEAD tag (RFC 9001 5.3)
ACK_DELAY_EXPONENT = 3            # RFC 9000 section 18.2 default
MAX_ACK_RANGES = 32               # ranges kept and reported by a receiver


def stream_frame_header_len(stream_id: int, offset: int, length: int) -> int:
    """STREAM frame header (RFC 9000 section 19.8): type, id, offset (OFF bit), length (LEN bit)."""
    return 1 + varint_len(stream_id) + (varint_len(offset) if offset else 0) + varint_len(length)


class QuicPacket:
    """One QUIC packet: the payload of a link ``Packet`` and, at its sender, the sent-packet record.

    ``frames`` are STREAM frames ``(stream_id, offset, data, fin)``; ``ack`` is an ACK
    frame ``(ranges, ack_delay_s)`` with ranges ``(low, high)`` inclusive, highest first.
    """

    __slots__ = ("pn", "time_sent_s", "size_bytes", "frames", "ack", "ack_eliciting", "done", "probe")

    def __init__(self, pn: int, time_sent_s: float, size_bytes: int, frames: list, ack=None,
                 ack_eliciting: bool = True, probe: bool = False) -> None:
        self.pn = pn
        self.time_sent_s = time_sent_s
        self.size_bytes = size_bytes          # UDP payload bytes (what RFC 9002 counts in flight)
        self.frames = frames
        self.ack = ack
        self.ack_eliciting = ack_eliciting
        self.done = False                     # acknowledged or declared lost (sender side)
        self.probe = probe

    def __repr__(self) -> str:
        kind = "ack" if self.ack is not None else "data"
        return f"QuicPacket(pn={self.pn}, {kind}, {self.size_bytes} B, {len(self.frames)} frames)"
