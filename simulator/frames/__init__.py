"""HTTP/2 and HTTP/3 frame scanning, QUIC varints, HPACK/QPACK integers and Huffman coding.

Two implementations with one API: the C extension ``_scanner`` (built by the normal
install when a compiler is available) and its pure-Python twin ``scanner``.  The C one
is used when importable; ``WORKBENCH_PURE_PYTHON=1`` forces the twin.
``WORKBENCH_FRAMES_EXT=/path/to/_scanner*.so`` loads the extension from that file
instead (``make asan`` uses it for the AddressSanitizer build).  ``IMPLEMENTATION``
says which one is active (``"c"`` or ``"python"``); ``implementations()`` returns every
available one (the tests run both).

The API (identical in both)::

    sc = H2Scanner(max_frame_size=16384, preface=None)     # preface: True / None (detect) / False
    n = sc.feed(chunk)                                      # frames the chunk completed
    for ftype, flags, stream_id, payload_offset, payload_length in sc.results(): ...
    for ftype, flags, stream_id, payload in sc.feed_frames(chunk): ...  # or so, payloads as bytes
    sc.finish()                                             # FrameError if the stream ends mid-frame
    sc.next_frame(buf, base, max_frame_size, slice_bytes)   # h2's receive buffer: see h2buffer, h2frames

    frames = parse_h2(buffer)          # bulk: arrays frames.types/.flags/.stream_ids/.offsets/.lengths
    H3Scanner(kind="request"), parse_h3(buffer)             # HTTP/3 (one stream)
    decode_varint(buf, pos) / encode_varint(v) / VarintDecoder()
    varint_len(v)                      # size of the minimal encoding (one Python function for both)
    decode_int(buf, pos, prefix_bits) / encode_int(v, prefix_bits, first_byte=0)
    huffman_decode(b) / huffman_encode(b) / huffman_encoded_length(b)

Offsets are absolute stream offsets (for a single buffer: indexes into it); nothing is
copied.  ``feed_frames`` is for a receiver that keeps no buffer: the scanner keeps the bytes
of its one incomplete frame and hands back each completed frame's payload (H3: ``(type,
payload)``); a scanner is fed by ``feed`` or by ``feed_frames``, not both.  Errors:
``FrameError`` (``.code``, ``.code_name``, ``.offset``, ``.reason``), ``HuffmanError``,
``IntegerError``.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from types import ModuleType

from .._extension import load_extension
from . import scanner as _python
from ._errors import FrameError, HuffmanError, IntegerError, error_code_name

__all__ = [
    "IMPLEMENTATION",
    "implementations",
    "get_implementation",
    "FrameError",
    "HuffmanError",
    "IntegerError",
    "H2Scanner",
    "H3Scanner",
    "VarintDecoder",
    "parse_h2",
    "parse_h3",
    "H2Frames",
    "H3Frames",
    "decode_varint",
    "encode_varint",
    "varint_len",
    "integer_len",
    "decode_int",
    "encode_int",
    "huffman_decode",
    "huffman_encode",
    "huffman_encoded_length",
    "H2_FRAME_TYPES",
    "H3_FRAME_TYPES",
    "h2_type_name",
    "h3_type_name",
    "h2_flag_names",
    "error_code_name",
    "PREFACE",
    "h2_frame",
    "h3_frame",
]

PREFACE = _python.PREFACE

H2_FRAME_TYPES = {
    0x0: "DATA",
    0x1: "HEADERS",
    0x2: "PRIORITY",
    0x3: "RST_STREAM",
    0x4: "SETTINGS",
    0x5: "PUSH_PROMISE",
    0x6: "PING",
    0x7: "GOAWAY",
    0x8: "WINDOW_UPDATE",
    0x9: "CONTINUATION",
    0xA: "ALTSVC",
    0xC: "ORIGIN",
    0x10: "PRIORITY_UPDATE",
}
H3_FRAME_TYPES = {
    0x0: "DATA",
    0x1: "HEADERS",
    0x3: "CANCEL_PUSH",
    0x4: "SETTINGS",
    0x5: "PUSH_PROMISE",
    0x7: "GOAWAY",
    0xC: "ORIGIN",
    0xD: "MAX_PUSH_ID",
    0xF0700: "PRIORITY_UPDATE",
    0xF0701: "PRIORITY_UPDATE",
}
# Flag names per frame type (RFC 9113 section 6).
_H2_FLAGS = {
    0x0: {0x1: "END_STREAM", 0x8: "PADDED"},
    0x1: {0x1: "END_STREAM", 0x4: "END_HEADERS", 0x8: "PADDED", 0x20: "PRIORITY"},
    0x4: {0x1: "ACK"},
    0x5: {0x4: "END_HEADERS", 0x8: "PADDED"},
    0x6: {0x1: "ACK"},
    0x9: {0x4: "END_HEADERS"},
}


def h2_type_name(t: int) -> str:
    """The RFC 9113 Section 6 name of HTTP/2 frame type ``t``, or ``UNKNOWN(0x..)``."""
    return H2_FRAME_TYPES.get(t, f"UNKNOWN(0x{t:x})")


def h3_type_name(t: int) -> str:
    """The RFC 9114 name of HTTP/3 frame type ``t``; ``RESERVED(0x..)`` for 0x1f*N+0x21 (Section 7.2.8)."""
    if t in H3_FRAME_TYPES:
        return H3_FRAME_TYPES[t]
    if t >= 0x21 and (t - 0x21) % 0x1F == 0:
        return f"RESERVED(0x{t:x})"
    return f"UNKNOWN(0x{t:x})"


def h2_flag_names(t: int, flags: int) -> list[str]:
    """The names of the flags set in ``flags`` for HTTP/2 frame type ``t``; unknown bits in hex."""
    names = _H2_FLAGS.get(t, {})
    out = [names[bit] for bit in sorted(names) if flags & bit]
    rest = flags & ~sum(bit for bit in names)
    if rest:
        out.append(f"0x{rest:x}")
    return out


def _load_c() -> ModuleType | None:
    return load_extension("simulator.frames._scanner", "WORKBENCH_FRAMES_EXT")


_c = _load_c()
_FORCE_PYTHON = os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0")
_impl: ModuleType = _python if (_FORCE_PYTHON or _c is None) else _c

IMPLEMENTATION: str = _impl.IMPLEMENTATION
C_AVAILABLE: bool = _c is not None


def implementations() -> dict[str, ModuleType]:
    """Every available implementation by name (``"python"`` always, ``"c"`` if built)."""
    out = {"python": _python}
    if _c is not None:
        out["c"] = _c
    return out


def get_implementation(name: str | None = None) -> ModuleType:
    """The active implementation module, or the named one (``"c"``/``"python"``)."""
    if name is None:
        return _impl
    impls = implementations()
    if name not in impls:
        raise LookupError(f"frame scanner implementation {name!r} is not available")
    return impls[name]


H2Scanner = _impl.H2Scanner
H3Scanner = _impl.H3Scanner
VarintDecoder = _impl.VarintDecoder
decode_varint = _impl.decode_varint
encode_varint = _impl.encode_varint
decode_int = _impl.decode_int
encode_int = _impl.encode_int
huffman_decode = _impl.huffman_decode
huffman_encode = _impl.huffman_encode
huffman_encoded_length = _impl.huffman_encoded_length


def varint_len(value: int) -> int:
    """Bytes of the minimal QUIC variable-length integer encoding of ``value`` (RFC 9000 section 16)."""
    # The workbench's one varint size: the transport model counts every packet with it, so it
    # is a plain function (no range check, no bytes made) rather than len(encode_varint(v)).
    if value < 0x40:
        return 1
    if value < 0x4000:
        return 2
    if value < 0x40000000:
        return 4
    return 8


def h2_frame(frame_type: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    """One HTTP/2 frame: the 9-byte header (24-bit length, type, flags, 31-bit stream id;
    RFC 9113 section 4.1) and ``payload``."""
    return (
        len(payload).to_bytes(3, "big")
        + bytes((frame_type, flags))
        + (stream_id & 0x7FFFFFFF).to_bytes(4, "big")
        + payload
    )


def h3_frame(frame_type: int, payload: bytes) -> bytes:
    """One HTTP/3 frame: type and length varints, then ``payload`` (RFC 9114 section 7.1)."""
    return encode_varint(frame_type) + encode_varint(len(payload)) + payload


def integer_len(value: int, prefix_bits: int) -> int:
    """Bytes of ``value`` as an HPACK/QPACK integer with an N-bit prefix (RFC 7541
    section 5.1), as ``len(encode_int(value, prefix_bits))`` without making the bytes."""
    top = (1 << prefix_bits) - 1
    if value < top:
        return 1
    value -= top
    n = 2
    while value >= 128:
        value >>= 7
        n += 1
    return n


@dataclass
class H2Frames:
    """Result of ``parse_h2``: one entry per complete frame, in parallel arrays."""

    types: array  # 'B'
    flags: array  # 'B'
    stream_ids: array  # 'I' (31 bits)
    offsets: array  # 'Q' payload offset into the buffer
    lengths: array  # 'I' payload length
    end: int  # offset after the last complete frame (or of the offending frame)
    error: FrameError | None
    pending: int  # bytes of a trailing incomplete frame (0 on error)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, k: int) -> tuple[int, int, int, int, int]:
        return (self.types[k], self.flags[k], self.stream_ids[k], self.offsets[k], self.lengths[k])

    def __iter__(self):
        return zip(self.types, self.flags, self.stream_ids, self.offsets, self.lengths)


@dataclass
class H3Frames:
    """The frames of one HTTP/3 stream as parallel arrays (type, payload offset, payload length)."""

    types: array  # 'Q'
    offsets: array  # 'Q'
    lengths: array  # 'Q'
    end: int
    error: FrameError | None
    pending: int

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, k: int) -> tuple[int, int, int]:
        return (self.types[k], self.offsets[k], self.lengths[k])

    def __iter__(self):
        return zip(self.types, self.offsets, self.lengths)


def _u32() -> str:
    return "I" if array("I").itemsize == 4 else "L"


def parse_h2(
    data, *, max_frame_size: int = 16384, preface=None, validate: bool = True, impl: ModuleType | None = None
) -> H2Frames:
    """Parse a whole buffer into arrays (two passes: count, then fill: O(1) allocations).

    A malformed stream does not raise: ``.error`` holds the ``FrameError`` and the arrays
    hold the frames before it.
    """
    m = impl or _impl
    count, _, _, _ = m.scan_h2(data, None, max_frame_size, preface, validate)
    u32 = _u32()
    out = (
        array("B", bytes(count)),
        array("B", bytes(count)),
        array(u32, [0]) * count,
        array("Q", [0]) * count,
        array(u32, [0]) * count,
    )
    n, end, err, pending = m.scan_h2(data, out, max_frame_size, preface, validate)
    assert n == count
    return H2Frames(*out, end=end, error=err, pending=pending)


def parse_h3(
    data,
    *,
    max_frame_size: int | None = None,
    kind: str | None = None,
    validate: bool = True,
    impl: ModuleType | None = None,
) -> H3Frames:
    """Parse one HTTP/3 stream's bytes into arrays; see ``parse_h2``."""
    m = impl or _impl
    count, _, _, _ = m.scan_h3(data, None, max_frame_size, kind, validate)
    out = (array("Q", [0]) * count, array("Q", [0]) * count, array("Q", [0]) * count)
    n, end, err, pending = m.scan_h3(data, out, max_frame_size, kind, validate)
    assert n == count
    return H3Frames(*out, end=end, error=err, pending=pending)
