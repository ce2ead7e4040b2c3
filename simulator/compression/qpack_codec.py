"""QPACK (RFC 9204) through ``pylsqpack`` (ls-qpack), with the bookkeeping a study needs.

ls-qpack does the compression; this module adds, in pure Python:

* the Required Insert Count of every field section, read from its encoded prefix
  (RFC 9204 4.5.1.1) with ``wire.decode_integer``;
* the encoder's Known Received Count, kept from the decoder-stream instructions it is
  fed (Section Acknowledgment, Stream Cancellation, Insert Count Increment, RFC 9204
  4.4), so each ``EncodedBlock`` says whether it ``may_block`` (RIC > Known Received
  Count at encode time, RFC 9204 2.1.2);
* the decoder's Insert Count, counted from the encoder-stream instructions it is fed
  (RFC 9204 4.3), to enforce SETTINGS_QPACK_BLOCKED_STREAMS with a clear
  ``BlockedStreamsExceeded`` (RFC 9204 2.1.2) and to emit Insert Count Increment
  instructions (RFC 9204 4.4.3), which the ls-qpack binding does not emit by itself.
  Without them an encoder that may not block never learns that its inserts arrived
  and stops using the dynamic table.

The encoder stream starts with the Set Dynamic Table Capacity instruction that
``apply_settings`` returns (RFC 9204 3.2.3, 4.3.1); it is carried in the first block's
``encoder_stream``.
"""

from __future__ import annotations

from collections import deque

import pylsqpack

from .base import BlockedStreamsExceeded, DecodedBlock, Decoder, DecompressionFailed, Encoder
from .wire import Truncated, WireError, decode_integer, encode_integer

__all__ = ["QpackEncoder", "QpackDecoder", "EncoderStreamParser", "decode_required_insert_count"]


