"""The offline driver: a whole trace through one encoder/decoder pair with no network.

Every block is delivered at once (encoder-stream bytes before the header block, or
after it with ``header_block_first`` to provoke blocking); with ``ack_mode`` 1 the
encoder then learns everything the peer would tell it (decoder-stream bytes, and for
QCRAM the transport's acks of the control stream and of the block), optionally
``ack_delay`` blocks later; with ``ack_mode`` 0 it learns nothing, as in the QPACK
offline-interop files (``<name>.out.<table>.<blocked>.<ack>``).  Every decoded list is
verified against its input.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .base import VerificationError, verify
from .factory import make_decoder, make_encoder

__all__ = ["OfflineResult", "simulate_offline"]


@dataclass(frozen=True, slots=True)
class OfflineResult:
    """Byte totals of one scheme over a whole header-list sequence encoded and decoded offline."""

    scheme: str
    blocks: int
    raw_bytes: int  # sum of name + value lengths of the input lists
    header_block_bytes: int
    encoder_stream_bytes: int
    decoder_stream_bytes: int
    may_block_blocks: int  # blocks the encoder flagged as possibly blocking
    blocked_blocks: int  # blocks that actually waited at the decoder
    max_blocked_bytes: int

    @property
    def compressed_bytes(self) -> int:
        """Bytes on the wire for the headers: header blocks plus encoder stream."""
        return self.header_block_bytes + self.encoder_stream_bytes

    @property
    def ratio(self) -> float:
        """(header-block + encoder-stream bytes) / raw bytes: smaller is better."""
        return self.compressed_bytes / self.raw_bytes if self.raw_bytes else 0.0


def simulate_offline(
    scheme: str,
    header_lists,
    table_bytes: int = 4096,
    max_blocked: int = 100,
    ack_mode: int = 1,
    *,
    ack_delay: int = 0,
    header_block_first: bool = False,
    **options,
) -> OfflineResult:
    """Encode ``header_lists`` (an iterable of header lists) with ``scheme``, decode and
    verify every block, and return the sizes.  ``options`` go to ``make_encoder``."""
    if ack_mode not in (0, 1):
        raise ValueError("ack_mode must be 0 or 1")
    enc = make_encoder(scheme, table_bytes=table_bytes, max_blocked=max_blocked, **options)
    dec = make_decoder(
        scheme, table_bytes=table_bytes, max_blocked=max_blocked, transport=options.get("transport", "quic")
    )
    originals: dict[int, tuple] = {}
    raw = header = stream = feedback = may_block = blocked = 0
    decoded_count = 0
    pending_acks: deque = deque()

    def check(decoded_blocks) -> None:
        nonlocal blocked, decoded_count
        for d in decoded_blocks:
            verify(originals.pop(d.seq), d.headers, context=f"{scheme} block {d.seq}")
            blocked += d.was_blocked
            decoded_count += 1

    def feed_block(unit) -> None:
        decoded = dec.feed_header_block(unit.stream_id, unit.header_block, unit.seq)
        check(([decoded] if decoded is not None else []) + dec.take_unblocked())

    def deliver_acks(limit: int) -> None:
        nonlocal feedback
        while len(pending_acks) > limit:
            fed, acked_offset, seq = pending_acks.popleft()
            feedback += len(fed)
            if fed:
                enc.feed_decoder_stream(fed)
            enc.on_encoder_stream_acked(acked_offset)
            enc.on_header_block_acked(seq)

    for i, headers in enumerate(header_lists):
        unit = enc.encode(4 * i, headers)
        originals[unit.seq] = tuple(headers)
        raw += unit.raw_bytes
        header += len(unit.header_block)
        stream += len(unit.encoder_stream)
        may_block += unit.may_block
        if header_block_first:
            feed_block(unit)
            check(dec.feed_encoder_stream(unit.encoder_stream))
        else:
            check(dec.feed_encoder_stream(unit.encoder_stream))
            feed_block(unit)
        fed = dec.take_decoder_stream()
        if ack_mode == 1:
            pending_acks.append((fed, enc.encoder_stream_offset, unit.seq))
            deliver_acks(ack_delay)
    deliver_acks(0) if ack_mode == 1 else None
    if originals:
        raise VerificationError(f"{scheme}: {len(originals)} blocks never decoded (first seq {min(originals)})")
    return OfflineResult(
        scheme, decoded_count, raw, header, stream, feedback, may_block, blocked, dec.max_blocked_bytes
    )
