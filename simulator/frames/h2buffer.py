"""h2's incoming frame buffer, driven by the frame scanner.

``h2.connection.H2Connection.incoming_buffer`` is an iterator of hyperframe ``Frame``
objects fed by ``add_data``.  ``ScannerFrameBuffer`` is a drop-in replacement whose
frames come from ``H2Scanner.next_frame`` (C when available): frame boundaries are found
once, as a frame's last byte arrives, instead of re-reading the buffered bytes, consumed
bytes are dropped in one move per ``add_data``, and DATA frames -- the bulk of a
download -- and HEADERS frames that end their header block -- one per response of a
page load -- are built by the scanner itself as hyperframe-compatible objects
(``h2frames``: ``hyperframe.frame.DataFrame`` and ``HeadersFrame`` subclasses with
hyperframe's attributes and a ``repr`` that does not hex-encode the whole payload, which
h2 asks for on every frame).  Every other frame, and every one hyperframe would reject, is built by hyperframe
exactly as h2's ``FrameBuffer`` builds it, and every check and exception of h2's buffer
is kept in the same order, so a connection behaves identically with either buffer: the
scanner runs with ``validate=False`` here, because it is h2 (not the scanner) that must
decide which frames are errors and how they are reported.  h2's own test suite passes
with the buffer installed on every connection (``tests/test_h2_suite.py``).

Bounded and fail-fast: ``add_data`` only appends the bytes; the scanner is fed lazily,
``SCAN_SLICE_BYTES`` at a time, when h2 asks for the next frame and none is queued.  So
a read is never scanned (and its frames never queued) beyond the frame h2 rejects, and
the frames waiting at once are at most one slice's worth: a flood of empty 9-byte
frames in a 16 MiB read queues at most ``SCAN_SLICE_BYTES / 9`` of them, not 1.86
million, and h2 raises on the bad one as early as its own buffer does.

    conn = h2.connection.H2Connection(config)
    install(conn)                       # before the first receive_data()

``install`` also routes hpack's Huffman decoding through the C decoder (see
``install_huffman``).
"""

from __future__ import annotations

from h2.exceptions import FrameDataMissingError, ProtocolError
from h2.frame_buffer import FrameBuffer
from hyperframe.exceptions import InvalidDataError, InvalidFrameError
from hyperframe.frame import FRAMES, Frame

from . import IMPLEMENTATION, HuffmanError, get_implementation, huffman_decode, huffman_encode
from .h2frames import frame_classes

__all__ = ["ScannerFrameBuffer", "install", "install_huffman", "uninstall_huffman", "SCAN_SLICE_BYTES"]

_NO_LIMIT = (1 << 24) - 1
SCAN_SLICE_BYTES = 8192  # bytes scanned per step: bounds the frames queued at once

# hyperframe's parse_frame_header raises only in Frame.__init__, for a frame on the wrong
# kind of stream (RFC 9113 section 6: DATA..CONTINUATION need a stream, SETTINGS, PING and
# GOAWAY stream 0).  The header of an incomplete frame is parsed (as h2 does) only then.
_NEEDS_STREAM = frozenset(t for t, cls in FRAMES.items() if cls.stream_association == "has-stream")
_NEEDS_NO_STREAM = frozenset(t for t, cls in FRAMES.items() if cls.stream_association == "no-stream")


class ScannerFrameBuffer(FrameBuffer):
    """A ``h2.frame_buffer.FrameBuffer`` whose frames come from ``H2Scanner.next_frame``.

    Inherits h2's header-block (CONTINUATION) assembly and frame-length check, so the
    frames and exceptions it yields are h2's own.
    """

    def __init__(self, server: bool = False, *, impl=None) -> None:
        super().__init__(server=server)
        impl = get_implementation() if impl is None else impl
        self._scanner = impl.H2Scanner(_NO_LIMIT, preface=False, validate=False)
        self._next = self._scanner.next_frame
        self._base = 0  # absolute stream offset of self._data[0]

    def add_data(self, data) -> None:
        """Append received bytes (checking the client preface first, as h2 does); frames are scanned lazily."""
        view = memoryview(data)
        if self._preamble_len:
            # The same check as h2's buffer: each chunk's leading bytes must continue the
            # client preface; nothing is consumed when they do not.
            take = min(self._preamble_len, len(view))
            if self._preamble[:take] != view[:take]:
                msg = "Invalid HTTP/2 preamble."
                raise ProtocolError(msg)
            view = view[take:]
            self._preamble_len -= take
            self._preamble = self._preamble[take:]
        if not view:
            return
        consumed = self._scanner.consumed
        drop = consumed - self._base
        if drop:
            del self._data[:drop]
            self._base = consumed
        self._data += view  # scanned lazily, by __next__

    def _frame_at(self, payload_offset: int, length: int):
        start = payload_offset - 9 - self._base
        header = self._data[start : start + 9]
        try:
            frame, length = Frame.parse_frame_header(memoryview(header))
        except (InvalidDataError, InvalidFrameError) as err:  # pragma: no cover - as h2
            msg = f"Received frame with invalid header: {err!s}"
            raise ProtocolError(msg) from err
        return frame, length

    def _parse(self, record):
        """A frame next_frame left to hyperframe, built and checked exactly as h2's buffer does."""
        ftype, flags, sid, off, length = record
        frame, length = self._frame_at(off, length)
        self._validate_frame_length(length)
        start = off - self._base
        body = self._data[start : start + length]
        try:
            frame.parse_body(memoryview(body))
        except InvalidDataError as err:
            msg = "Received frame with non-compliant data"
            raise ProtocolError(msg) from err
        except InvalidFrameError as err:
            msg = "Frame data missing or invalid"
            raise FrameDataMissingError(msg) from err
        self._scanner.consume()
        return frame

    def __next__(self):
        while True:
            frame = self._next(self._data, self._base, self.max_frame_size, SCAN_SLICE_BYTES)
            if frame is None:
                # h2 parses the header of an incomplete frame as soon as 9 bytes are
                # there (and may raise on it); do the same.
                current = self._scanner.current
                if current is not None and (
                    current[0] in _NEEDS_STREAM if current[2] == 0 else current[0] in _NEEDS_NO_STREAM
                ):
                    self._frame_at(current[3], current[4])
                raise StopIteration
            if type(frame) is tuple:
                frame = self._parse(frame)
            elif not self._headers_buffer:
                # A DATA frame or a HEADERS frame with END_HEADERS built by the scanner
                # (h2frames): h2's header-block assembly would hand it on unchanged.
                return frame
            frame = self._update_header_buffer(frame)
            if frame is not None:
                return frame


