"""Exception types shared by the C extension and its pure-Python twin.

Both implementations raise these very classes, so ``except FrameError`` works whichever
one is active.  A ``FrameError`` is a connection error in the RFC's sense: it carries the
protocol (``"h2"`` or ``"h3"``), the RFC error code, the absolute byte offset of the
offending frame (or preface byte) in the stream, and a one-phrase reason.
"""

from __future__ import annotations

__all__ = ["FrameError", "HuffmanError", "IntegerError", "H2_ERROR_CODES", "H3_ERROR_CODES", "error_code_name"]

# RFC 9113 section 7.
H2_ERROR_CODES = {
    0x0: "NO_ERROR",
    0x1: "PROTOCOL_ERROR",
    0x2: "INTERNAL_ERROR",
    0x3: "FLOW_CONTROL_ERROR",
    0x4: "SETTINGS_TIMEOUT",
    0x5: "STREAM_CLOSED",
    0x6: "FRAME_SIZE_ERROR",
    0x7: "REFUSED_STREAM",
    0x8: "CANCEL",
    0x9: "COMPRESSION_ERROR",
    0xA: "CONNECT_ERROR",
    0xB: "ENHANCE_YOUR_CALM",
    0xC: "INADEQUATE_SECURITY",
    0xD: "HTTP_1_1_REQUIRED",
}

# RFC 9114 section 8.1.
H3_ERROR_CODES = {
    0x100: "H3_NO_ERROR",
    0x101: "H3_GENERAL_PROTOCOL_ERROR",
    0x102: "H3_INTERNAL_ERROR",
    0x103: "H3_STREAM_CREATION_ERROR",
    0x104: "H3_CLOSED_CRITICAL_STREAM",
    0x105: "H3_FRAME_UNEXPECTED",
    0x106: "H3_FRAME_ERROR",
    0x107: "H3_EXCESSIVE_LOAD",
    0x108: "H3_ID_ERROR",
    0x109: "H3_SETTINGS_ERROR",
    0x10A: "H3_MISSING_SETTINGS",
    0x10B: "H3_REQUEST_REJECTED",
    0x10C: "H3_REQUEST_CANCELLED",
    0x10D: "H3_REQUEST_INCOMPLETE",
    0x10E: "H3_MESSAGE_ERROR",
    0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK",
}


def error_code_name(protocol: str, code: int) -> str:
    """The name of an HTTP/2 (RFC 9113 Section 7) or HTTP/3 (RFC 9114 8.1) error code, or its hex."""
    table = H2_ERROR_CODES if protocol == "h2" else H3_ERROR_CODES
    return table.get(code, f"0x{code:x}")


class FrameError(ValueError):
    """A malformed frame stream: ``code`` is the RFC connection error code.

    ``count`` is how many frames the failing ``feed`` completed before the error (they
    are still in the scanner's results).
    """

    def __init__(self, protocol: str, code: int, offset: int, reason: str, count: int = 0) -> None:
        self.protocol = protocol
        self.code = code
        self.code_name = error_code_name(protocol, code)
        self.offset = offset
        self.reason = reason
        self.count = count
        super().__init__(f"{reason} at byte offset {offset} ({self.code_name}, 0x{code:x})")

    def __reduce__(self):
        return (type(self), (self.protocol, self.code, self.offset, self.reason, self.count))

    def key(self) -> tuple:
        """What two implementations must agree on."""
        return (self.protocol, self.code, self.offset, self.reason)


class HuffmanError(ValueError):
    """Invalid HPACK/QPACK Huffman string (RFC 7541 section 5.2).

    ``kind`` is ``"invalid"`` (the EOS symbol was decoded) or ``"incomplete"`` (padding
    longer than 7 bits or not the most significant bits of EOS); the messages are the
    ones the ``hpack`` package uses for the same two cases.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        super().__init__("Invalid Huffman string" if kind == "invalid" else "Incomplete Huffman string")


class IntegerError(ValueError):
    """A prefixed integer (RFC 7541 section 5.1) or QUIC varint out of the supported range."""
