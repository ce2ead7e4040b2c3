"""The codec-independent parts: the block records, errors, cookie crumbs, ``verify``.

Every scheme (HPACK, QPACK, QCRAM) produces ``EncodedBlock``s from its encoder and
``DecodedBlock``s from its decoder; see the package docstring for how a study drives
them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..traces.model import HeaderList

__all__ = [
    "EncodedBlock",
    "DecodedBlock",
    "CompressionError",
    "DecompressionFailed",
    "BlockedStreamsExceeded",
    "VerificationError",
    "split_cookie_crumbs",
    "join_cookie_crumbs",
    "same_headers",
    "verify",
]


class CompressionError(Exception):
    """Base of the codec errors."""


class DecompressionFailed(CompressionError):
    """The peer's bytes cannot be decoded (RFC 9204 QPACK_DECOMPRESSION_FAILED,
    QPACK_ENCODER_STREAM_ERROR, QPACK_DECODER_STREAM_ERROR; RFC 7541
    COMPRESSION_ERROR; QCRAM HTTP_HPACK_DECOMPRESSION_FAILED)."""


class BlockedStreamsExceeded(DecompressionFailed):
    """More streams would be blocked than SETTINGS_QPACK_BLOCKED_STREAMS allows
    (RFC 9204 Section 2.1.2: a connection error of type QPACK_DECOMPRESSION_FAILED)."""


class VerificationError(CompressionError):
    """A decoded header list differs from the list that was encoded."""


@dataclass(frozen=True, slots=True)
class EncodedBlock:
    """What ``Encoder.encode`` returns for one header list.

    ``encoder_stream`` are the bytes to append to the encoder (QPACK) / control (QCRAM)
    stream, starting at ``encoder_stream_offset``; they must be sent no later than
    ``header_block``.  ``required_insert_count`` is the number of dynamic-table inserts
    the decoder needs before it can decode the block (QPACK: the Required Insert
    Count, RFC 9204 4.5.1.1; QCRAM: the largest referenced absolute index + 1, from
    the draft's Depends; HPACK: 0).  ``may_block`` says whether the block can wait at
    the decoder for anything other than its own bytes: for QPACK and QCRAM, the
    required insert count exceeded what the encoder knew the decoder had received
    (RFC 9204 2.1.2); for HPACK over QUIC, every block after the first (blocks are
    decoded strictly in ``seq`` order); for HPACK over TCP, never (the transport
    orders the bytes).
    """

    seq: int
    stream_id: int
    header_block: bytes
    encoder_stream: bytes
    encoder_stream_offset: int
    required_insert_count: int
    may_block: bool
    headers: HeaderList  # the list as encoded (cookie crumbs split when enabled)
    raw_bytes: int  # sum of name + value lengths of the caller's list


@dataclass(frozen=True, slots=True)
class DecodedBlock:
    """A header block the decoder has decoded; ``was_blocked`` when it had to wait."""

    seq: int
    stream_id: int
    headers: HeaderList
    header_block_bytes: int
    was_blocked: bool


def split_cookie_crumbs(headers: HeaderList) -> HeaderList:
    """Split each ``cookie`` field on "; " into one field per crumb, in place
    (RFC 9113 8.2.3, RFC 9114 4.2.1; better compression, RFC 7541 Section 7.1)."""
    out = []
    for name, value in headers:
        if name == b"cookie" and b";" in value:
            out.extend((name, crumb.strip(b" ")) for crumb in value.split(b";") if crumb.strip(b" "))
        else:
            out.append((name, value))
    return tuple(out)


def join_cookie_crumbs(headers: HeaderList) -> HeaderList:
    """Re-join every ``cookie`` field into one, at the first one's place, with "; "
    (RFC 9113 8.2.3).  Crumbs that were split by ``split_cookie_crumbs`` compare
    equal to the original after this."""
    crumbs = [c.strip(b" ") for n, v in headers if n == b"cookie" for c in v.split(b";")]
    crumbs = [c for c in crumbs if c]
    out: list[tuple[bytes, bytes]] = []
    placed = False
    for name, value in headers:
        if name == b"cookie":
            if not placed:
                out.append((b"cookie", b"; ".join(crumbs)))
                placed = True
        else:
            out.append((name, value))
    return tuple(out)


def verify(
    original: HeaderList, decoded: HeaderList, *, ordered: bool = True, where: str = "", context: str = ""
) -> None:
    """Raise ``VerificationError`` unless ``decoded`` is ``original`` (after re-joining
    cookie crumbs on both sides).  ``ordered=False`` compares as multisets (the QPACK
    offline-interop rule: encoders may reorder fields within a list).  ``where`` (or
    ``context``) names the block in the message."""
    if same_headers(original, decoded, ordered=ordered):
        return
    a = join_cookie_crumbs(tuple(original))
    b = join_cookie_crumbs(tuple(decoded))
    place = where or context
    raise VerificationError((f"{place}: " if place else "") + describe_mismatch(a, b))


def same_headers(original: HeaderList, decoded: HeaderList, *, ordered: bool = True) -> bool:
    """Equality after re-joining cookie crumbs (ordered) or as multisets of fields with
    cookies split into crumbs (unordered)."""
    if ordered:
        return join_cookie_crumbs(tuple(original)) == join_cookie_crumbs(tuple(decoded))
    return Counter(split_cookie_crumbs(tuple(original))) == Counter(split_cookie_crumbs(tuple(decoded)))


def describe_mismatch(expected: HeaderList, got: HeaderList) -> str:
    """One line naming the first difference between two header lists."""
    missing = Counter(expected) - Counter(got)
    extra = Counter(got) - Counter(expected)
    if missing or extra:
        parts = []
        if missing:
            n, v = next(iter(missing))
            parts.append(f"missing {n.decode('latin-1')}: {v.decode('latin-1')[:60]!r}")
        if extra:
            n, v = next(iter(extra))
            parts.append(f"unexpected {n.decode('latin-1')}: {v.decode('latin-1')[:60]!r}")
        return f"decoded list differs ({len(expected)} fields expected, {len(got)} decoded): " + ", ".join(parts)
    for i, (x, y) in enumerate(zip(expected, got)):
        if x != y:
            return f"field {i} out of order: expected {x[0].decode('latin-1')}, decoded {y[0].decode('latin-1')}"
    return "decoded list differs"


class Encoder:
    """Common encoder state: the block sequence number, the encoder-stream offset and
    cookie crumbs.  Subclasses implement ``_encode`` and the feedback hooks they need;
    the hooks a scheme does not use are no-ops so a study can call all of them."""

    scheme = "?"

    def __init__(self, *, cookie_crumbs: bool = True) -> None:
        self.cookie_crumbs = cookie_crumbs
        self.next_seq = 0
        self.encoder_stream_offset = 0  # bytes emitted on the encoder/control stream

    def encode(self, stream_id: int, headers) -> EncodedBlock:
        """Encode one header list for ``stream_id`` (cookie crumbs split first, RFC 9113 8.2.3) into the next block."""
        original = tuple((bytes(n), bytes(v)) for n, v in headers)
        fields = split_cookie_crumbs(original) if self.cookie_crumbs else original
        seq = self.next_seq
        self.next_seq += 1
        offset = self.encoder_stream_offset
        block, stream_bytes, ric, may_block = self._encode(seq, stream_id, fields)
        self.encoder_stream_offset += len(stream_bytes)
        return EncodedBlock(
            seq=seq,
            stream_id=stream_id,
            header_block=block,
            encoder_stream=stream_bytes,
            encoder_stream_offset=offset,
            required_insert_count=ric,
            may_block=may_block,
            headers=fields,
            raw_bytes=sum(len(n) + len(v) for n, v in original),
        )

    def _encode(self, seq: int, stream_id: int, fields: HeaderList) -> tuple[bytes, bytes, int, bool]:
        raise NotImplementedError

    def feed_decoder_stream(self, data: bytes) -> None:
        """Bytes from the peer decoder's decoder stream (QPACK, QCRAM HEADER_ACK)."""

    def on_encoder_stream_acked(self, acked_offset: int) -> None:
        """The transport acknowledged encoder/control-stream bytes [0, acked_offset) (QCRAM)."""

    def on_header_block_acked(self, seq: int) -> None:
        """The transport acknowledged every byte of header block ``seq`` (QCRAM)."""

    def take_encoder_stream(self) -> bytes:
        """Encoder-stream bytes produced outside ``encode`` (none for these schemes)."""
        return b""


class Decoder:
    """Common decoder state; see the package docstring."""

    scheme = "?"

    def __init__(self) -> None:
        self._decoder_stream = bytearray()
        self._unblocked: list[DecodedBlock] = []
        self.max_blocked_bytes = 0  # high-water mark of blocked_bytes

    def feed_encoder_stream(self, data: bytes) -> list[DecodedBlock]:
        """Take encoder-stream bytes; the blocks they unblock.  This default (no encoder stream: HPACK)
        unblocks none."""
        return []

    def feed_header_block(self, stream_id: int, block: bytes, seq: int) -> DecodedBlock | None:
        """Decode one complete header block; None when it is blocked."""
        raise NotImplementedError

    def take_unblocked(self) -> list[DecodedBlock]:
        """Blocks that ``feed_header_block`` unblocked besides its own (HPACK over QUIC:
        later blocks that were waiting for this one)."""
        out, self._unblocked = self._unblocked, []
        return out

    def take_decoder_stream(self) -> bytes:
        """Decoder-stream bytes produced since the last call (RFC 9204 4.4), for the caller to send."""
        out = bytes(self._decoder_stream)
        self._decoder_stream.clear()
        return out

    def cancel_stream(self, stream_id: int) -> None:
        """The stream was reset: drop its blocked block if any (RFC 9204 4.4.2)."""

    @property
    def blocked_bytes(self) -> int:
        """Bytes of header blocks now held waiting for the dynamic table; 0 for a scheme that never blocks."""
        return 0

    @property
    def blocked_count(self) -> int:
        """Header blocks now held waiting for the dynamic table; 0 for a scheme that never blocks."""
        return 0

    def _note_blocked(self) -> None:
        self.max_blocked_bytes = max(self.max_blocked_bytes, self.blocked_bytes)
