"""The application interface shared by the TCP and QUIC models.

HTTP layers (and the header-compression study) run over either transport through the
same calls, so a comparison changes one argument:

    conn = TcpConnection(sim, path, config)      # or QuicConnection(sim, path, config)
    sid = conn.client.open_stream()               # RFC 9000 section 2.1 numbering on both
    conn.server.on_data = lambda stream_id, data, end, time_s: ...
    conn.client.write(sid, b"...", end=True)

- ``write(stream_id, data, end)`` queues bytes; writes made at the same virtual instant
  are coalesced into the same packets (the 2017 simulator's "requests starting within
  1 ms share packets", here exactly: same instant).
- ``on_data(stream_id, data, end, time_s)`` is called when bytes become deliverable *in
  order*: over TCP in the order of the one connection byte stream (a hole holds back
  every later byte, whatever its stream), over QUIC in each stream's own order.
- ``on_stream_acked(stream_id, acked_offset)`` tells a sender that the first
  ``acked_offset`` bytes of one of its streams are now all acknowledged by the peer's
  transport (QCRAM's commit hook; TCP reports it too, from its cumulative ACK).
- ``on_received(stream_id, offset, length, time_s)`` (optional) is called when stream
  bytes first reach the receiver, in order or not: with ``on_data`` it tells how long
  bytes that had arrived were held back (TCP's head-of-line blocking).
- ``on_packet_acked(packet_number, ranges)`` (QUIC) names each acknowledged packet with
  the ``(stream_id, offset, length)`` ranges it carried.
- ``write_padding(endpoint, stream_id, size, end)`` writes ``size`` bytes that only count
  (a body, a header block sized but not encoded) as slices of one shared block of at most
  ``PADDING_CHUNK_BYTES``: the endpoints keep references to the writes, never copies, so
  a body declared at gigabytes costs what is in flight, not its size (issue 33).

Streams of the byte-stream transport are labels: over TCP the HTTP/2 framing that
multiplexes them is the caller's (or the real h2 stack's) business; the model keeps the
mapping from connection bytes back to streams only to report delivery per stream.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Protocol

__all__ = [
    "TransportConfig",
    "Endpoint",
    "Connection",
    "stream_id_for",
    "DataCallback",
    "TIMER_KEYS",
    "timer_counts",
    "write_padding",
    "PADDING_CHUNK_BYTES",
]

DataCallback = Callable[[int, bytes, bool, float], None]

PADDING_CHUNK_BYTES = 1 << 20  # one write of padding at most: 1 MiB, shared
_PADDING: dict[bytes, bytes] = {}  # fill byte -> its shared block


def write_padding(endpoint, stream_id: int, size: int, end: bool = False, fill: bytes = b"\0") -> None:
    """Write ``size`` bytes of ``fill`` on ``stream_id`` of ``endpoint`` (``end``: with the last
    of them), as writes of at most ``PADDING_CHUNK_BYTES`` that share one block: the same bytes,
    in the same order, at the same instant as one write of them all (the endpoints coalesce
    writes of one instant), without ever making ``size`` bytes."""
    block = _PADDING.get(fill)
    if block is None:
        block = _PADDING[fill] = fill * PADDING_CHUNK_BYTES
    while size > PADDING_CHUNK_BYTES:
        endpoint.write(stream_id, block)
        size -= PADDING_CHUNK_BYTES
    endpoint.write(stream_id, block if size == PADDING_CHUNK_BYTES else block[:size], end=end)


@dataclass
class TransportConfig:
    """Transport parameters common to both models (units in the names)."""

    mss_bytes: int = 1460  # TCP MSS; QUIC uses max_datagram_bytes
    max_datagram_bytes: int = 1252  # QUIC UDP payload (RFC 9000 section 14: at least 1200)
    header_overhead_bytes: int = 40  # IPv4 + TCP (20 + 20); QUIC model adds its own on top of UDP
    cc: str = "reno"  # "reno" or "cubic"
    initial_window_segments: int = 10  # RFC 6928, RFC 9002 section 7.2
    min_rto_s: float = 0.2  # Linux TCP_RTO_MIN (RFC 6298 says 1 s)
    initial_rtt_s: float = 0.333  # RFC 9002 section 6.2.2 kInitialRtt
    ack_every_packets: int = 2  # delayed ACK: every 2nd full segment (RFC 5681 4.2, RFC 9000 13.2.2)
    max_ack_delay_s: float = 0.025  # RFC 9000 default max_ack_delay
    packet_threshold: int = 3  # RFC 9002 kPacketThreshold; TCP dupthresh
    time_threshold: float = 9 / 8  # RFC 9002 kTimeThreshold
    timestamps: bool = True  # TCP timestamps (RFC 7323; Linux tcp_timestamps=1): Eifel detection
    sack: bool = True  # TCP SACK (RFC 2018; Linux tcp_sack=1): RFC 6675 recovery with PRR
    # TCP: the window as Linux keeps it (tcp_sock.snd_cwnd): in segments, each segment in flight
    # taking one whatever its size (tcp_cwnd_test), growing by the segments acknowledged and only
    # while the window limited the sender (tcp_is_cwnd_limited; RFC 7661 section 4.3).
    cwnd_in_packets: bool = False
    # TCP with CUBIC: leave slow start by Linux's HyStart (cc.LinuxHyStart), as a Linux server does.
    hystart: bool = False
    # QUIC: how late the server's event loop wakes its pacer (``quic.pacer.Pacer``); any
    # lateness lets aioquic's pacer send two packets per interval, as the lab's did.
    pacer_late_s: float = 0.0

    def to_dict(self) -> dict:
        """The parameters as a plain dict."""
        return asdict(self)


# The retransmission timers' counts every result that reports packets carries: TCP's
# timeouts (RFC 6298), those F-RTO found spurious (RFC 5682) and the window reductions
# undone for them; QUIC's probe timeouts (RFC 9002 section 6.2) and those that fired
# with nothing lost.  A transport without one counts 0.
TIMER_KEYS = ("rtos", "spurious_rtos", "undone_reductions", "ptos", "spurious_ptos")


def timer_counts(stats) -> dict:
    """``TIMER_KEYS`` summed over connections' ``stats()`` dicts (a missing key counts 0)."""
    out = dict.fromkeys(TIMER_KEYS, 0)
    for s in stats:
        for key in TIMER_KEYS:
            out[key] += s.get(key, 0)
    return out


def stream_id_for(index: int, *, client: bool, unidirectional: bool) -> int:
    """RFC 9000 section 2.1: the two low bits give initiator (0x1 = server) and direction (0x2 = uni)."""
    return (index << 2) | (0 if client else 1) | (2 if unidirectional else 0)


class Endpoint(Protocol):
    """One end of a TCP or QUIC model connection, as the HTTP layers use it (see the module docstring)."""

    is_client: bool
    on_data: DataCallback | None
    on_stream_acked: Callable[[int, int], None] | None
    on_received: Callable[[int, int, int, float], None] | None

    def open_stream(self, unidirectional: bool = False) -> int:
        """The id of a new stream this end initiates (RFC 9000 section 2.1 numbering)."""

    def write(self, stream_id: int, data: bytes, end: bool = False) -> None:
        """Queue ``data`` on ``stream_id``; ``end`` closes the stream after it."""


class Connection(Protocol):
    """A TCP or QUIC model connection: its two ends and its counters."""

    client: Endpoint
    server: Endpoint

    def stats(self) -> dict:
        """Packets, losses and bytes of the connection so far."""
