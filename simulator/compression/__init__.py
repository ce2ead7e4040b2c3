"""Header compression: one sans-I/O interface, three schemes (HPACK, QPACK, QCRAM).

Schemes (``SCHEMES``):

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
                   ``qcram.py`` for the wire format.
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
from .offline import OfflineResult, simulate_offline

__all__ = [
    "SCHEMES", "make_encoder", "make_decoder", "Encoder", "Decoder", "EncodedBlock", "DecodedBlock",
    "CompressionError", "DecompressionFailed", "BlockedStreamsExceeded", "VerificationError", "verify",
    "split_cookie_crumbs", "join_cookie_crumbs", "simulate_offline", "OfflineResult",
]

SCHEMES = ("hpack", "hpack-tcp", "hpack-quic", "qpack", "qcram", "qcram-blocking")


def _hpack_mode(scheme: str, transport: str) -> str | None:
    if scheme == "hpack":
        if transport not in ("quic", "tcp"):
            raise ValueError(f"transport must be 'quic' or 'tcp', not {transport!r}")
        return transport
    return {"hpack-tcp": "tcp", "hpack-quic": "quic"}.get(scheme)


def make_encoder(scheme: str, table_bytes: int = 4096, max_blocked: int = 100, *, transport: str = "quic",
                 cookie_crumbs: bool = True, **options) -> Encoder:
    """An encoder for ``scheme`` with a dynamic table of ``table_bytes`` and at most
    ``max_blocked`` possibly-blocking blocks outstanding (QPACK, qcram-blocking).
    ``transport`` only matters to ``hpack``; ``options`` go to the QCRAM encoder
    (``insert_policy``, ``history``, ``huffman``)."""
    if options and scheme not in ("qcram", "qcram-blocking"):
        raise TypeError(f"{scheme} takes no options {sorted(options)}")
    mode = _hpack_mode(scheme, transport)
    if mode is not None:
        from .hpack_codec import HpackEncoder
        return HpackEncoder(mode=mode, table_bytes=table_bytes, cookie_crumbs=cookie_crumbs)
    if scheme == "qpack":
        from .qpack_codec import QpackEncoder
        return QpackEncoder(table_bytes=table_bytes, max_blocked=max_blocked, cookie_crumbs=cookie_crumbs)
    if scheme in ("qcram", "qcram-blocking"):
        from .qcram import QcramEncoder
        return QcramEncoder(table_bytes=table_bytes, max_blocked=max_blocked, blocking=scheme == "qcram-blocking",
                            cookie_crumbs=cookie_crumbs, **options)
    raise ValueError(f"unknown compression scheme {scheme!r} (one of {', '.join(SCHEMES)})")


def make_decoder(scheme: str, table_bytes: int = 4096, max_blocked: int = 100, *, transport: str = "quic",
                 **_encoder_only) -> Decoder:
    """The decoder matching ``make_encoder(scheme, ...)`` with the same settings (encoder-only
    options such as ``cookie_crumbs`` are accepted and ignored)."""
    mode = _hpack_mode(scheme, transport)
    if mode is not None:
        from .hpack_codec import HpackDecoder
        return HpackDecoder(mode=mode, table_bytes=table_bytes)
    if scheme == "qpack":
        from .qpack_codec import QpackDecoder
        return QpackDecoder(table_bytes=table_bytes, max_blocked=max_blocked)
    if scheme in ("qcram", "qcram-blocking"):
        from .qcram import QcramDecoder
        return QcramDecoder(table_bytes=table_bytes, max_blocked=max_blocked, blocking=scheme == "qcram-blocking")
    raise ValueError(f"unknown compression scheme {scheme!r} (one of {', '.join(SCHEMES)})")
