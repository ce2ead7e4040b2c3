"""Wire primitives shared by the codecs, with the errors the codecs expect.

* Prefixed integers (RFC 7541 Section 5.1, reused unchanged by RFC 9204 Section 4.1.1):
  the frame scanner's (``frames.encode_int`` / ``decode_int``, C when built).
* String literals with optional Huffman coding (RFC 7541 Section 5.2; the Huffman
  code itself, RFC 7541 Appendix B, is taken from the ``hpack`` package to encode, from
  ``frames.huffman_decode`` to decode).
* QUIC variable-length integers (RFC 9000 Section 16), used by QCRAM's frames: the frame
  scanner's too (``frames.encode_varint`` / ``decode_varint`` / ``varint_len``).

Decoders raise ``Truncated`` when the input ends inside an item (the caller may wait
for more bytes) and ``WireError`` when the bytes can never be valid.
"""

from __future__ import annotations

from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

from ..frames import IntegerError
from ..frames import decode_int as _decode_int
from ..frames import decode_varint as _decode_varint
from ..frames import encode_int
from ..frames import encode_varint, varint_len  # noqa: F401  (RFC 9000 section 16, re-exported for the codecs)
from ..frames import huffman_decode as decode_huffman  # C when built (RFC 7541 appendix B)

__all__ = [
    "WireError",
    "Truncated",
    "encode_integer",
    "decode_integer",
    "encode_string",
    "decode_string",
    "encode_varint",
    "decode_varint",
    "varint_len",
]

_HUFFMAN = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)


class WireError(ValueError):
    """Bytes that can never decode (bad prefix, bad Huffman, oversized integer)."""


class Truncated(WireError):
    """The input ended inside an item; more bytes may complete it."""


# RFC 7541 5.1: ``encode_integer(value, prefix_bits, first_byte_flags=0)``, the value in an
# N-bit prefix, the high bits of the first byte being ``first_byte_flags`` (already shifted
# into place).  Values up to 2**62-1 (RFC 9204 Section 4.1.1 lets an implementation bound them).
encode_integer = encode_int


def decode_integer(data: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
    """RFC 7541 5.1: the integer whose prefix is in ``data[pos]``; returns (value, next_pos)."""
    if pos >= len(data):
        raise Truncated("input ends before an integer")
    try:
        decoded = _decode_int(data, pos, prefix_bits)
    except IntegerError:  # more than 9 continuation bytes, or above 2**62-1
        raise WireError("integer too long") from None
    if decoded is None:
        raise Truncated("input ends inside an integer")
    return decoded


def encode_string(value: bytes, prefix_bits: int = 7, first_byte_flags: int = 0, huffman: bool = True) -> bytes:
    """RFC 7541 5.2: H bit just above the length prefix; Huffman only when shorter."""
    coded = _HUFFMAN.encode(value) if huffman and value else b""
    if huffman and value and len(coded) < len(value):
        return encode_integer(len(coded), prefix_bits, first_byte_flags | (1 << prefix_bits)) + coded
    return encode_integer(len(value), prefix_bits, first_byte_flags) + value


def decode_string(data: bytes, pos: int, prefix_bits: int = 7) -> tuple[bytes, int]:
    """RFC 7541 5.2: returns (the decoded string, next_pos)."""
    if pos >= len(data):
        raise Truncated("input ends before a string")
    is_huffman = bool(data[pos] & (1 << prefix_bits))
    length, pos = decode_integer(data, pos, prefix_bits)
    end = pos + length
    if end > len(data):
        raise Truncated("input ends inside a string")
    raw = bytes(data[pos:end])
    if is_huffman:
        try:
            raw = bytes(decode_huffman(raw))
        except Exception as exc:  # hpack raises its own HPACKDecodingError
            raise WireError(f"bad Huffman string: {exc}") from None
    return raw, end


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """RFC 9000 16: returns (value, next_pos); the frame scanner's decoder (C when built)."""
    decoded = _decode_varint(data, pos)
    if decoded is None:
        raise Truncated("input ends inside a varint" if pos < len(data) else "input ends before a varint")
    return decoded
