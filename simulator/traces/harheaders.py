"""HAR header lists as an HTTP/2 or HTTP/3 client sends them (the header half of ``har``).

``_request_headers`` and ``_response_headers`` turn an entry's HAR header objects into a
``HeaderList``: names lower-cased (RFC 9113 8.2.1), connection-specific fields and names that
are no token dropped (RFC 9113 8.2.2, RFC 9110 5.1), a value of several lines split into one
field per line, the pseudo-header fields first, rebuilt from the method and URL when the HAR
lacks them (``request_pseudo_headers``, RFC 9113 8.3.1, 8.5), ``:status`` first (8.3.2).  The
rules are ``har``'s module docstring's; they live here so that ``har`` holds the entry and
page reading.  Written by hand, not with a HAR library: the loader must keep each producer's
wire order and refuse what no stack would send.  ``urlsplit`` and ``urljoin`` are memoized
here, one cache for both modules; ``har`` re-exports the names it always had.

``_fields``' loop over a list of header objects, and the loops of ``_request_headers`` and
``_response_headers`` over the fields, have a C twin, ``simulator.traces._harheaders`` (also
hand-written), used when it is built; the Python loop is the reference, and
``tests/test_har_stream.py`` checks that the two agree.  ``WORKBENCH_PURE_PYTHON=1`` selects
the reference; ``WORKBENCH_HAR_EXT`` loads the extension from another build (``make asan``).
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import re
from urllib.parse import urljoin as _urljoin, urlsplit as _urlsplit

from .._extension import load_extension
from ..errors import InputError
from . import limits
from .model import HeaderList

# RFC 9113 8.2.2: fields that are specific to one HTTP/1.1 connection.
CONNECTION_SPECIFIC = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"})
REQUEST_PSEUDO = (b":method", b":scheme", b":authority", b":path")  # RFC 9113 8.3.1 order
_REQUEST_PSEUDO_SET = frozenset(REQUEST_PSEUDO)
_TOKEN = re.compile(rb"^:?[!#$%&'*+\-.^_`|~0-9a-z]+$")  # RFC 9110 5.6.2 tchar (lower-cased); ":" pseudo


# Pure functions of their strings, memoized: a HAR repeats its URLs (each entry's own, its
# initiator's, a redirect's) and header names across entries.
urlsplit = functools.lru_cache(maxsize=1 << 14)(_urlsplit)
urljoin = functools.lru_cache(maxsize=1 << 14)(_urljoin)

# A URL of printable ASCII (no space or control character: nothing for ``urlsplit`` to strip
# or remove) with a scheme and an authority without brackets (no IPv6 literal to check, and
# ASCII: no NFKC check): ``urlsplit``'s scheme (lower-cased) and netloc, which end at "://"
# and at the first of "/?#".
_PLAIN_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://([^/?#\[\]\x00-\x20\x7f]*)(?:[/?#][^\x00-\x20\x7f]*)?")


def scheme_and_netloc(url: str) -> tuple[str, str]:
    """``urlsplit(url)``'s scheme and netloc (its ``ValueError`` too), read by a pattern for the
    URLs it covers (most; see ``_PLAIN_URL``): a page's every URL differs, so ``urlsplit``'s
    memo mostly misses, and the import asks for these two parts of each (twice: the entry's
    checks, then its initiator's join, which the last answer given serves)."""
    if url is _LAST_SPLIT[0]:
        return _LAST_SPLIT[1]
    m = _PLAIN_URL.fullmatch(url) if url.isascii() else None
    if m is not None:
        out = m[1].lower(), m[2]
    else:
        parts = urlsplit(url)
        out = parts.scheme, parts.netloc
    _LAST_SPLIT[:] = url, out
    return out


_LAST_SPLIT: list = [None, None]  # the last URL asked for (the very string) and its answer


def joined_as_is(ref: str) -> bool:
    """Whether ``urljoin(base, ref)`` is ``ref`` itself for every base that has a scheme and
    no authority (``har._join_with_authority``'s ``scheme://``): a URL ``_PLAIN_URL`` covers,
    with an authority and a lower-case scheme (urljoin gives back a URL of another scheme, and
    takes one of the base's apart and puts it together again, the scheme lower-cased), no ";"
    (the last segment's parameters) and no empty query or fragment (the "?" or "#" of one is
    dropped).  So most initiator URLs skip urljoin's parse."""
    m = _PLAIN_URL.fullmatch(ref) if ref.isascii() else None
    if m is None or not m[2] or ";" in ref or not m[1].islower():
        return False
    query, fragment = ref.find("?"), ref.find("#")
    if fragment == len(ref) - 1:
        return False
    return not (
        0 <= query and (fragment < 0 or query < fragment) and query + 1 == (fragment if fragment >= 0 else len(ref))
    )


@functools.lru_cache(maxsize=1 << 12)
def _field_name(raw: str) -> bytes | None:
    """A HAR header name as sent (RFC 9113 8.2.1: lower-case), or None for one no stack
    would send: not a field name (RFC 9110 5.1: a token; a producer's stray line, e.g.
    WebPageTest's request line or a cookie split at a colon) or connection-specific."""
    name = _b(raw.strip().lower())
    if not _TOKEN.match(name) or name in CONNECTION_SPECIFIC:
        return None
    return name


@functools.lru_cache(maxsize=1 << 15)
def _field(raw_name: str, value: str) -> tuple[bytes, bytes] | None:
    """One HAR header with a one-line string value as sent, or None to leave it out (see
    ``_fields``); most headers repeat from entry to entry (accept, user-agent, sec-ch-ua ...)."""
    name = _field_name(raw_name)
    if name is None or name == b"te" and value.strip().lower() != "trailers":  # RFC 9113 8.2.2
        return None
    return name, _b(value.replace("\r", "").replace("\x00", "").strip())  # RFC 9110 5.5


def _b(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")  # undecodable bytes read back (\udcXX)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")  # a lone surrogate a JSON escape made


def _s(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def request_pseudo_headers(method: str, url: str) -> HeaderList:
    """The request pseudo-header fields for ``method`` and ``url`` (RFC 9113 8.3.1, 8.5)."""
    parts = urlsplit(url)
    authority = parts.netloc.rsplit("@", 1)[-1]  # 8.3.1: no userinfo in :authority
    if method.upper() == "CONNECT":
        return ((b":method", _b(method)), (b":authority", _b(authority)))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return (
        (b":method", _b(method)),
        (b":scheme", _b(parts.scheme or "https")),
        (b":authority", _b(authority)),
        (b":path", _b(path)),
    )


@functools.lru_cache(maxsize=1 << 15)
def _header_fields(raw_name, value) -> tuple | None:
    """The fields one HAR header object's name and value give (``_fields``' rules), or None
    when either is not a string (``_fields`` then reads the list one object at a time, which
    refuses what it must); memoized, so a header met before costs one lookup."""
    if type(raw_name) is not str or type(value) is not str:
        return None
    if "\n" not in value:
        # _field's own memo left out: this one already holds the pair, and a miss here is one there.
        field = _field.__wrapped__(raw_name, value)
        return () if field is None else (field,)
    return tuple(_fields_one_by_one([{"name": raw_name, "value": value}], None, None))


_NAME, _VALUE = operator.itemgetter("name"), operator.itemgetter("value")


def _fields(raw_headers, where, path) -> list[tuple[bytes, bytes]]:
    """HAR header objects -> lower-case (name, value) pairs minus connection-specific ones."""
    return _fields_sized(raw_headers, where, path)[0]


def _fields_sized(raw_headers, where, path) -> tuple[list, int | None, int | None]:
    """``_fields``, with the fields' section bytes (``limits.check_field_section``'s total)
    and the objects' text bytes (``harfields.response_header_bytes`` less its status line)
    when the C twin counted them as it read the list (else None)."""
    if raw_headers is None:
        return [], None, None
    if not isinstance(raw_headers, list):
        raise InputError("headers is not a list.", path=path, where=where)
    if _NATIVE is not None and type(raw_headers) is list:
        # The C twin of the loop below, for a list of objects with a string name and value.
        found = _NATIVE.fields(raw_headers, _NATIVE_MEMO, _field_name, _header_fields.__wrapped__)
        if found is not None:
            return found
    return _fields_python(raw_headers, where, path), None, None


def _fields_python(raw_headers: list, where, path) -> list[tuple[bytes, bytes]]:
    """``_fields`` in Python: the reference of the C twin's loop."""
    # Most lists: objects with a string name and value, each met before on the page.  The
    # whole list is looked up at C speed; anything else (an object that is not one, a
    # missing or non-string member, an unhashable value) is read one object at a time.
    try:
        found = list(map(_header_fields, map(_NAME, raw_headers), map(_VALUE, raw_headers)))
    except (KeyError, TypeError):
        found = None
    if found is None or None in found:
        return _fields_one_by_one(raw_headers, where, path)
    return list(itertools.chain.from_iterable(found))


def _load_native():
    """The C twin of ``_fields``' loop, or None (not built, or the reference asked for)."""
    if os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0"):
        return None
    return load_extension("simulator.traces._harheaders", "WORKBENCH_HAR_EXT")


_NATIVE = _load_native()
_NATIVE_MEMO: dict = {}  # the C twin's memo of pairs: raw name -> [wire name, {value: fields}]


def _fields_one_by_one(raw_headers: list, where, path) -> list[tuple[bytes, bytes]]:
    out = []
    append = out.append
    for i, h in enumerate(raw_headers):
        raw_name = h.get("name") if isinstance(h, dict) else None
        if not isinstance(raw_name, str):
            raise InputError(f"header {i} has no name.", path=path, where=where)
        value = h.get("value", "")
        if type(value) is str and "\n" not in value:
            field = _field(raw_name, value)
            if field is not None:
                append(field)
            continue
        name = _field_name(raw_name)
        if name is None:
            continue
        if type(value) is not str:
            value = "" if value is None else str(value)
        if name == b"te" and value.strip().lower() != "trailers":  # RFC 9113 8.2.2
            continue
        if "\n" in value:
            for line in value.split("\n"):
                append((name, _b(line.replace("\r", "").replace("\x00", "").strip())))  # RFC 9110 5.5
        else:
            if "\r" in value or "\x00" in value:
                value = value.replace("\r", "").replace("\x00", "")
            append((name, _b(value.strip())))
    return out


def _request_headers(request: dict, where: str, path) -> HeaderList:
    return _request_headers_pseudo(request, where, path)[0]


def _request_headers_pseudo(request: dict, where: str, path) -> tuple[HeaderList, dict]:
    """``_request_headers``, and its pseudo-header fields as a dict (name -> value: the last
    of a name given twice), which ``har`` reads the origin from."""
    fields, section_bytes, _ = _fields_sized(request.get("headers"), where, path)
    limits.check_field_section(fields, path=path, where=where, what="request header", total=section_bytes)
    method = str(request.get("method") or "GET")
    url = request["url"]
    # One pass over the fields (the lists are shared with _field's cache, not copied).
    found = _NATIVE.split(fields, b"host") if _NATIVE is not None and type(fields) is list else None
    if found is not None:  # the C twin of the loop below
        pseudo, regular, host = found
        given = dict(pseudo)  # the last of a name given twice
    else:
        given, pseudo, regular, host = {}, [], [], None
        for field in fields:
            name = field[0]
            if name[:1] == b":":
                given[name] = field[1]
                pseudo.append(field)
            elif name != b"host":
                regular.append(field)
            elif host is None:
                host = field[1]
    if len(given) < 4 or not given.keys() >= _REQUEST_PSEUDO_SET:  # not all four given
        # Rebuilt where the capture lacks some (with all four given, every one wanted is).
        rebuilt = dict(request_pseudo_headers(method, url))
        if host is not None and b":authority" not in given:
            rebuilt[b":authority"] = host  # RFC 9113 8.3.1: Host -> :authority
        wanted = [n for n in REQUEST_PSEUDO if n in rebuilt]
        if not all(n in given for n in wanted):
            pseudo = [(n, given.get(n, rebuilt[n])) for n in wanted]
            given = dict(pseudo)
    # else the capture has the pseudo-header fields: they stay in their wire order.
    return tuple(pseudo + regular), given


def _response_headers(response: dict, where: str, path) -> HeaderList | None:
    return _response_headers_sized(response, where, path)[0]


def _response_headers_sized(response: dict, where: str, path) -> tuple[HeaderList | None, int | None]:
    """``_response_headers``, and the header objects' text bytes when the C twin counted them
    (``harfields.response_header_bytes`` less its status line; else None)."""
    fields, section_bytes, text_bytes = _fields_sized(response.get("headers"), where, path)
    limits.check_field_section(fields, path=path, where=where, what="response header", total=section_bytes)
    status = response.get("status")
    found = _NATIVE.split(fields, None) if _NATIVE is not None and type(fields) is list else None
    if found is not None:  # the C twin of the loop below
        pseudo, regular = found[0], found[1]
        given = next((value for name, value in pseudo if name == b":status"), None) if pseudo else None  # the first
    else:
        given, regular = None, []
        for field in fields:
            if field[0][:1] != b":":
                regular.append(field)
            elif given is None and field[0] == b":status":
                given = field[1]
    if isinstance(status, int) and status > 0:
        code = _b(str(status))
    elif given is not None:
        code = given
    elif regular:
        code = b"200" if status is None else _b(str(status))
    else:
        return None, text_bytes  # no response at all (Chrome records blocked requests with status 0)
    return ((b":status", code),) + tuple(regular), text_bytes  # RFC 9113 8.3.2: :status first
