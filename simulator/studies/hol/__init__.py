"""Header-compression head-of-line blocking: HPACK vs QPACK vs QCRAM.

The question (the one the QUIC working group faced in 2017-2018, and that QPACK, RFC 9204,
answered): HPACK (RFC 7541) assumes the decoder sees header blocks in exactly the order
they were encoded, which TCP guarantees.  Over QUIC, streams are delivered independently,
so a lost packet carrying one stream's data should not stall the others, unless the
header-compression scheme makes one stream's header block depend on another's.  The
2017 candidates were HPACK kept as is (decode strictly in sequence), QCRAM
(draft-krasic-quic-qcram: an entry is referenced only once the packet carrying its
insert is acknowledged by the transport, else a literal is sent) and QPACK (RFC 9204:
encoder and decoder streams, a Required Insert Count per field section, at most
SETTINGS_QPACK_BLOCKED_STREAMS streams blocked, 0 by default).  This
study replays a trace's header lists over a simulated path, once per scheme with the
same seed, and measures, block by block, when each header block was sent, when all of
its own bytes had arrived, when the transport delivered it in order and when the
decoder could decode it.

- ``hol_delay`` = decoded - arrived: the time a block waited, with all of its own bytes
  already at the receiver, for something else: an earlier block (HPACK for QUIC decodes
  in encode order), an encoder-stream insert (QPACK, RFC 9204 section 2.1.2), or a hole
  in the connection's byte stream (any scheme over TCP, RFC 9293 in-order delivery).
- A block is *blocked* when its hol_delay is above zero.

The 2017 reference simulator (HTTP Workshop, London; ``simulator.net.ref2017``) is the
baseline; this one adds a real transport (loss recovery, congestion control, acks that
can be lost), encoder and decoder streams packetised on their own, per-block delay
distributions, the blocked-streams limit, both directions, and a decode of every block
checked against its input.

Published reference points: the 2017 simulator's run on one HAR (185 requests, 14 losses,
one seed) gave HPACK in order 9 blocked blocks, 1,344 ms total HOL delay and a 73%
saving, QCRAM 7 blocked blocks, 1,004 ms and 68% (shown at the HTTP Workshop, London,
June 2017).  The QUIC working group's header
compression design team reported in January 2018 roughly ten times fewer HOL-blocking
events for QPACK and QCRAM than for HPACK, since about 9 blocks in 10 are not
vulnerable, and that blocking buys most of its compression gain early in a connection.
Offline, on the QPACK interop trace ``traces/qif/fb-resp-hq.qif`` (340,737 raw bytes),
HPACK encodes to 90,448 bytes (26.5%) and QPACK with a 4 KiB table to about 51,800
(15.2%), with 16 KiB to about 44,600 (13.1%).

Schedule: a timed trace (HAR) replays at its start times, idle gaps capped at
``max_idle_s`` (1 s, as in 2017) and start times floored to ``coalesce_s`` (1 ms) so
that requests starting within the same millisecond share packets.  QIF traces carry no
timing: request ``i`` starts at ``i * spacing_s``.  How soon QPACK's acknowledgements come
back relative to that spacing decides how much of its table the encoder may reference,
so ``spacing_s`` is an explicit parameter of every result.

One compression context and one connection per origin (as in 2017); the request and
response directions have separate contexts (RFC 9204 section 2).
"""

from ...stats import confidence_band
from .cli import add_arguments, params_from_args
from .study import DIRECTIONS, SCHEMES, TRANSPORTS, HolParams, HolResult, resolve_direction, run, schedule, schemes

__all__ = [
    "HolParams",
    "HolResult",
    "run",
    "schedule",
    "resolve_direction",
    "SCHEMES",
    "schemes",
    "DIRECTIONS",
    "TRANSPORTS",
    "confidence_band",
    "add_arguments",
    "params_from_args",
]
