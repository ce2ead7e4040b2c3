"""Wire-level accounting: when does each frame, and each header block, complete?

The transport models (``simulator.net``) deliver bytes in order with the virtual time
(``on_data(stream_id, data, end, time_s)``).  These accountants run the frame scanner
over those deliveries (no copies: only frame boundaries are tracked) and record, for
every frame, the time its last byte became deliverable, and for every header block
(HEADERS or PUSH_PROMISE plus its CONTINUATIONs in HTTP/2, a HEADERS/PUSH_PROMISE frame
in HTTP/3) the time it became decodable: the quantities the head-of-line-blocking and
header-compression studies measure.

    acct = H2WireAccounting(preface=True)
    conn.server.on_data = acct.on_data          # TCP: the connection's byte stream, in order
    ...
    acct.header_blocks   # [HeaderBlock(stream_id, kind, start, end, frames, time_s), ...]

    acct3 = H3WireAccounting()
    quic.server.on_data = acct3.on_data         # QUIC: per stream, in each stream's order
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import H2Scanner, H3Scanner, FrameError, decode_varint

__all__ = ["FrameDone", "HeaderBlock", "H2WireAccounting", "H3WireAccounting"]

_H2_HEADERS, _H2_PUSH_PROMISE, _H2_CONTINUATION, _END_HEADERS = 0x1, 0x5, 0x9, 0x4
_H3_HEADERS, _H3_PUSH_PROMISE = 0x1, 0x5


@dataclass(frozen=True)
class FrameDone:
    """One frame whose last byte was delivered, and when."""

    stream_id: int           # HTTP/2: the frame's stream id; HTTP/3: the QUIC stream
    type: int
    flags: int               # HTTP/3: always 0
    offset: int              # HTTP/2: the frame's first byte; HTTP/3: its payload
    length: int              # payload length
    time_s: float            # when its last byte was delivered


@dataclass(frozen=True)
class HeaderBlock:
    """A complete header block (HEADERS or PUSH_PROMISE, with CONTINUATIONs in HTTP/2) and when it was decodable."""

    stream_id: int
    kind: str                # "HEADERS" or "PUSH_PROMISE"
    start: int               # HTTP/2: first frame's first byte; HTTP/3: payload start
    end: int                 # offset just past the last frame
    frames: int              # frames carrying it (1 + CONTINUATIONs in HTTP/2)
    time_s: float            # when it became complete (decodable)


@dataclass
class H2WireAccounting:
    """One direction of an HTTP/2 connection."""

    preface: bool | None = None
    max_frame_size: int = (1 << 24) - 1
    validate: bool = True
    on_frame: Callable[[FrameDone], None] | None = None
    on_header_block: Callable[[HeaderBlock], None] | None = None
    frames: list[FrameDone] = field(default_factory=list)
    header_blocks: list[HeaderBlock] = field(default_factory=list)
    payload_bytes: dict[int, int] = field(default_factory=dict)   # per stream id

    def __post_init__(self) -> None:
        self._scanner = H2Scanner(self.max_frame_size, preface=self.preface, validate=self.validate)
        self._open: tuple[int, str, int, int] | None = None   # (stream, kind, start, frames)

    @property
    def offset(self) -> int:
        """Bytes of the connection's stream scanned so far."""
        return self._scanner.offset

    def feed(self, data, time_s: float) -> int:
        """Account for ``data`` delivered at ``time_s``; returns the frames it completed.
        A malformed stream raises ``FrameError`` after recording the frames before it."""
        sc = self._scanner
        try:
            n = sc.feed(data)
        except FrameError as exc:
            self._record(sc.results()[:exc.count], time_s)
            raise
        if n:
            self._record(sc.results(), time_s)
        return n

    def on_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        """``simulator.net`` DataCallback: over TCP the labels do not matter, the order does."""
        self.feed(data, time_s)

    def _record(self, records, time_s: float) -> None:
        for ftype, flags, sid, off, length in records:
            done = FrameDone(sid, ftype, flags, off - 9, length, time_s)
            self.frames.append(done)
            self.payload_bytes[sid] = self.payload_bytes.get(sid, 0) + length
            if self.on_frame:
                self.on_frame(done)
            if ftype in (_H2_HEADERS, _H2_PUSH_PROMISE):
                kind = "HEADERS" if ftype == _H2_HEADERS else "PUSH_PROMISE"
                self._open = (sid, kind, off - 9, 1)
            elif ftype == _H2_CONTINUATION and self._open is not None:
                s, kind, start, count = self._open
                self._open = (s, kind, start, count + 1)
            else:
                continue
            if flags & _END_HEADERS:
                s, kind, start, count = self._open
                block = HeaderBlock(s, kind, start, off + length, count, time_s)
                self._open = None
                self.header_blocks.append(block)
                if self.on_header_block:
                    self.on_header_block(block)


