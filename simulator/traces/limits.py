"""What a trace file may hold, checked once, where traces are read.  Written by hand.

Every study reads traces through ``simulator.traces.load``; the checks live here and in
the three loaders, so no study meets a size written as a Unicode digit, a timing that is
a list, an ``Infinity``, a 1 MB header value or a host name no resolver would take.  A
value outside them is an ``InputError``: one line naming the file, the place (entry
index, line number or byte offset) and the field.

The limits, each well above anything a browser or a QPACK encoder produces:

=========================  ===============  ==================================================
limit                      value            why this size
=========================  ===============  ==================================================
``MAX_TRACE_BYTES``        128 MiB          a HAR with its bodies inlined stays below; the
                                            import holds the file's bytes and text and one
                                            entry at a time, then the trace (a 50 MB HAR of
                                            20,000 entries: about 4 s and 190 MB; 7 s and
                                            310 MB in ``trace info``), so at most about 0.5 GB
``MAX_ENTRIES``            50,000           HAR entries / QIF lists / interop sections; the
                                            largest real pages have a few thousand
``MAX_BODY_BYTES``         64 MiB           one declared body (``bodySize``, ``content.size``
                                            ...): larger is a download, not a page load; the
                                            models simulate every byte, holding what is in
                                            flight (trailers, buffered, at 64 MiB over h2
                                            and h3: 4.3 s CPU, 250 MB RSS, mostly imports)
``MAX_FIELD_VALUE_BYTES``  64 KiB           one header value: servers refuse far less (nginx
                                            8 KiB a line), Chrome 256 KiB for a whole section
``MAX_FIELD_SECTION_BYTES``  256 KiB        one header list, counted as HTTP/2's
                                            SETTINGS_MAX_HEADER_LIST_SIZE counts it (name,
                                            value and 32 per field, RFC 9113 6.5.2); Chrome's
                                            limit for a response header section
``MAX_TIME_MS``            1e9 ms           a timing or a page time (11.6 days)
``MAX_SPAN_S``             1e6 s            from the first ``startedDateTime`` to the last
=========================  ===============  ==================================================

JSON nested deeper than Python's parser goes (its ``RecursionError``) is refused the same way.

Numbers (RFC 8259 section 6: a JSON number) must be JSON numbers, finite and in range;
WebPageTest writes some sizes as strings, so a string of ASCII digits is read as its
number; any other string (Unicode digits included: Python's ``int`` takes ``"١٢٣"``) is
refused.  A negative number is HAR 1.2's "not known" (-1) and reads as absent.
Host names: RFC 1035 section 2.3.4 (253 characters, labels of at most 63), an IPv6
literal that ``ipaddress`` accepts (RFC 3986 section 3.2.2), a port up to 65535.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import re
from operator import itemgetter
from urllib.parse import SplitResult, urlsplit

from ..errors import InputError

__all__ = [
    "MAX_TRACE_BYTES",
    "MAX_ENTRIES",
    "MAX_BODY_BYTES",
    "MAX_FIELD_VALUE_BYTES",
    "MAX_FIELD_SECTION_BYTES",
    "MAX_TIME_MS",
    "MAX_SPAN_S",
    "number",
    "shown",
    "check_url",
    "check_authority",
    "check_field_section",
]

MAX_TRACE_BYTES = 128 << 20
MAX_ENTRIES = 50_000
MAX_BODY_BYTES = 64 << 20
MAX_FIELD_VALUE_BYTES = 64 << 10
MAX_FIELD_SECTION_BYTES = 256 << 10
MAX_TIME_MS = 1e9
MAX_SPAN_S = 1e6

_ASCII_INTEGER = re.compile(r"-?[0-9]+\Z")  # re's [0-9], not \d: no Unicode digits
_LABEL = re.compile(r"[^.]{1,63}\Z")


def _kind(value) -> str:
    names = {bool: "true/false", list: "a list", dict: "an object", str: "a string"}
    return names.get(type(value), type(value).__name__)


def shown(value) -> str:
    """A number for a message: six significant digits, or the size of an integer too large
    for a float (JSON allows any number of digits; ``float()`` of it overflows)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    return f"{value:.6g}"


