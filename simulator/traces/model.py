"""The normalized trace model every loader produces and every study consumes.

A ``Trace`` is an ordered list of ``Exchange``s (request/response pairs, or just one
header list for formats such as QIF that carry lists without their partner), grouped
into pages where the source has pages.  Header lists are tuples of ``(name, value)``
``bytes`` pairs in wire order, exactly as the codecs (hpack, pylsqpack) take them.

Raw header size follows the QPACK interop convention: the sum of name and value
lengths in bytes (no HPACK 32-byte entry overhead, no separators).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterator

__all__ = ["Header", "HeaderList", "Exchange", "Page", "Trace", "raw_size", "header_value"]

Header = tuple[bytes, bytes]
HeaderList = tuple[Header, ...]


def raw_size(headers: HeaderList | None) -> int:
    """Sum of name and value lengths (the QPACK offline-interop measure of raw bytes)."""
    if not headers:
        return 0
    return sum(len(n) + len(v) for n, v in headers)


def header_value(headers: HeaderList | None, name: bytes) -> bytes | None:
    """The first value of ``name`` in ``headers`` (names compared as given: lower-case)."""
    for n, v in headers or ():
        if n == name:
            return v
    return None


@dataclass(slots=True)
class Exchange:
    """One request/response exchange.  Unknown fields are None (QIF has no timing or sizes)."""

    index: int
    request_headers: HeaderList | None = None
    response_headers: HeaderList | None = None  # includes :status first when known
    response_trailers: HeaderList | None = None
    request_body_bytes: int = 0
    response_body_bytes: int = 0  # the body's bytes on the wire (as coded): what transfer takes
    start_s: float | None = None  # relative to the trace's first exchange
    origin: str | None = None  # scheme://authority, the compression/connection scope
    connection: str | None = None  # the capture's connection id, when it has one
    page: str | None = None
    priority: str | None = None  # e.g. Chrome's _priority ("VeryHigh" ... "VeryLow")
    resource_type: str | None = None  # e.g. Chrome's _resourceType ("document", "script", ...)
    initiator: str | None = None  # URL of the resource that caused this one, when known
    initiator_type: str | None = None  # parser / script / preload / other
    url: str | None = None
    timings: dict | None = None  # HAR timings (ms), -1 = not applicable
    response_content_bytes: int | None = None  # decoded body size (None: same as on the wire)
    http_version: str | None = None  # http/1.0, http/1.1, h2, spdy, h3 (None: unknown)
    redirect_url: str | None = None  # absolute target of a 3xx (location or HAR redirectURL)
    # Where resource_type and the body bytes came from (trace info shows it): provenance, not
    # content, so two exchanges that say the same compare equal.
    resource_type_from: str | None = field(default=None, compare=False)
    render_blocking: str | None = None  # Chrome's _renderBlocking ("blocking", "non_blocking", ...)
    body_bytes_from: str | None = field(default=None, compare=False)
    pushed: bool = False  # the server pushed it (HTTP/2 push, RFC 9113 8.4): no request was sent
    internal: bool = False  # a redirect the browser made itself (HSTS, RFC 6797 8.3): nothing on the network
    # A document's decoded body, when the capture kept it (HAR content.text): where its tags are
    document_text: str | None = field(default=None, repr=False)

    @property
    def decoded_body_bytes(self) -> int:
        """The body after content coding: what a codec or a compression dictionary sees."""
        return self.response_body_bytes if self.response_content_bytes is None else self.response_content_bytes

    @property
    def status(self) -> int | None:
        """The response's ``:status`` code, or None when unknown."""
        v = header_value(self.response_headers, b":status")
        return int(v) if v is not None and v.isdigit() else None

    def header_lists(self, direction: str) -> list[tuple[str, HeaderList]]:
        """The header lists of this exchange for ``requests``, ``responses`` or ``both``."""
        out = []
        if direction in ("requests", "both") and self.request_headers is not None:
            out.append(("request", self.request_headers))
        if direction in ("responses", "both") and self.response_headers is not None:
            out.append(("response", self.response_headers))
        return out


@dataclass(slots=True)
class Page:
    """A page of the trace; the measured times are the producer's (HAR ``pageTimings``)."""

    id: str
    title: str | None = None
    start_s: float | None = None
    url: str | None = None
    on_load_s: float | None = None  # pageTimings.onLoad after the page's start; None when absent or -1
    on_content_load_s: float | None = None
    repeat_view: bool | None = None  # WebPageTest's _cached: the second load of the same page
    # the URLs of the images in the viewport when first laid out (the lab's _viewportImages);
    # None when the capture did not record it
    viewport_images: tuple[str, ...] | None = None


@dataclass
class Trace:
    """A normalized trace.  ``format`` names the loader ("har", "qif", "qpack-interop", ...)."""

    exchanges: list[Exchange]
    format: str
    source: str | None = None  # the file it came from
    pages: list[Page] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.exchanges)

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self.exchanges)

    @property
    def timed(self) -> bool:
        """True when any exchange has a start time."""
        return any(e.start_s is not None for e in self.exchanges)

    def origins(self) -> list[str]:
        """The origins of the exchanges, in order of first appearance."""
        seen: dict[str, None] = {}
        for e in self.exchanges:
            if e.origin is not None:
                seen.setdefault(e.origin, None)
        return list(seen)

    def header_lists(self, direction: str = "both") -> list[tuple[Exchange, str, HeaderList]]:
        """Every header list in trace order as (exchange, "request"|"response", headers)."""
        return [(e, kind, h) for e in self.exchanges for kind, h in e.header_lists(direction)]

    def raw_header_bytes(self, direction: str = "both") -> int:
        """Bytes of names plus values of every header list of ``direction``, uncompressed."""
        return sum(raw_size(h) for _, _, h in self.header_lists(direction))

    def content_hash(self) -> str:
        """SHA-256 over the header lists and sizes: identifies the trace's content, not its file name."""
        h = hashlib.sha256()
        for e in self.exchanges:
            for part in (e.request_headers, e.response_headers, e.response_trailers):
                for n, v in part or ():
                    h.update(n + b"\x00" + v + b"\x01")
                h.update(b"\x02")
            h.update(f"{e.start_s}|{e.request_body_bytes}|{e.response_body_bytes}|{e.origin}\n".encode())
        return h.hexdigest()
