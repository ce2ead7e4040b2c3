"""The ORIGIN frame (RFC 8336): its payload written and read, and a check that the
installed ``h2`` and ``hyperframe`` carry one between a real server and client.

Written by hand: ``h2`` 4.4.1 has no API to send an ORIGIN frame and ``hyperframe`` 6.1.0
no ORIGIN frame class, but a server can write a hyperframe ``ExtensionFrame(type=0xc,
stream_id=0)`` itself (setting its ``body_len``, which the constructor leaves at 0), and
the ``h2`` client passes it up as ``UnknownFrameReceived`` with the payload intact
(``origin_frame_roundtrip``, checked by the tests).
"""

from __future__ import annotations

import struct

__all__ = [
    "ORIGIN_FRAME_TYPE",
    "origin_frame_payload",
    "origin_frame_bytes",
    "parse_origin_frame",
    "origin_frame_roundtrip",
]

ORIGIN_FRAME_TYPE = 0xC  # RFC 8336 section 3


def origin_frame_payload(origins: list[str]) -> bytes:
    """RFC 8336 section 2.1: Origin-Len (16 bits) + ASCII-Origin, repeated."""
    out = bytearray()
    for o in origins:
        b = o.encode("ascii")
        out += struct.pack("!H", len(b)) + b
    return bytes(out)


def origin_frame_bytes(origins: list[str]) -> int:
    """The whole frame's size: its 9-byte header and the payload."""
    return 9 + len(origin_frame_payload(origins))


def parse_origin_frame(payload: bytes) -> list[str]:
    """The origins of an ORIGIN frame's payload (RFC 8336 section 2.1); an entry that is not
    an ASCII origin is skipped (section 2.2), a truncated entry ends the list."""
    out, i = [], 0
    while i + 2 <= len(payload):
        (n,) = struct.unpack_from("!H", payload, i)
        i += 2
        if i + n > len(payload):
            break
        raw = payload[i : i + n]
        i += n
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            continue
        if "://" in text and "/" not in text.split("://", 1)[1]:
            out.append(text.lower())
    return out


def origin_frame_roundtrip(origins: list[str]) -> tuple[bytes, list[str]]:
    """An ORIGIN frame written by a real ``h2`` server connection (as a hyperframe
    ``ExtensionFrame``: h2 has no ORIGIN API) and read by a real ``h2`` client connection,
    which passes it up as ``UnknownFrameReceived``: (the frame's bytes, the origins the
    client read)."""
    import h2.config
    import h2.connection
    import h2.events
    from hyperframe.frame import ExtensionFrame

    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    payload = origin_frame_payload(origins)
    frame = ExtensionFrame(type=ORIGIN_FRAME_TYPE, stream_id=0, body=payload)
    frame.body_len = len(payload)  # hyperframe sets it only when parsing
    wire = frame.serialize()
    read: list[str] = []
    for event in client.receive_data(server.data_to_send() + wire):
        if (
            isinstance(event, h2.events.UnknownFrameReceived)
            and event.frame.type == ORIGIN_FRAME_TYPE
            and event.frame.stream_id == 0
        ):
            read += parse_origin_frame(event.frame.body)
    return wire, read