class _H3Stream:
    __slots__ = ("scanner", "prefix", "skip", "base")

    def __init__(self) -> None:
        self.scanner = None        # H3Scanner once the stream is known to carry frames
        self.prefix = b""          # unidirectional stream header still being read
        self.skip = False          # QPACK encoder/decoder or unknown stream type: no frames
        self.base = 0              # stream offset where the frames start


@dataclass
class H3WireAccounting:
    """The HTTP/3 frames of every stream of one direction of a QUIC connection.

    Bidirectional streams are request streams; a unidirectional stream starts with its
    stream type (RFC 9114 section 6.2): control (0x00) and push (0x01, then a push ID)
    streams carry frames, QPACK encoder/decoder streams (0x02/0x03) and unknown types
    do not and are only counted.  ``FrameDone.offset`` and ``HeaderBlock.start`` are
    payload offsets in the QUIC stream (HTTP/3 frame headers have no fixed size).
    """

    validate: bool = True
    on_frame: Callable[[FrameDone], None] | None = None
    on_header_block: Callable[[HeaderBlock], None] | None = None
    frames: list[FrameDone] = field(default_factory=list)
    header_blocks: list[HeaderBlock] = field(default_factory=list)
    other_bytes: dict[int, int] = field(default_factory=dict)     # streams without frames

    def __post_init__(self) -> None:
        self._streams: dict[int, _H3Stream] = {}

    def on_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        """``simulator.net`` DataCallback for the QUIC model."""
        st = self._streams.get(stream_id)
        if st is None:
            st = self._streams[stream_id] = _H3Stream()
            if not stream_id & 0x2:
                st.scanner = H3Scanner(kind="request", validate=self.validate)
        if st.scanner is None and not st.skip:
            st.prefix += bytes(data)
            got = decode_varint(st.prefix, 0)
            kind = None
            if got is not None and got[0] == 0x01:
                kind = "push"
                got = decode_varint(st.prefix, got[1])      # the push ID
            elif got is not None and got[0] == 0x00:
                kind = "control"
            elif got is not None:
                st.skip = True
            if got is None:
                return
            st.base = got[1]
            data = st.prefix[st.base:]
            st.prefix = b""
            if kind is not None:
                st.scanner = H3Scanner(kind=kind, validate=self.validate)
        if st.skip:
            self.other_bytes[stream_id] = self.other_bytes.get(stream_id, 0) + len(data)
            return
        sc = st.scanner
        try:
            n = sc.feed(data)
        except FrameError as exc:
            self._record(stream_id, st.base, sc.results()[:exc.count], time_s)
            raise
        if n:
            self._record(stream_id, st.base, sc.results(), time_s)
        if end:
            sc.finish()

    def _record(self, stream_id: int, base: int, records, time_s: float) -> None:
        for ftype, off, length in records:
            done = FrameDone(stream_id, ftype, 0, base + off, length, time_s)
            self.frames.append(done)
            if self.on_frame:
                self.on_frame(done)
            if ftype in (_H3_HEADERS, _H3_PUSH_PROMISE):
                kind = "HEADERS" if ftype == _H3_HEADERS else "PUSH_PROMISE"
                block = HeaderBlock(stream_id, kind, base + off, base + off + length, 1, time_s)
                self.header_blocks.append(block)
                if self.on_header_block:
                    self.on_header_block(block)