def decode_required_insert_count(encoded: int, max_entries: int, total_inserts: int) -> int:
    """RFC 9204 4.5.1.1: recover the Required Insert Count from its encoded form,
    given MaxEntries = floor(capacity / 32) and the decoder's total number of inserts."""
    if encoded == 0:
        return 0
    full_range = 2 * max_entries
    if encoded > full_range:
        raise DecompressionFailed(f"encoded Required Insert Count {encoded} exceeds 2*MaxEntries {full_range}")
    max_value = total_inserts + max_entries
    max_wrapped = (max_value // full_range) * full_range
    ric = max_wrapped + encoded - 1
    if ric > max_value:
        if ric <= full_range:
            raise DecompressionFailed("invalid encoded Required Insert Count")
        ric -= full_range
    if ric == 0:
        raise DecompressionFailed("Required Insert Count decodes to 0 but was not encoded as 0")
    return ric


def encode_required_insert_count(ric: int, max_entries: int) -> int:
    """RFC 9204 4.5.1.1 (the inverse, for tests)."""
    return 0 if ric == 0 else ric % (2 * max_entries) + 1


def required_insert_count_of(block: bytes, max_entries: int, total_inserts: int) -> int:
    """The Required Insert Count of an encoded field section (its first prefix integer,
    8-bit prefix, RFC 9204 4.5.1)."""
    try:
        encoded, _ = decode_integer(block, 0, 8)
    except WireError as exc:
        raise DecompressionFailed(f"field section prefix: {exc}") from None
    if max_entries == 0:
        if encoded:
            raise DecompressionFailed("field section references a dynamic table of capacity 0")
        return 0
    return decode_required_insert_count(encoded, max_entries, total_inserts)


class EncoderStreamParser:
    """Counts inserts on an encoder stream fed in arbitrary pieces (RFC 9204 4.3).

    Only the instruction boundaries matter here, so string literals are skipped, not
    Huffman-decoded.  ``inserts`` is the Insert Count the stream has produced so far.
    """

    def __init__(self, max_capacity: int) -> None:
        self.max_capacity = max_capacity
        self.capacity = 0
        self.inserts = 0
        self.offset = 0  # bytes consumed (complete instructions)
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        """Count the inserts in ``data``, keeping an incomplete instruction for the next call."""
        self._buf += data
        pos = 0
        buf = bytes(self._buf)
        while pos < len(buf):
            try:
                pos = self._instruction(buf, pos)
            except Truncated:
                break
            except WireError as exc:
                raise DecompressionFailed(f"encoder stream byte {self.offset + pos}: {exc}") from None
        del self._buf[:pos]
        self.offset += pos

    def _instruction(self, buf: bytes, pos: int) -> int:
        first = buf[pos]
        if first & 0x80:  # Insert with Name Reference (4.3.2)
            _, pos = decode_integer(buf, pos, 6)
            pos = _skip_string(buf, pos, 7)
            self.inserts += 1
        elif first & 0x40:  # Insert with Literal Name (4.3.3)
            pos = _skip_string(buf, pos, 5)
            pos = _skip_string(buf, pos, 7)
            self.inserts += 1
        elif first & 0x20:  # Set Dynamic Table Capacity (4.3.1)
            capacity, pos = decode_integer(buf, pos, 5)
            if capacity > self.max_capacity:
                raise WireError(f"Set Dynamic Table Capacity {capacity} exceeds the limit {self.max_capacity}")
            self.capacity = capacity
        else:  # Duplicate (4.3.4)
            _, pos = decode_integer(buf, pos, 5)
            self.inserts += 1
        return pos


def _skip_string(buf: bytes, pos: int, prefix_bits: int) -> int:
    length, pos = decode_integer(buf, pos, prefix_bits)
    if pos + length > len(buf):
        raise Truncated("input ends inside a string")
    return pos + length


class QpackEncoder(Encoder):
    """RFC 9204 encoder (ls-qpack) that tracks the Known Received Count."""

    scheme = "qpack"

    def __init__(self, *, table_bytes: int = 4096, max_blocked: int = 100, cookie_crumbs: bool = True) -> None:
        super().__init__(cookie_crumbs=cookie_crumbs)
        self.table_bytes = table_bytes
        self.max_blocked = max_blocked
        self.max_entries = table_bytes // 32  # RFC 9204 3.2.2
        self._enc = pylsqpack.Encoder()
        self._pending_stream = self._enc.apply_settings(table_bytes, max_blocked)
        self._own_stream = EncoderStreamParser(table_bytes)  # counts our own inserts
        self.known_received_count = 0  # RFC 9204 2.1.4
        self._unacked: dict[int, deque[int]] = {}  # stream -> RICs of unacknowledged sections
        self._decoder_buf = bytearray()

    @property
    def insert_count(self) -> int:
        """Dynamic-table inserts this encoder has written on its encoder stream."""
        return self._own_stream.inserts

    def _encode(self, seq, stream_id, fields):
        stream_bytes, block = self._enc.encode(stream_id, list(fields))
        stream_bytes = self._pending_stream + stream_bytes
        self._pending_stream = b""
        self._own_stream.feed(stream_bytes)
        ric = required_insert_count_of(block, self.max_entries, self.insert_count)
        if ric:
            self._unacked.setdefault(stream_id, deque()).append(ric)
        return block, stream_bytes, ric, ric > self.known_received_count

    def blocking_streams(self) -> int:
        """Streams with an unacknowledged section whose RIC exceeds the Known Received Count."""
        return sum(1 for q in self._unacked.values() if q and max(q) > self.known_received_count)

    def feed_decoder_stream(self, data: bytes) -> None:
        """Take decoder-stream bytes (RFC 9204 4.4): acknowledgements that advance the Known Received Count."""
        try:
            self._enc.feed_decoder(data)
        except pylsqpack.DecoderStreamError as exc:
            raise DecompressionFailed(f"decoder stream: {exc}") from None
        self._decoder_buf += data
        buf = bytes(self._decoder_buf)
        pos = 0
        while pos < len(buf):
            try:
                pos = self._decoder_instruction(buf, pos)
            except Truncated:
                break
            except WireError as exc:
                raise DecompressionFailed(f"decoder stream: {exc}") from None
        del self._decoder_buf[:pos]

    def _decoder_instruction(self, buf: bytes, pos: int) -> int:
        first = buf[pos]
        if first & 0x80:  # Section Acknowledgment (4.4.1)
            stream_id, pos = decode_integer(buf, pos, 7)
            queue = self._unacked.get(stream_id)
            if not queue:
                raise WireError(f"Section Acknowledgment for stream {stream_id} with no section outstanding")
            ric = queue.popleft()
            self.known_received_count = max(self.known_received_count, ric)
        elif first & 0x40:  # Stream Cancellation (4.4.2)
            stream_id, pos = decode_integer(buf, pos, 6)
            self._unacked.pop(stream_id, None)
        else:  # Insert Count Increment (4.4.3)
            increment, pos = decode_integer(buf, pos, 6)
            if increment == 0 or self.known_received_count + increment > self.insert_count:
                raise WireError(f"bad Insert Count Increment {increment}")
            self.known_received_count += increment
        return pos


class QpackDecoder(Decoder):
    """RFC 9204 decoder (ls-qpack) that enforces the blocked-streams limit and emits
    Insert Count Increments."""

    scheme = "qpack"

    def __init__(
        self, *, table_bytes: int = 4096, max_blocked: int = 100, insert_count_increments: bool = True
    ) -> None:
        super().__init__()
        self.table_bytes = table_bytes
        self.max_blocked = max_blocked
        self.max_entries = table_bytes // 32
        self.insert_count_increments = insert_count_increments
        self._dec = pylsqpack.Decoder(table_bytes, max_blocked)
        self._stream = EncoderStreamParser(table_bytes)
        self._reported = 0  # the encoder's Known Received Count, as we told it
        self._blocked: dict[int, tuple[int, bytes, int]] = {}  # stream -> (seq, block, RIC)

    @property
    def insert_count(self) -> int:
        """The Insert Count (RFC 9204 terms): dynamic-table inserts received on the encoder stream."""
        return self._stream.inserts

    def feed_encoder_stream(self, data: bytes) -> list[DecodedBlock]:
        """Apply encoder-stream bytes; the blocked sections they unblock (queues an Insert Count Increment, 4.4.3)."""
        self._stream.feed(data)
        try:
            ready = self._dec.feed_encoder(data)
        except pylsqpack.EncoderStreamError as exc:
            raise DecompressionFailed(f"encoder stream byte {self._stream.offset}: {exc}") from None
        out = []
        for stream_id in ready:
            seq, block, ric = self._blocked.pop(stream_id)
            try:
                control, headers = self._dec.resume_header(stream_id)
            except pylsqpack.DecompressionFailed as exc:
                raise DecompressionFailed(f"field section on stream {stream_id}: {exc}") from None
            out.append(self._decoded(seq, stream_id, block, ric, control, headers, True))
        if self.insert_count_increments and self.insert_count > self._reported:
            # RFC 9204 4.4.3: tell the encoder how many more inserts arrived.
            self._decoder_stream += encode_integer(self.insert_count - self._reported, 6, 0x00)
            self._reported = self.insert_count
        return out

    def feed_header_block(self, stream_id: int, block: bytes, seq: int) -> DecodedBlock | None:
        """Decode one field section, or hold it (None) while its Required Insert Count exceeds the Insert Count."""
        if stream_id in self._blocked:
            raise DecompressionFailed(f"a second field section on stream {stream_id} while its first is blocked")
        ric = required_insert_count_of(block, self.max_entries, self.insert_count)
        if ric > self.insert_count and len(self._blocked) >= self.max_blocked:
            raise BlockedStreamsExceeded(
                f"stream {stream_id} would be blocked (Required Insert Count {ric} > Insert Count "
                f"{self.insert_count}) but {len(self._blocked)} streams are already blocked "
                f"(SETTINGS_QPACK_BLOCKED_STREAMS {self.max_blocked})"
            )
        try:
            control, headers = self._dec.feed_header(stream_id, block)
        except pylsqpack.StreamBlocked:
            self._blocked[stream_id] = (seq, block, ric)
            self._note_blocked()
            return None
        except pylsqpack.DecompressionFailed as exc:
            raise DecompressionFailed(f"field section on stream {stream_id}: {exc}") from None
        return self._decoded(seq, stream_id, block, ric, control, headers, False)

    def _decoded(self, seq, stream_id, block, ric, control, headers, was_blocked) -> DecodedBlock:
        self._decoder_stream += control  # Section Acknowledgment when RIC > 0 (4.4.1)
        if ric:
            self._reported = max(self._reported, ric)
        return DecodedBlock(seq, stream_id, tuple(headers), len(block), was_blocked)

    def cancel_stream(self, stream_id: int) -> None:
        """RFC 9204 4.4.2: discard the stream's blocked section and emit Stream Cancellation."""
        self._blocked.pop(stream_id, None)
        if self.table_bytes:
            self._decoder_stream += self._dec.cancel_stream(stream_id)

    @property
    def blocked_bytes(self) -> int:
        """Bytes of field sections blocked on encoder-stream inserts (RFC 9204 2.1.2)."""
        return sum(len(b) for _, b, _ in self._blocked.values())

    @property
    def blocked_count(self) -> int:
        """Streams blocked on encoder-stream inserts (RFC 9204 2.1.2)."""
        return len(self._blocked)
