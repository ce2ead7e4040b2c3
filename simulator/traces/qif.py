"""QIF ("QPACK Interop Format") loader and writer (format ``"qif"``).

A QIF file is text: each line is ``name<TAB>value`` (lines end in LF, CRLF, or CR in a file
that has no LF at all); a blank line ends one header
list; a line starting with ``#`` is a comment.  Lists appear in the order they were
sent.  Names and values are kept as bytes, exactly as written (the value is
everything after the first tab).

A QIF file is one encoder's input: one stream of header lists in file order, the order
the QPACK offline interop (RFC 9204's drafts, draft-ietf-quic-qpack; the ``qpackers/qifs``
collection) feeds them to an encoder, one field section each.  So each list becomes one
``Exchange`` of its own, in file order, never paired with the list beside it (a file of
responses is not a file of requests and their responses): a list starting with
``:status`` is a response list (``Exchange.response_headers``), any other a request list.  A request's
``origin`` is ``scheme://authority`` from ``:scheme`` and ``:authority`` (or
``host``); the scheme is ``https`` when ``:scheme`` is absent.  QIF has no timing,
sizes or pages.

``write_qif(trace_or_header_lists, path, direction="both")`` writes the same format,
atomically.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import InputError
from ._io import atomic_write, read_input
from .limits import MAX_ENTRIES, check_authority, check_field_section
from .model import Exchange, HeaderList, Trace, header_value

__all__ = ["load_qif", "parse_qif", "write_qif", "qif_bytes"]


def parse_qif(data: bytes, path: str | None = None) -> list[HeaderList]:
    """The header lists of a QIF document, in file order."""
    if not data.strip():
        raise InputError("the file is empty.", path=path)
    lists: list[HeaderList] = []
    current: list[tuple[bytes, bytes]] = []
    # Lines end in LF or CRLF; a file with CRs and no LF at all (old Mac text) ends them in CR.
    # A CR inside a CRLF or LF file stays part of its value, as write_qif wrote it.
    newline = b"\r" if b"\n" not in data and b"\r" in data else b"\n"
    for lineno, line in enumerate(data.split(newline), start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            if current:
                _add(lists, current, path, lineno)
                current = []
            continue
        if line.startswith(b"#"):
            continue
        name, tab, value = line.partition(b"\t")
        if not tab:
            raise InputError("the line has no tab between name and value.", path=path, where=f"line {lineno}")
        if not name:
            raise InputError("the line has an empty field name.", path=path, where=f"line {lineno}")
        current.append((name, value))
    if current:
        _add(lists, current, path, lineno)
    if not lists:
        raise InputError("the file holds no header lists (only comments or blank lines).", path=path)
    return lists


def _add(lists: list, fields: list, path, lineno: int) -> None:
    """One finished header list (ending before line ``lineno``), within the limits."""
    check_field_section(fields, path=path, where=f"the list ending at line {lineno}")
    if len(lists) >= MAX_ENTRIES:
        raise InputError(
            f"more than {MAX_ENTRIES} header lists, above the limit (simulator.traces.limits).",
            path=path,
            where=f"line {lineno}",
        )
    lists.append(tuple(fields))


def _origin(headers: HeaderList, path=None, where=None) -> str | None:
    authority = header_value(headers, b":authority") or header_value(headers, b"host")
    if not authority:
        return None
    check_authority(authority.decode("latin-1"), path=path, where=where)  # a host a client could connect to
    scheme = header_value(headers, b":scheme") or b"https"
    return f"{scheme.decode('latin-1')}://{authority.decode('latin-1')}"


def load_qif(path: str, data: bytes | None = None) -> Trace:
    """Load a QIF file as a ``Trace``: one exchange per header list, in file order (the
    encoder's one stream of field sections); a response list is not joined to the request
    list before it, so a trace written by ``write_qif`` reads back as its lists, in order."""
    path = str(path)
    if data is None:
        data = read_input(path)
    exchanges = []
    for k, headers in enumerate(parse_qif(data, path)):
        if headers[0][0] != b":status":
            exchanges.append(
                Exchange(index=k, request_headers=headers, origin=_origin(headers, path, f"header list {k}"))
            )
        else:
            exchanges.append(Exchange(index=k, response_headers=headers))
    return Trace(exchanges=exchanges, format="qif", source=path)


def _lists(source: Trace | Iterable[HeaderList], direction: str) -> list[HeaderList]:
    if direction not in ("requests", "responses", "both"):
        raise InputError(f"direction must be requests, responses or both, not {direction!r}.")
    if isinstance(source, Trace):
        return [h for _, _, h in source.header_lists(direction)]
    return [tuple(h) for h in source]


def qif_bytes(source: Trace | Iterable[HeaderList], direction: str = "both") -> bytes:
    """The QIF text for a trace's header lists (or for plain header lists)."""
    out = []
    for k, headers in enumerate(_lists(source, direction)):
        if not headers:
            continue  # QIF cannot represent an empty list
        for name, value in headers:
            if not name or b"\t" in name or b"\n" in name or b"\r" in name or name.startswith(b"#"):
                raise InputError(f"field name {name!r} cannot be written as QIF.", where=f"header list {k}")
            if b"\n" in value or value.endswith(b"\r"):
                raise InputError(f"the value of {name.decode('latin-1')} holds a line break.", where=f"header list {k}")
            out.append(name + b"\t" + value + b"\n")
        out.append(b"\n")
    return b"".join(out)


def write_qif(source: Trace | Iterable[HeaderList], path: str, direction: str = "both") -> None:
    """Write header lists as QIF, atomically (temporary file, then ``os.replace``).

    ``source`` is a ``Trace`` (its lists for ``direction``: requests, responses or
    both, in trace order) or an iterable of header lists.
    """
    atomic_write(str(path), qif_bytes(source, direction))
