"""Bytes on the wire of an HTTP message, per version, from the real codecs.

One ``Framer`` per direction of one connection (its header-compression context is
that direction's, as on a real connection), one ``Unframer`` at the receiving end.

- HTTP/1.1 (RFC 9112): request line or status line, field lines and the empty line
  (sections 3, 4, 5); a body with Content-Length, or the chunked transfer coding
  (section 7.1: ``chunk = chunk-size CRLF chunk-data CRLF``, ``last-chunk = "0" CRLF``,
  then the trailer section ``*( field-line CRLF )`` and a final CRLF, section 7.1.2).
  Written by hand here, byte for byte (a test checks it against ``h11``'s writer).
- HTTP/2 (RFC 9113): each header or trailer section HPACK-encoded by ``hpack.Encoder``
  (the encoder ``h2`` itself uses) in one HEADERS frame, CONTINUATION frames past the
  16,384-byte default SETTINGS_MAX_FRAME_SIZE, 9-byte frame headers (section 4.1);
  DATA frames of at most 16,384 bytes; a trailer section is the final HEADERS frame,
  with END_STREAM (section 8.1).  A body that ends after its last DATA frame was sent
  ends with an empty DATA frame carrying END_STREAM (9 bytes).
- HTTP/3 (RFC 9114): each section QPACK-encoded by ``pylsqpack.Encoder`` (the encoder
  aioquic uses), after ``apply_settings`` with the peer decoder's table capacity and
  blocked-streams limit (RFC 9204 section 5); a HEADERS frame is a type varint, a
  length varint and the field section (section 7.1, 7.2.2), the trailer section a
  second HEADERS frame (section 4.1); encoder instructions go on the encoder stream
  (RFC 9204 section 4.2); one DATA frame per write, as aioquic writes them; the end
  of a message is the stream's FIN (no bytes).
- In-body metadata, the gRPC-Web way (grpc/grpc ``doc/PROTOCOL-WEB.md``): the body is
  a sequence of length-prefixed messages (1 flag byte + 4-byte big-endian length,
  gRPC ``PROTOCOL-HTTP2.md``), the metadata a last message with flag 0x80 whose
  payload is an HTTP/1-style header block of lower-case ``name: value\\r\\n`` lines
  without the terminating empty line (``grpc_web_trailer_frame``).

The ``Unframer`` decodes what arrives with the matching real decoder
(``hpack.Decoder``, ``pylsqpack.Decoder``) and checks it against what was sent, so a
size can never come from a section that would not decode.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass
from http import HTTPStatus

import hpack
import pylsqpack

from ..frames import varint_len
from ..frames.h2buffer import install_huffman

# hpack's Huffman coder takes the C one when the extension is built: the same bytes
# (tests/test_frames*), and linear in the string where hpack's encoder is quadratic.
install_huffman()

__all__ = [
    "VERSIONS",
    "Section",
    "Framer",
    "Unframer",
    "grpc_web_trailer_frame",
    "GRPC_WEB_PREFIX_BYTES",
    "H2_FRAME_HEADER_BYTES",
    "H2_MAX_FRAME_BYTES",
    "H3_FRAME_HEADER_BYTES",
    "h1_field_lines",
    "h2_frame_bytes",
    "h2_data_overhead",
    "sized_body_bytes",
    "sized_section_frame_bytes",
]

VERSIONS = ("h1", "h2", "h3")
H2_FRAME_HEADER_BYTES = 9  # RFC 9113 section 4.1
H2_MAX_FRAME_BYTES = 16384  # SETTINGS_MAX_FRAME_SIZE initial value (RFC 9113 section 6.5.2)
# An HTTP/3 frame header is a type and a length varint (RFC 9114 section 7.1): 3 bytes for a
# HEADERS or DATA frame of 64-16383 bytes; the models that size messages without framing
# them use this figure, ``Framer`` the exact one.
H3_FRAME_HEADER_BYTES = 3
GRPC_WEB_PREFIX_BYTES = 5  # flag byte + 4-byte length
_H3_HEADERS, _H3_DATA = 0x1, 0x0  # RFC 9114 section 7.2
HeaderList = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True)
class Section:
    """A header or trailer section as sent: ``wire_bytes`` on the message's own stream
    (frame headers included), ``block`` what the receiver's decoder reads (HPACK / QPACK
    field section, or the HTTP/1.1 text), ``encoder`` the QPACK encoder-stream bytes it
    caused (HTTP/3 only)."""

    wire_bytes: int
    block: bytes
    encoder: bytes = b""


def h2_frame_bytes(payload_bytes: int) -> int:
    """An HTTP/2 frame of ``payload_bytes`` on the wire: the 9-byte frame header and its
    payload (RFC 9113 section 4.1), for a model that sizes a frame it does not write (an
    extension frame of a draft)."""
    return H2_FRAME_HEADER_BYTES + payload_bytes


def h2_data_overhead(nbytes: int) -> int:
    """Frame-header bytes of a body write of ``nbytes`` as HTTP/2 DATA frames of at most
    16,384 bytes (RFC 9113 sections 4.1, 6.1; an empty write is one empty frame)."""
    return H2_FRAME_HEADER_BYTES * max(1, -(-nbytes // H2_MAX_FRAME_BYTES))


def sized_section_frame_bytes(version: str) -> int:
    """The frame header that carries a header section, for a model that sizes messages
    without framing them: none in HTTP/1.1, 9 bytes in HTTP/2, ``H3_FRAME_HEADER_BYTES`` in HTTP/3."""
    return 0 if version == "h1" else H2_FRAME_HEADER_BYTES if version == "h2" else H3_FRAME_HEADER_BYTES


def sized_body_bytes(version: str, nbytes: int) -> int:
    """A body of ``nbytes`` on the wire, for a model that sizes messages without framing
    them (``http.network``): HTTP/1.1 as is (Content-Length), HTTP/2 a DATA frame header
    per 16 KiB, HTTP/3 one DATA frame per write as aioquic writes it, its header taken as
    ``H3_FRAME_HEADER_BYTES`` (``Framer`` counts the exact varints)."""
    if not nbytes or version == "h1":
        return nbytes
    if version == "h2":
        return nbytes + h2_data_overhead(nbytes)
    return nbytes + H3_FRAME_HEADER_BYTES


def h1_field_lines(fields) -> bytes:
    """``name: value CRLF`` per field (RFC 9112 section 5)."""
    return b"".join(n + b": " + v + b"\r\n" for n, v in fields)


@functools.lru_cache(maxsize=1024)
def _h1_status_line(status: int) -> bytes:
    """``HTTP/1.1 <code> <reason> CRLF`` (RFC 9112 section 4), the reason phrase RFC 9110's, if any."""
    try:
        reason = HTTPStatus(status).phrase.encode()
    except ValueError:
        reason = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, reason)


