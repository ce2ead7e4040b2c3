"""QPACK "offline interop" files (format ``"qpack-interop"``).

The file is a sequence of records, to end of file: a u64 stream id and a u32 length
(both big-endian), then ``length`` bytes.  Stream id 0 carries encoder-stream bytes
(RFC 9204 4.2); any other id carries one encoded field section for that stream
(RFC 9204 4.5).  File names follow ``<qif>.out.<table capacity>.<blocked streams>.<ack mode>``.

``read_records`` / ``write_records`` handle the framing.  ``load_interop`` decodes a
file with pylsqpack's RFC 9204 decoder, configured with the table capacity and the
blocked-streams limit (from the file name unless given), and returns a ``Trace`` with
one exchange per field section, in the order the sections appear in the file.
A section that references entries not yet received is blocked (RFC 9204 2.1.2) and
completed when the encoder stream delivers them.
"""

from __future__ import annotations

import os
import re
import struct

import pylsqpack

from ..errors import InputError
from ._io import atomic_write, read_input
from .limits import MAX_ENTRIES, check_field_section
from .model import Exchange, Trace
from .qif import _origin

__all__ = [
    "read_records",
    "parse_records",
    "write_records",
    "looks_like_records",
    "interop_settings",
    "resolve_settings",
    "load_interop",
    "ENCODER_STREAM",
]

ENCODER_STREAM = 0
_HEADER = struct.Struct(">QI")
_NAME = re.compile(r"\.out\.(\d+)\.(\d+)\.(\d+)$")


def parse_records(data: bytes, path: str | None = None) -> list[tuple[int, bytes]]:
    """Split interop bytes into ``(stream_id, payload)`` records."""
    if not data:
        raise InputError("the file is empty.", path=path)
    records, offset = [], 0
    while offset < len(data):
        if len(data) - offset < _HEADER.size:
            raise InputError(
                f"truncated record header: {len(data) - offset} bytes left, a header needs {_HEADER.size}.",
                path=path,
                where=f"byte offset {offset}",
            )
        stream_id, length = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        if start + length > len(data):
            raise InputError(
                f"truncated record for stream {stream_id}: it declares {length} bytes, "
                f"only {len(data) - start} remain.",
                path=path,
                where=f"byte offset {offset}",
            )
        records.append((stream_id, data[start : start + length]))
        offset = start + length
        if len(records) > 2 * MAX_ENTRIES:  # a field section and an encoder-stream chunk each
            raise InputError(
                f"more than {2 * MAX_ENTRIES} records, above the limit (simulator.traces.limits).",
                path=path,
                where=f"byte offset {offset}",
            )
    return records


def read_records(path: str) -> list[tuple[int, bytes]]:
    """The ``(stream_id, bytes)`` records of an interop file, in file order."""
    data = read_input(str(path))
    if data and not looks_like_records(data):
        raise InputError(
            "not QPACK offline-interop records: the first record's stream id or length is "
            "impossible (u64 stream id, u32 length, bytes).",
            path=str(path),
            where="byte offset 0",
        )
    return parse_records(data, str(path))


def write_records(path: str, records) -> None:
    """Write ``(stream_id, bytes)`` records in the interop layout, atomically."""
    out = []
    for stream_id, payload in records:
        out.append(_HEADER.pack(stream_id, len(payload)))
        out.append(bytes(payload))
    atomic_write(str(path), b"".join(out))


def looks_like_records(data: bytes) -> bool:
    """True when ``data`` starts like the interop layout: a plausible first record.

    Stream ids are QUIC variable-length integers (< 2**62) and small in practice: the
    leading bytes are zeros, which no text format starts with.  A first record longer
    than the file is still plausible when short (a truncated real file, which the record
    reader reports as such); random bytes fail on the stream id or the length."""
    if len(data) < _HEADER.size:
        # Too short for a header: only a file that starts with a small stream id's zeros.
        return len(data) >= 4 and data[:4] == b"\0\0\0\0"
    stream_id, length = _HEADER.unpack_from(data, 0)
    if stream_id >= 2**32:
        return False
    return length <= len(data) - _HEADER.size or length < _MAX_PLAUSIBLE_RECORD


# No field section or encoder-stream chunk comes near this; random bytes usually do.
_MAX_PLAUSIBLE_RECORD = 1 << 20


