"""The QCRAM decoder (draft-krasic-quic-qcram-03/-04), by hand as the encoder in ``qcram.py``
(no library implements QCRAM): control-stream inserts applied in order, request-stream
blocks decoded against the table, and in ``blocking`` mode blocks held until the entries
they depend on arrive, with HEADER_ACK sent back.  The wire format is described in
``qcram.py``'s docstring.
"""

from __future__ import annotations

from .base import BlockedStreamsExceeded, DecodedBlock, Decoder, DecompressionFailed
from .qcram import (BLOCKING, FRAME_HEADER_ACK, FRAME_HEADERS, STATIC_COUNT, STATIC_TABLE, _frame, _parse_frames,
                    _Table, entry_size)
from .wire import WireError, decode_integer, decode_string, encode_varint, varint_len

__all__ = ["QcramDecoder"]


class QcramDecoder(Decoder):
    """QCRAM decoder (draft-krasic-quic-qcram-03/-04): control-stream inserts, blocked blocks in ``blocking`` mode."""

    def __init__(self, *, table_bytes: int = 4096, max_blocked: int = 100, blocking: bool = False) -> None:
        super().__init__()
        self.scheme = "qcram-blocking" if blocking else "qcram"
        self.blocking = blocking
        self.max_blocked = max_blocked if blocking else 0
        self.header_acks = blocking
        self.table = _Table(table_bytes)
        self._control = bytearray()
        self.control_offset = 0                  # control-stream bytes consumed
        self._blocked: dict[int, tuple[int, bytes, int]] = {}  # stream -> (seq, block, required)

    def feed_encoder_stream(self, data: bytes) -> list[DecodedBlock]:
        """Apply complete control-stream HEADERS frames to the table; the blocked blocks this lets decode."""
        self._control += data
        frames, used = _parse_frames(self._control)
        for frame_type, _, payload in frames:
            where = f"control stream frame at byte {self.control_offset}"
            if frame_type != FRAME_HEADERS:
                raise DecompressionFailed(f"{where}: unexpected frame type {frame_type:#x}")
            try:
                self._control_frame(payload)
            except WireError as exc:
                raise DecompressionFailed(f"{where}: {exc}") from None
            self.control_offset += varint_len(len(payload)) + 2 + len(payload)
        del self._control[:used]
        ready = sorted((seq, sid) for sid, (seq, _, req) in self._blocked.items() if req <= self.table.inserted)
        out = []
        for _, stream_id in ready:
            seq, block, _ = self._blocked.pop(stream_id)
            out.append(self._decode(stream_id, block, seq, True))
        return out

    def _control_frame(self, payload: bytes) -> None:
        fill, pos = decode_integer(payload, 0, 8)
        evictions, pos = decode_integer(payload, pos, 8)
        if fill != self.table.fill or evictions != self.table.evictions:
            raise WireError(f"prefix Fill {fill}/Evictions {evictions} does not match the table "
                            f"({self.table.fill}/{self.table.evictions})")
        base = self.table.inserted
        while pos < len(payload):
            first = payload[pos]
            if first & 0xC0 == 0x40:              # Literal with Incremental Indexing (RFC 7541 6.2.1)
                index, pos = decode_integer(payload, pos, 6)
                if index == 0:
                    name, pos = decode_string(payload, pos)
                else:
                    name = self._lookup(index, base, pos)[0]
                value, pos = decode_string(payload, pos)
            elif first & 0xE0 == 0x20:            # Indexed-Duplicate (draft 4.4)
                index, pos = decode_integer(payload, pos, 5)
                name, value = self._lookup(index, base, pos)
            else:
                raise WireError(f"representation {first:#04x} not allowed on the control stream")
            if entry_size(name, value) > self.table.capacity:
                raise WireError("insert larger than the table")
            self.table.insert(name, value)

    def _lookup(self, index: int, base: int, pos: int) -> tuple[bytes, bytes]:
        if 1 <= index <= STATIC_COUNT:
            return STATIC_TABLE[index - 1]
        absolute = base - 1 - (index - STATIC_COUNT - 1)
        if index == 0 or absolute < 0:
            raise WireError(f"index {index} out of range at byte {pos}")
        if absolute >= self.table.inserted:
            raise WireError(f"index {index} refers to entry {absolute}, "
                            "not yet inserted (a non-BLOCKING block would block)")
        entry = self.table.entries.get(absolute)
        if entry is None:
            raise WireError(f"index {index} refers to evicted entry {absolute}")
        return entry.name, entry.value

    def feed_header_block(self, stream_id: int, block: bytes, seq: int) -> DecodedBlock | None:
        """Decode one request-stream block, or hold it (None) while its Depends exceeds the inserts received."""
        try:
            flags = block[0]
            _, required, _ = self._prefix(block)
        except (WireError, IndexError) as exc:
            raise DecompressionFailed(f"QCRAM block seq {seq} (stream {stream_id}): bad prefix: {exc}") from None
        if flags & BLOCKING and not self.blocking:
            raise DecompressionFailed(f"QCRAM block seq {seq}: BLOCKING set but blocking is not enabled")
        if required > self.table.inserted:
            if len(self._blocked) >= self.max_blocked:
                raise BlockedStreamsExceeded(f"QCRAM block seq {seq} (stream {stream_id}) would be the "
                                             f"{len(self._blocked) + 1}th blocked block (limit {self.max_blocked})")
            self._blocked[stream_id] = (seq, block, required)
            self._note_blocked()
            return None
        return self._decode(stream_id, block, seq, False)

    def _prefix(self, block: bytes) -> tuple[int, int, int]:
        """(base, required inserts, position of the first representation)."""
        flags = block[0]
        fill, pos = decode_integer(block, 1, 8)
        evictions, pos = decode_integer(block, pos, 8)
        base = fill + evictions
        required = 0
        if flags & BLOCKING:
            depends, pos = decode_integer(block, pos, 8)
            if depends >= base:
                raise WireError(f"Depends {depends} not below the base {base}")
            required = base - depends
        return base, required, pos

    def _decode(self, stream_id: int, block: bytes, seq: int, was_blocked: bool) -> DecodedBlock:
        try:
            base, _, pos = self._prefix(block)
            headers = []
            dynamic = False
            while pos < len(block):
                first = block[pos]
                if first & 0x80:                         # Indexed (RFC 7541 6.1)
                    index, pos = decode_integer(block, pos, 7)
                    headers.append(self._lookup(index, base, pos))
                    dynamic |= index > STATIC_COUNT
                elif first & 0xF0 == 0x00:               # Literal without Indexing (6.2.2)
                    index, pos = decode_integer(block, pos, 4)
                    if index == 0:
                        name, pos = decode_string(block, pos)
                    else:
                        name = self._lookup(index, base, pos)[0]
                        dynamic |= index > STATIC_COUNT
                    value, pos = decode_string(block, pos)
                    headers.append((name, value))
                else:
                    raise WireError(f"representation {first:#04x} not allowed on a request stream")
        except WireError as exc:
            raise DecompressionFailed(f"QCRAM block seq {seq} (stream {stream_id}): {exc}") from None
        if dynamic and self.header_acks:
            self._decoder_stream += _frame(FRAME_HEADER_ACK, encode_varint(stream_id))
        return DecodedBlock(seq, stream_id, tuple(headers), len(block), was_blocked)

    def cancel_stream(self, stream_id: int) -> None:
        """Drop the stream's blocked block.  QCRAM defines no cancellation signal, so the
        encoder keeps its references pinned (conservative)."""
        self._blocked.pop(stream_id, None)

    @property
    def blocked_bytes(self) -> int:
        """Bytes of request-stream blocks held for control-stream inserts."""
        return sum(len(b) for _, b, _ in self._blocked.values())

    @property
    def blocked_count(self) -> int:
        """Request-stream blocks held for control-stream inserts."""
        return len(self._blocked)