def grpc_web_trailer_frame(fields) -> bytes:
    """The gRPC-Web trailer message: flag 0x80, 4-byte length, ``name: value\\r\\n`` lines
    with lower-case names and no final empty line (grpc/grpc doc/PROTOCOL-WEB.md)."""
    payload = h1_field_lines((n.lower(), v) for n, v in fields)
    return struct.pack(">BI", 0x80, len(payload)) + payload


class Framer:
    """The sending side of one direction of one connection in ``version``."""

    def __init__(self, version: str, *, qpack_table_bytes: int = 4096, qpack_blocked_streams: int = 16) -> None:
        if version not in VERSIONS:
            raise ValueError(f"unknown HTTP version {version!r}")
        self.version = version
        self.setup = b""  # HTTP/3: the encoder stream's Set Dynamic Table Capacity
        if version == "h2":
            self._hpack = hpack.Encoder()
        elif version == "h3":
            self._qpack = pylsqpack.Encoder()
            self.setup = self._qpack.apply_settings(
                max_table_capacity=qpack_table_bytes, blocked_streams=qpack_blocked_streams
            )

    # -- sections ----------------------------------------------------------------------
    def head(self, stream_id: int, headers: HeaderList, *, chunked: bool = False) -> Section:
        """A request or response header section (``:status`` or ``:method`` first)."""
        if self.version == "h1":
            return self._h1_section(self._h1_head(headers, chunked))
        return self._compressed(stream_id, headers)

    def trailers(self, stream_id: int, fields: HeaderList) -> Section:
        """A trailer section; it ends the message (RFC 9112 7.1.2, RFC 9113 8.1, RFC 9114 4.1)."""
        if self.version == "h1":
            return self._h1_section(b"0\r\n" + h1_field_lines(fields) + b"\r\n")
        return self._compressed(stream_id, fields)

    def _compressed(self, stream_id: int, fields: HeaderList) -> Section:
        if self.version == "h2":
            block = self._hpack.encode(list(fields))
            frames = max(1, math.ceil(len(block) / H2_MAX_FRAME_BYTES))  # HEADERS + CONTINUATIONs
            return Section(len(block) + frames * H2_FRAME_HEADER_BYTES, block)
        encoder, block = self._qpack.encode(stream_id, list(fields))
        return Section(varint_len(_H3_HEADERS) + varint_len(len(block)) + len(block), block, encoder)

    @staticmethod
    def _h1_section(text: bytes) -> Section:
        return Section(len(text), text)

    @staticmethod
    def _h1_head(headers: HeaderList, chunked: bool) -> bytes:
        pseudo = {n: v for n, v in headers if n.startswith(b":")}
        fields = [(n, v) for n, v in headers if not n.startswith(b":")]
        if b":status" in pseudo:
            line = _h1_status_line(int(pseudo[b":status"]))
        else:
            # RFC 9112 section 3.2: origin-form target, Host from :authority (RFC 9113 8.3.1)
            line = pseudo.get(b":method", b"GET") + b" " + pseudo.get(b":path", b"/") + b" HTTP/1.1\r\n"
            fields.insert(0, (b"host", pseudo.get(b":authority", b"")))
            if any(n == b"te" for n, _ in fields):
                # RFC 9110 10.1.4 / RFC 9112 7.4: TE is hop-by-hop, named in Connection
                fields.append((b"connection", b"te"))
        if chunked:
            fields.append((b"transfer-encoding", b"chunked"))
        return line + h1_field_lines(fields) + b"\r\n"

    def feed_decoder(self, data: bytes) -> None:
        """HTTP/3: the peer decoder's instructions (Section Acknowledgment, Insert Count
        Increment, RFC 9204 section 4.4) reached this encoder."""
        self._qpack.feed_decoder(data)

    # -- body --------------------------------------------------------------------------
    def data_overhead(self, nbytes: int, *, chunked: bool = False) -> tuple[int, int]:
        """Framing bytes ``(before, after)`` the payload of one body write of ``nbytes``."""
        if self.version == "h1":
            return (len(b"%x\r\n" % nbytes), 2) if chunked and nbytes else (0, 0)
        if self.version == "h2":
            return h2_data_overhead(nbytes), 0
        return varint_len(_H3_DATA) + varint_len(nbytes), 0

    def end_bytes(self, *, chunked: bool = False) -> int:
        """Bytes that end a body when nothing else is left to send (no trailers)."""
        if self.version == "h1":
            return 5 if chunked else 0  # last-chunk "0" CRLF + final CRLF
        if self.version == "h2":
            return H2_FRAME_HEADER_BYTES  # an empty DATA frame with END_STREAM
        return 0  # HTTP/3: the stream's FIN


