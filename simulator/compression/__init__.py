"""Header compression: one sans-I/O interface, three schemes (HPACK, QPACK, QCRAM).

Schemes (``SCHEMES``; ``ADDED_SCHEMES`` names more, each a module with ``make_encoder`` and
``make_decoder``: ``docs/extending.md``):

=================  ==========================================================================
``hpack``          HPACK (RFC 7541, ``hpack`` package); ``transport="quic"`` (default) gives
                   HPACK over QUIC as in the 2017 drafts: blocks decoded strictly in ``seq``
                   order, so a missing block blocks every later one; ``transport="tcp"``
                   gives HTTP/2's HPACK (the transport orders the blocks).  ``hpack-quic``
                   and ``hpack-tcp`` name the two directly.
``qpack``          QPACK (RFC 9204, ``pylsqpack``): encoder stream, decoder stream, Required
                   Insert Count, at most ``max_blocked`` blocked streams.
``qcram``          QCRAM (draft-krasic-quic-qcram), non-blocking: references only entries whose
                   control-stream insert the transport has acknowledged.  Hand-written, see
                   ``qcram.py`` for the wire format (the decoder: ``qcram_decoder.py``).
``qcram-blocking`` QCRAM with the later drafts' BLOCKING flag, Depends prefix and HEADER_ACK.
=================  ==========================================================================

How a study drives a pair (one per direction and connection)::

    enc = make_encoder(scheme, table_bytes=4096, max_blocked=100)   # transport="quic", cookie_crumbs=True
    dec = make_decoder(scheme, table_bytes=4096, max_blocked=100)   # same settings

    # sender, when a request/response is sent:
    unit = enc.encode(stream_id, headers)            # -> EncodedBlock
    #   unit.header_block      bytes for the request stream (frame them as you like)
    #   unit.encoder_stream    bytes to append to the encoder/control unidirectional stream,
    #                          at offset unit.encoder_stream_offset (empty for HPACK)
    #   unit.seq, unit.required_insert_count, unit.may_block, unit.raw_bytes

    # receiver, as bytes arrive (in order within each stream):
    done = dec.feed_encoder_stream(data)             # -> [DecodedBlock] now unblocked
    one = dec.feed_header_block(stream_id, block, seq)   # -> DecodedBlock, or None = blocked
    more = dec.take_unblocked()                      # hpack-quic: later blocks this one released
    back = dec.take_decoder_stream()                 # bytes to ship back on the decoder stream
    dec.blocked_bytes, dec.blocked_count, dec.max_blocked_bytes
    dec.cancel_stream(stream_id)                     # stream reset (QPACK: RFC 9204 4.4.2)

    # sender, as feedback arrives:
    enc.feed_decoder_stream(back)                    # QPACK acks/increments, QCRAM HEADER_ACK
    enc.on_encoder_stream_acked(acked_offset)        # transport acked control-stream bytes
                                                     #   [0, acked_offset): QCRAM's "commit"
    enc.on_header_block_acked(seq)                   # transport acked all of block seq (QCRAM:
                                                     #   releases its references for eviction;
                                                     #   never called = entries stay pinned)

    verify(original_headers, decoded.headers, where="...")   # raises VerificationError

Every hook exists on every scheme (no-op where the scheme has no use for it), so a study
can call all of them unconditionally.  ``seq`` travels with the block only as simulator
metadata (HPACK-for-QUIC's ordering; the others ignore it except to report it back).

Cookies are split into crumbs before encoding in every scheme when ``cookie_crumbs``
(default, like the 2017 simulator; RFC 9113 8.2.3); ``verify`` re-joins them.

Errors: ``DecompressionFailed`` (bad bytes from the peer), ``BlockedStreamsExceeded``
(the decoder's blocked-streams limit, RFC 9204 2.1.2), ``VerificationError`` (a decoded
list differs from its input).  ``simulate_offline`` runs a whole trace with instant
delivery and reports sizes.
"""

from __future__ import annotations

from .base import (BlockedStreamsExceeded, CompressionError, DecodedBlock, Decoder, DecompressionFailed,
                   EncodedBlock, Encoder, VerificationError, join_cookie_crumbs, split_cookie_crumbs, verify)
from .factory import ADDED_SCHEMES, SCHEMES, make_decoder, make_encoder, schemes
from .offline import OfflineResult, simulate_offline

__all__ = [
    "SCHEMES", "ADDED_SCHEMES", "schemes", "make_encoder", "make_decoder", "Encoder", "Decoder", "EncodedBlock",
    "DecodedBlock",
    "CompressionError", "DecompressionFailed", "BlockedStreamsExceeded", "VerificationError", "verify",
    "split_cookie_crumbs", "join_cookie_crumbs", "simulate_offline", "OfflineResult",
]