def interop_settings(path: str) -> tuple[int, int, int] | None:
    """(table capacity, blocked streams, ack mode) from an interop file name, or None."""
    m = _NAME.search(os.path.basename(str(path)))
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def resolve_settings(
    path: str, capacity: int | None = None, blocked: int | None = None, *, flags: str = "give them explicitly"
) -> tuple[int, int]:
    """(table capacity, blocked streams): the given ones, the rest from the file name.

    ``flags`` finishes the error for a name without them (which options the caller has)."""
    if capacity is not None and blocked is not None:
        return capacity, blocked
    settings = interop_settings(path)
    if settings is None:
        raise InputError(
            "cannot tell the table capacity and blocked-streams limit from the file name "
            f"(expected <name>.out.<capacity>.<blocked>.<ack>); {flags}.",
            path=str(path),
        )
    return (settings[0] if capacity is None else capacity, settings[1] if blocked is None else blocked)


def load_interop(
    path: str, max_table_capacity: int | None = None, blocked_streams: int | None = None, data: bytes | None = None
) -> Trace:
    """Decode an interop file to a ``Trace`` (one exchange per field section)."""
    path = str(path)
    records = parse_records(read_input(path) if data is None else data, path)
    settings = interop_settings(path)
    max_table_capacity, blocked_streams = resolve_settings(path, max_table_capacity, blocked_streams)

    decoder = pylsqpack.Decoder(max_table_capacity, blocked_streams)
    sections: list[list] = []  # [stream_id, encoded size, headers or None]
    blocked: dict[int, int] = {}  # stream id -> index in sections
    encoder_bytes = 0
    offset = 0
    for stream_id, payload in records:
        where = f"byte offset {offset}"
        offset += _HEADER.size + len(payload)
        if stream_id == ENCODER_STREAM:
            encoder_bytes += len(payload)
            try:
                unblocked = decoder.feed_encoder(payload)
            except pylsqpack.EncoderStreamError as exc:
                raise InputError(f"the encoder stream cannot be decoded ({exc}).", path=path, where=where) from None
            for sid in unblocked:
                k = blocked.pop(sid)
                try:
                    _, headers = decoder.resume_header(sid)
                except pylsqpack.DecompressionFailed as exc:
                    raise InputError(f"stream {sid} cannot be decoded ({exc}).", path=path, where=where) from None
                sections[k][2] = tuple(headers)
                check_field_section(sections[k][2], path=path, where=where, what="decoded header")
            continue
        if stream_id in blocked:
            raise InputError(
                f"stream {stream_id} sends a second field section while its first is blocked.", path=path, where=where
            )
        sections.append([stream_id, len(payload), None])
        try:
            _, headers = decoder.feed_header(stream_id, payload)
            sections[-1][2] = tuple(headers)
            check_field_section(sections[-1][2], path=path, where=where, what="decoded header")
        except pylsqpack.StreamBlocked:
            blocked[stream_id] = len(sections) - 1
        except pylsqpack.DecompressionFailed as exc:
            raise InputError(
                f"the field section of stream {stream_id} cannot be decoded ({exc}).", path=path, where=where
            ) from None
    if blocked:
        ids = ", ".join(str(s) for s in sorted(blocked))
        raise InputError(
            f"stream(s) {ids} still blocked at end of file: the encoder stream never "
            "delivered the entries they reference.",
            path=path,
        )

    exchanges = []
    for i, (stream_id, _size, headers) in enumerate(sections):
        if headers and headers[0][0] == b":status":
            exchanges.append(Exchange(index=i, response_headers=headers))
        else:
            exchanges.append(
                Exchange(
                    index=i,
                    request_headers=headers,
                    origin=_origin(headers or (), path, f"field section {i} (stream {stream_id})"),
                )
            )
    meta = {
        "max_table_capacity": max_table_capacity,
        "blocked_streams": blocked_streams,
        "ack_mode": settings[2] if settings else None,
        "stream_ids": [s[0] for s in sections],
        "encoded_sizes": [s[1] for s in sections],  # field-section bytes, per exchange
        "encoder_stream_bytes": encoder_bytes,
    }
    return Trace(exchanges=exchanges, format="qpack-interop", source=path, meta=meta)
