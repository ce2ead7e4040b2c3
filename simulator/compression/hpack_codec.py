"""HPACK (RFC 7541) through the ``hpack`` package, in two transport modes.

* ``hpack-tcp`` (HTTP/2): the transport delivers header blocks in the order they were
  encoded, so the decoder decodes each block as it is fed.  Feeding out of order is a
  bug in the caller and raises ``ValueError``.
* ``hpack-quic`` (HPACK for QUIC as in the 2017 drafts and the 2017 simulator): blocks
  travel on independent streams, but HPACK's dynamic table (RFC 7541 2.3.2, 4.4) is
  only correct when blocks are decoded in encode order, so the decoder holds every
  block until all blocks with a smaller ``seq`` are decoded (head-of-line blocking).

HPACK has no encoder stream: inserts are inside the header blocks ("Literal with
Incremental Indexing", RFC 7541 6.2.1), so ``encoder_stream`` is always empty.
A reset stream's header block must still be decoded to keep the table in step
(RFC 9113 Section 4.3), so ``cancel_stream`` does nothing here.
"""

from __future__ import annotations

import hpack

from ..frames.h2buffer import install_huffman
from .base import DecodedBlock, Decoder, DecompressionFailed, Encoder

# hpack's decoder takes the C Huffman decoder when the extension is built: it decodes
# exactly as hpack's own (checked by tests/test_frames*), 40x faster; its encoder the C
# encoder, the same bytes in time linear in the string (hpack's own is quadratic).
install_huffman()

__all__ = ["HpackEncoder", "HpackDecoder"]


class HpackEncoder(Encoder):
    """HPACK encoder (RFC 7541, ``hpack`` package); in ``quic`` mode every block after the first may block."""

    def __init__(self, *, mode: str = "tcp", table_bytes: int = 4096, cookie_crumbs: bool = True) -> None:
        super().__init__(cookie_crumbs=cookie_crumbs)
        if mode not in ("tcp", "quic"):
            raise ValueError(f"HPACK mode must be 'tcp' or 'quic', not {mode!r}")
        self.mode = mode
        self.scheme = f"hpack-{mode}"
        self._enc = hpack.Encoder()
        if table_bytes != self._enc.header_table_size:
            # The first block then starts with a Dynamic Table Size Update (RFC 7541 6.3).
            self._enc.header_table_size = table_bytes

    def _encode(self, seq, stream_id, fields):
        block = self._enc.encode(list(fields), huffman=True)
        return block, b"", 0, self.mode == "quic" and seq > 0


class HpackDecoder(Decoder):
    """HPACK decoder (RFC 7541, ``hpack`` package); in ``quic`` mode it holds blocks until all earlier ones decoded."""

    def __init__(self, *, mode: str = "tcp", table_bytes: int = 4096) -> None:
        super().__init__()
        if mode not in ("tcp", "quic"):
            raise ValueError(f"HPACK mode must be 'tcp' or 'quic', not {mode!r}")
        self.mode = mode
        self.scheme = f"hpack-{mode}"
        self._dec = hpack.Decoder(max_header_list_size=1 << 30)
        self._dec.max_allowed_table_size = table_bytes
        self._dec.header_table_size = table_bytes
        self.next_seq = 0  # the next block in encode order
        self._waiting: dict[int, tuple[int, bytes]] = {}  # seq -> (stream_id, block)

    def _decode(self, seq: int, stream_id: int, block: bytes, was_blocked: bool) -> DecodedBlock:
        try:
            headers = self._dec.decode(block, raw=True)
        except hpack.HPACKError as exc:
            raise DecompressionFailed(f"HPACK block seq {seq} (stream {stream_id}): {exc}") from None
        self.next_seq = seq + 1
        return DecodedBlock(seq, stream_id, tuple((bytes(n), bytes(v)) for n, v in headers), len(block), was_blocked)

    def feed_header_block(self, stream_id: int, block: bytes, seq: int) -> DecodedBlock | None:
        """Decode block ``seq``; in ``quic`` mode hold it (None) until every earlier block is decoded."""
        if self.mode == "tcp":
            if seq != self.next_seq:
                raise ValueError(f"hpack-tcp needs blocks in order: got seq {seq}, expected {self.next_seq}")
            return self._decode(seq, stream_id, block, False)
        if seq < self.next_seq or seq in self._waiting:
            raise ValueError(f"hpack-quic: block seq {seq} fed twice")
        if seq > self.next_seq:  # an earlier block is missing: wait (HOL blocking)
            self._waiting[seq] = (stream_id, block)
            self._note_blocked()
            return None
        decoded = self._decode(seq, stream_id, block, False)
        while self.next_seq in self._waiting:  # later blocks waiting for this one: take_unblocked()
            sid, blk = self._waiting.pop(self.next_seq)
            self._unblocked.append(self._decode(self.next_seq, sid, blk, True))
        return decoded

    @property
    def blocked_bytes(self) -> int:
        """Bytes of header blocks waiting for an earlier block (``quic`` mode head-of-line blocking)."""
        return sum(len(b) for _, b in self._waiting.values())

    @property
    def blocked_count(self) -> int:
        """Header blocks waiting for an earlier block (``quic`` mode head-of-line blocking)."""
        return len(self._waiting)