_original_decode_huffman = None
_original_encode_huffman = None
_REQUEST_CODES = None


def _hpack_encode_huffman(self, bytes_to_encode) -> bytes:
    """hpack's ``HuffmanEncoder.encode`` on top of the C encoder, for hpack's own code table
    (RFC 7541 Appendix B): the same bytes, in time linear in the string.  hpack's encoder
    builds one integer of every bit and shifts it per byte, quadratic in the string: a
    60 KB header value took 6 s, a 1 MB one minutes."""
    if not bytes_to_encode:
        return b""
    if self.huffman_code_list is not _REQUEST_CODES:
        return _original_encode_huffman(self, bytes_to_encode)
    return huffman_encode(bytes(bytes_to_encode))


def _hpack_decode_huffman(huffman_string):
    """hpack's ``decode_huffman`` contract on top of the C decoder.

    Same results and the same exceptions (``HPACKDecodingError`` with hpack's two
    messages) for every input: the tests compare the two exhaustively up to 2 bytes
    and on random and encoded strings beyond.
    """
    if not huffman_string:
        return b""
    try:
        return huffman_decode(huffman_string)
    except HuffmanError as exc:
        from hpack.exceptions import HPACKDecodingError

        raise HPACKDecodingError(str(exc)) from None


def install_huffman() -> bool:
    """Make hpack's decoder (used by h2 and by ``hpack.Decoder`` users) take the C Huffman
    decoder, and its encoder the C Huffman encoder.  Only when the C extension is active:
    the pure-Python twin is no faster than hpack's own on short strings.  Idempotent;
    returns whether the C coder is now in use."""
    global _original_decode_huffman, _original_encode_huffman, _REQUEST_CODES
    if IMPLEMENTATION != "c":
        return False
    import hpack.hpack
    import hpack.huffman
    import hpack.huffman_constants
    import hpack.huffman_table

    if _original_decode_huffman is None:
        _original_decode_huffman = hpack.hpack.decode_huffman
        hpack.hpack.decode_huffman = _hpack_decode_huffman
        hpack.huffman_table.decode_huffman = _hpack_decode_huffman
    if _original_encode_huffman is None:  # and the encoder (see _hpack_encode_huffman)
        _REQUEST_CODES = hpack.huffman_constants.REQUEST_CODES
        _original_encode_huffman = hpack.huffman.HuffmanEncoder.encode
        hpack.huffman.HuffmanEncoder.encode = _hpack_encode_huffman
    return True


def uninstall_huffman() -> None:
    """Give hpack back its own Huffman decoder and encoder (undoes ``install_huffman``)."""
    global _original_decode_huffman, _original_encode_huffman
    if _original_decode_huffman is not None:
        import hpack.hpack
        import hpack.huffman_table

        hpack.hpack.decode_huffman = _original_decode_huffman
        hpack.huffman_table.decode_huffman = _original_decode_huffman
        _original_decode_huffman = None
    if _original_encode_huffman is not None:
        import hpack.huffman

        hpack.huffman.HuffmanEncoder.encode = _original_encode_huffman
        _original_encode_huffman = None


def install(conn, *, huffman: bool = True, impl=None):
    """Give an ``h2.connection.H2Connection`` the scanner-driven buffer (call it before
    the connection receives data).  Returns the connection.  ``impl``: an implementation
    module from ``simulator.frames.implementations()`` (default: the active one)."""
    if getattr(conn, "_workbench_scanner", False):
        return conn
    old = conn.incoming_buffer
    if old._data or (not conn.config.client_side and old._preamble_len != 24):
        raise RuntimeError("install() must be called before the connection receives data")
    buffer = ScannerFrameBuffer(server=not conn.config.client_side, impl=impl)
    buffer.max_frame_size = old.max_frame_size
    # h2 dispatches on frame.__class__: the scanner's frame classes go to h2's own
    # handlers for the hyperframe classes they subclass.
    table = conn._frame_dispatch_table
    for built, hyperframe_cls in frame_classes(get_implementation() if impl is None else impl).items():
        table[built] = table[hyperframe_cls]
    conn.incoming_buffer = buffer
    conn._workbench_scanner = True
    if huffman:
        install_huffman()
    return conn