class Unframer:
    """The receiving side: decodes sections with the real decoders and checks them."""

    def __init__(self, version: str, *, qpack_table_bytes: int = 4096, qpack_blocked_streams: int = 16) -> None:
        self.version = version
        if version == "h2":
            self._hpack = hpack.Decoder()
        elif version == "h3":
            self._qpack = pylsqpack.Decoder(qpack_table_bytes, qpack_blocked_streams)

    def decode(self, stream_id: int, section: Section, expected: HeaderList) -> tuple[bool, bytes]:
        """Decode ``section``; returns ``(decoded, decoder_stream_bytes)``.  ``decoded`` is
        False when a QPACK section is blocked on encoder-stream inserts (RFC 9204
        section 2.1.2): ``feed_encoder`` later reports it unblocked."""
        if self.version == "h1":
            return True, b""
        if self.version == "h2":
            headers = self._hpack.decode(section.block, raw=True)
            self._check(stream_id, headers, expected)
            return True, b""
        try:
            control, headers = self._qpack.feed_header(stream_id, section.block)
        except pylsqpack.StreamBlocked:
            return False, b""
        self._check(stream_id, headers, expected)
        return True, control

    def feed_encoder(self, data: bytes) -> list[int]:
        """Encoder-stream bytes arrived: the streams they unblock."""
        return list(self._qpack.feed_encoder(data))

    def resume(self, stream_id: int, expected: HeaderList) -> bytes:
        """Decode and check the field section the encoder stream unblocked on ``stream_id``; decoder-stream bytes."""
        control, headers = self._qpack.resume_header(stream_id)
        self._check(stream_id, headers, expected)
        return control

    @staticmethod
    def _check(stream_id: int, got, expected: HeaderList) -> None:
        # Equal lists of 2-tuples are the common case and compare in C; a difference is
        # looked at again with every name and value as bytes.
        if list(map(tuple, got)) == list(map(tuple, expected)):
            return
        got = [(bytes(n), bytes(v)) for n, v in got]
        if got != [(bytes(n), bytes(v)) for n, v in expected]:
            raise RuntimeError(f"stream {stream_id}: a section decoded to {got!r}, expected {list(expected)!r}")