def number(value, field: str, *, limit: float, path=None, where=None, integer: bool = True):
    """A HAR number: None when absent or "not known" (missing, null, "", negative), else
    the number (an int when ``integer``); an ``InputError`` naming ``field`` when it is not
    a plain finite number, or above ``limit``."""
    if value is None:
        return None
    if type(value) is int and 0 <= value <= limit:  # most sizes: a JSON integer in range
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{field} is {_kind(value)}, not a number.", path=path, where=where)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not _ASCII_INTEGER.match(text) or len(text) > 20:
            raise InputError(f"{field} is the string {value[:40]!r}, not a number.", path=path, where=where)
        value = int(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{field} is {value}, not a finite number.", path=path, where=where)
    if value < 0:
        return None
    if value > limit:
        raise InputError(
            f"{field} is {shown(value)}, above the limit of {limit:.6g} (simulator.traces.limits).",
            path=path,
            where=where,
        )
    return int(value) if integer else value


def check_url(parts, url: str, *, path=None, where=None, what: str = "request url") -> None:
    """A URL's host and port as a client could use them (see the module docstring); ``parts``
    is ``urlsplit(url)``, which has already refused a malformed IPv6 literal; ``what`` names
    the field in the message."""
    check_netloc(parts.netloc, url, path=path, where=where, what=what)


def check_netloc(netloc: str, url: str, *, path=None, where=None, what: str = "request url") -> None:
    """``check_url`` of the URL whose netloc (``urlsplit(url).netloc``) is ``netloc``."""
    problem = _netloc_problem(netloc)
    if problem is not None:
        raise InputError(f"{what} {url[:80]!r} {problem}", path=path, where=where)


@functools.lru_cache(maxsize=1 << 12)
def _netloc_problem(netloc: str) -> str | None:
    """What is wrong with a URL's authority (host and port come from it alone), or None;
    memoized: a page asks a few hosts for thousands of resources."""
    parts = SplitResult("", netloc, "", "", "")
    try:
        host = parts.hostname
        parts.port  # ValueError: not a number, or above 65535
    except ValueError as exc:
        return f"has a bad host or port ({exc})."
    if not host:
        return None
    if "[" in netloc:  # RFC 3986 3.2.2: an IP literal
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return "has an invalid IPv6 literal."
        return None
    name = host[:-1] if host.endswith(".") else host
    if any(c <= " " or c == "\x7f" for c in name):
        # RFC 3986 3.2.2: a reg-name has no controls or spaces (a NUL would end the name a TLS
        # library sends as its SNI).
        return "has a control character or a space in its host."
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            return "has a host no IDNA encoding takes."
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        return "has a host name over 253 characters or an empty or over-63-character label (RFC 1035 2.3.4)."
    return None


def check_authority(authority: str, *, path=None, where=None, what: str = ":authority") -> None:
    """An ``:authority`` (or Host) value as a client could connect to it: parsed as a URL's
    authority (RFC 3986 3.2) and held to ``check_url``'s rules."""
    try:
        parts = _split_authority(authority)
    except ValueError as exc:
        raise InputError(f"{what} {authority[:80]!r} cannot be parsed ({exc}).", path=path, where=where) from None
    check_url(parts, authority, path=path, where=where, what=what)


@functools.lru_cache(maxsize=1 << 12)
def _split_authority(authority: str):
    return urlsplit("//" + authority)


_NAME, _VALUE = itemgetter(0), itemgetter(1)


def check_field_section(fields, *, path=None, where=None, what: str = "header", total: int | None = None) -> None:
    """One header list's values and total size within the limits; ``total``: the section's
    bytes, when the caller counted them already (as below)."""
    if not isinstance(fields, (list, tuple)):
        fields = list(fields)  # read twice below
    # RFC 9113 6.5.2 / RFC 7541 4.1: 32 per field.  Within the value limit, no value can be
    # above it, nor the section above its own: most lists end here.
    if total is None:
        total = sum(map(len, map(_VALUE, fields))) + sum(map(len, map(_NAME, fields))) + 32 * len(fields)
    if total <= MAX_FIELD_VALUE_BYTES:
        return
    for name, value in fields if max(map(len, map(_VALUE, fields))) > MAX_FIELD_VALUE_BYTES else ():
        if len(value) > MAX_FIELD_VALUE_BYTES:
            raise InputError(
                f"{what} field {name[:40].decode('latin-1')!r} has a {len(value)}-byte value, above "
                f"the limit of {MAX_FIELD_VALUE_BYTES} (simulator.traces.limits).",
                path=path,
                where=where,
            )
    if total > MAX_FIELD_SECTION_BYTES:
        raise InputError(
            f"the {what} list holds {total} bytes, above the limit of {MAX_FIELD_SECTION_BYTES} "
            "(simulator.traces.limits).",
            path=path,
            where=where,
        )
