"""QUIC transport model: RFC 9000 streams and ACKs, RFC 9002 loss detection and congestion control.

Written by hand: no library simulates QUIC over a modelled link.  This is a model of
QUIC's *transport behaviour* inside the discrete-event engine, not a wire
implementation: no crypto and no real packet encoding (the real aioquic stack is a
separate piece, ``stacks.h3``; where RFC 9000/9002 leave a choice the model takes
aioquic's, so that the two can be cross-validated).  Sizes are accounted as on the wire
so that timing and throughput are right.

The modules follow aioquic's seams; each one's docstring says what it models and where
the RFCs are:

- ``connection``: ``QuicConnection`` (a client and a server endpoint over a
  ``link.Path``) and ``QuicEndpoint`` (streams, the application interface, received
  packets; RFC 9000 sections 2 and 13);
- ``packet``: packet and STREAM frame sizes (RFC 9000 sections 16, 17.3, 19.8), the
  sent-packet record ``QuicPacket``;
- ``packet_builder``: filling and sending packets, coalescing writes, the pull writer
  (RFC 9000 sections 12.3, 13);
- ``ack``: when ACKs are due and what ACK frames cost (RFC 9000 sections 13.2, 19.3);
- ``recovery``: RTT samples, loss detection, probe timeouts, the congestion window
  (RFC 9002 sections 5 to 7, appendix A);
- ``pacer``: pacing with aioquic's rule (RFC 9002 section 7.7);
- ``handshake``: the handshake's datagrams, sizes and timing (RFC 9001; off by default);
- ``stream`` and ``rangeset``: per-stream records and acknowledged byte ranges;
- ``native``: ``NativeQuicEndpoint``, the endpoint whose per-packet path is the C twin
  ``simulator.net._quic`` (the default when built; ``WORKBENCH_NET=python``: the Python
  reference above, which defines the behaviour); ``fuzz``: the twin against the reference on
  seeded loss patterns and ACK orders (``make asan`` runs it).

Not modelled (on purpose): flow control (MAX_DATA / MAX_STREAM_DATA: windows are
unlimited), persistent congestion (RFC 9002 7.6), the application-limited rule for
window growth (7.8), spurious-loss undo, connection close and stream resets, 0-RTT,
Retry, the anti-amplification limit (3x, never reached by one-datagram flights), and
coalescing the client's first 1-RTT packet into its Finished datagram (aioquic does; here
it follows in its own datagram: one extra header and datagram on the first request).
"""

from __future__ import annotations

from .connection import QuicConnection, QuicEndpoint
from .handshake import (
    CHROMIUM_FINISHED_BYTES,
    CRYPTO_ACK_BYTES,
    CRYPTO_PACKET_OVERHEAD_BYTES,
    HANDSHAKE_DONE_BYTES,
    SERVER_FLIGHT_CRYPTO_BYTES,
    CryptoDatagram,
)
from .pacer import Pacer
from .packet import (
    ACK_DELAY_EXPONENT,
    MAX_ACK_RANGES,
    SHORT_HEADER_BYTES,
    UDP_IP_HEADER_BYTES,
    QuicPacket,
    stream_frame_header_len,
    varint_len,
)
from .rangeset import RangeSet
from .recovery import LOSS_EPSILON_S, PROBE_PACKETS

__all__ = [
    "QuicConnection",
    "QuicEndpoint",
    "QuicPacket",
    "varint_len",
    "SHORT_HEADER_BYTES",
    "UDP_IP_HEADER_BYTES",
    "MAX_ACK_RANGES",
    "ACK_DELAY_EXPONENT",
    "CryptoDatagram",
    "Pacer",
    "RangeSet",
    "stream_frame_header_len",
    "SERVER_FLIGHT_CRYPTO_BYTES",
    "CRYPTO_PACKET_OVERHEAD_BYTES",
    "CRYPTO_ACK_BYTES",
    "HANDSHAKE_DONE_BYTES",
    "CHROMIUM_FINISHED_BYTES",
    "PROBE_PACKETS",
    "LOSS_EPSILON_S",
]
