"""HAR 1.2 loader and writer (format ``"har"``).

``load_har(path)`` turns a browser's HTTP Archive into a ``Trace``:

* Request header lists in wire order, as an HTTP/2 or HTTP/3 client would send them:
  names lower-cased (RFC 9113 8.2.1), connection-specific fields dropped
  (RFC 9113 8.2.2: connection, keep-alive, proxy-connection, transfer-encoding,
  upgrade; ``te`` unless it is exactly "trailers"), and the pseudo-header fields
  ``:method``, ``:scheme``, ``:authority``, ``:path`` placed first (RFC 9113 8.3.1),
  rebuilt from the method and URL when the HAR lacks them.  ``host`` becomes
  ``:authority`` (RFC 9113 8.3.1: clients use ``:authority`` instead of Host).
  A CONNECT request carries only ``:method`` and ``:authority`` (RFC 9113 8.5).
* Response header lists with ``:status`` first (RFC 9113 8.3.2), same clean-up.
* Cookies are kept as the header appears; splitting into crumbs
  (RFC 9113 8.2.3) is the codecs' business.
* A header value holding several lines (Firefox joins repeated Set-Cookie with
  newlines) becomes one field per line; a "field" whose name is not a token (RFC 9110
  section 5.1: a producer's stray request line, a cookie split at a colon) is left out.
* What each producer writes its own way (resource type, bytes on the wire and decoded,
  HTTP version, initiator, priority) is read by the rules of ``harfields``, one place
  for every producer; Chrome's ``_renderBlocking`` is kept for the page graph, and
  ``response._transferSize`` in ``trace.meta["transfer_sizes"]`` (one entry per
  exchange, None when absent).
* Entries Chrome marks ``_fromCache`` ("memory" or "disk": served by the browser's
  cache, nothing crossed the network) are left out, as are URLs that never reach the
  network (``data:``, ``blob:`` ...); their numbers are ``trace.meta["served_from_cache"]``
  and ``trace.meta["not_on_network"]``.
* ``start_s`` from ``startedDateTime`` relative to the first entry, entries sorted by start
  time; pages from ``log.pages`` and ``pageref`` with their measured ``onLoad`` and
  ``onContentLoad``, URL, WebPageTest's repeat-view flag and the lab's images in the viewport
  (``_viewportImages``); ``timings`` copied, with
  WebPageTest's own timing fields beside them (``harfields.wpt_timings``); pushed responses
  (``_was_pushed``, Firefox's status-0 entries) marked ``Exchange.pushed``; the browser's own
  redirects (Chrome's "307 Internal Redirect": HSTS) marked ``Exchange.internal``;
  ``origin`` is ``scheme://host[:port]`` without the scheme's default port, the
  compression and connection scope (``http://`` and ``https://`` stay apart).

The header lists (the first two items) are made in ``harheaders``, which holds the header
clean-up and ``request_pseudo_headers`` (re-exported here); this module reads the entries and pages.

``_exchange`` (an entry's ``Exchange``) has a C twin for the common entry, ``_harheaders.exchange``
(``_harentry.h``; tests/test_har_entry.py holds it to ``_exchange``, the reference), which hands
every other entry back to it.

``load_har`` reads the entries one at a time (``harjson``) and keeps of each only its
``Exchange``: the parsed document of a 50 MB HAR is about five times the file, so holding it
whole was most of the import's memory.  ``parse_har`` takes a document already parsed.

``write_har(trace, path)`` (in ``harwrite``) writes a valid HAR 1.2 file that ``load_har`` reads back
to the same header lists, sizes, start times, pages and extras.  Two custom fields
keep other traces faithful: ``log._untimed`` (the trace had no times; the
``startedDateTime`` values are placeholders) and ``entry._noRequestHeaders`` (a
response-only list, e.g. from QIF; its URL is a placeholder under ``.invalid``).  Header bytes are
converted to JSON text as UTF-8 (undecodable bytes survive via surrogate escapes).
"""

from __future__ import annotations

import functools
import gc
import json
import math
from datetime import datetime, timezone
from urllib.parse import urljoin as _urljoin

from ..errors import InputError
from . import harfields, harjson, limits
from .harheaders import (
    _b,
    _request_headers_pseudo,
    _response_headers_sized,
    _s,
    joined_as_is,
    request_pseudo_headers,
    scheme_and_netloc,
    urljoin,
    urlsplit,
)

# Re-exported: the names ``har`` always had (benchmarks/bench_traces.py clears the caches of the two memoized ones).
from .harheaders import CONNECTION_SPECIFIC, REQUEST_PSEUDO, _field, _field_name, _header_fields  # noqa: F401
from .harheaders import _NATIVE as _harheaders_native
from .harheaders import _NATIVE_MEMO
from .harwrite import har_dict, write_har
from .model import Exchange, Page, Trace

__all__ = ["load_har", "parse_har", "write_har", "har_dict", "request_pseudo_headers"]

# HAR 1.2 timings (section 4.2.16): numbers of milliseconds, -1 where a phase does not apply.
TIMING_PHASES = ("blocked", "dns", "connect", "send", "wait", "receive", "ssl")


_NUMBER_TYPES = frozenset({int, float})
_WITHIN_TIME_LIMIT = float(limits.MAX_TIME_MS).__ge__


def _timings(timings, where: str, path) -> dict | None:
    """An entry's timings: the HAR phases checked (plain finite numbers of ms, in range),
    a producer's own numeric fields kept when finite, anything else (``comment``) left out."""
    if timings is None:
        return None
    if not isinstance(timings, dict):
        raise InputError(f"timings is {type(timings).__name__}, not an object.", path=path, where=where)
    values = timings.values()
    if _NUMBER_TYPES >= set(map(type, values)) and all(map(_WITHIN_TIME_LIMIT, map(abs, values))):
        return dict(timings)  # every value a plain number in range (NaN is not), as the loop below keeps it
    out = {}
    limit = limits.MAX_TIME_MS
    for key, value in timings.items():
        kind = type(value)
        if (kind is float or kind is int) and -limit <= value <= limit:  # most values (NaN fails)
            out[key] = value
            continue
        if key in TIMING_PHASES:
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or abs(value) > limits.MAX_TIME_MS
            ):
                shown = repr(value)[:40] if not isinstance(value, (list, dict)) else type(value).__name__
                raise InputError(
                    f"timings.{key} is {shown}, not a finite number of milliseconds up to {limits.MAX_TIME_MS:.0e}.",
                    path=path,
                    where=where,
                )
            out[key] = value
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and abs(value) <= limits.MAX_TIME_MS
        ):
            out[key] = value
    return out


def _parse_time(text, where, path) -> datetime | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"startedDateTime {text!r} is not an ISO 8601 date.", path=path, where=where) from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def parse_har(doc, path: str | None = None) -> Trace:
    """A ``Trace`` from an already-parsed HAR document (a dict)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("log"), dict):
        raise InputError('the HAR has no "log" object.', path=path)
    log = doc["log"]
    entries = log.get("entries")
    if not isinstance(entries, list):
        raise InputError('the HAR log has no "entries" list.', path=path)
    if len(entries) > limits.MAX_ENTRIES:
        raise InputError(
            f"the HAR has {len(entries)} entries, above the limit of {limits.MAX_ENTRIES} (simulator.traces.limits).",
            path=path,
        )
    reader = _EntryReader(path)
    for entry in entries:
        reader.add(entry)
    return reader.trace(log)


class _EntryReader:
    """A HAR's entries read one at a time (``add``), each turned into its ``Exchange`` at
    once so that the entry itself can be dropped (``harjson.walk``); ``trace`` then sorts
    them and adds what needs them all (indices, start times, the push rule, the pages).

    The refusals are the ones a reading of the whole document gives, in its order: the
    entry count first, then the first entry (in file order) that is no exchange at all
    (not an object, no request or URL, a bad URL or date), then the span of the start
    times, then the first exchange (in start-time order) with a bad field."""

    def __init__(self, path):
        self.path = path
        self.count = 0
        # (start time, entry index, Exchange or InputError, url, status, _was_pushed, _transferSize)
        self.rows: list[tuple] = []
        self.refused: InputError | None = None
        self.cached = self.no_network = 0

    def add(self, entry) -> None:
        """Read the next entry (see the class docstring)."""
        i, path, where = self.count, self.path, f"entry {self.count}"
        self.count += 1
        if self.refused is not None or self.count > limits.MAX_ENTRIES:
            return  # the answer is that refusal: the rest is only read
        found = None if _NATIVE_ENTRY is None else _NATIVE_ENTRY(entry, where, path)
        if found is not None:  # the common entry, read in C: _check's time and _exchange's answer
            t, exchange, status, transfer = found
            self.rows.append((t, i, exchange, entry["request"]["url"], status, entry.get("_was_pushed"), transfer))
            return
        try:
            t = self._check(entry, where)
        except InputError as exc:
            self.refused, self.rows = exc.with_traceback(None), []
            return
        if t is False:
            return
        url = entry["request"]["url"]
        try:
            exchange, status, transfer = _read_exchange(entry, where, path)
        except InputError as exc:
            self.rows.append((t, i, exc.with_traceback(None), url, None, None, None))
            return
        self.rows.append((t, i, exchange, url, status, entry.get("_was_pushed"), transfer))

    def _check(self, entry, where):
        """The entry's start time, or False for an entry that left no exchange on the network."""
        path = self.path
        if not isinstance(entry, dict):
            raise InputError("is not an object.", path=path, where=where)
        if entry.get("_fromCache") in ("memory", "disk"):
            self.cached += 1  # served by the browser's cache: no exchange on the wire
            return False
        request = entry.get("request")
        if not isinstance(request, dict):
            raise InputError("has no request.", path=path, where=where)
        url = request.get("url")
        if not isinstance(url, str) or not url:
            raise InputError("request has no url.", path=path, where=where)
        try:
            scheme, netloc = scheme_and_netloc(url)  # ValueError: a malformed IPv6 literal, NFKC-invalid netloc
        except ValueError as exc:
            raise InputError(f"request url {url[:80]!r} cannot be parsed ({exc}).", path=path, where=where) from None
        if scheme.lower() in harfields.NO_NETWORK_SCHEMES:
            self.no_network += 1  # data:, blob: ...: the browser made no request on the network
            return False
        if not netloc and request.get("method", "GET") != "CONNECT":
            raise InputError(f"request url {url[:80]!r} is not absolute.", path=path, where=where)
        if netloc not in _NETLOCS_PASSED:
            limits.check_netloc(netloc, url, path=path, where=where)
            if len(_NETLOCS_PASSED) >= 1 << 12:
                _NETLOCS_PASSED.clear()
            _NETLOCS_PASSED.add(netloc)  # a pure function of the netloc: the C reader's to skip
        return _parse_time(entry.get("startedDateTime"), where, path)

    def trace(self, log: dict) -> Trace:
        """The ``Trace`` of the entries read, with ``log``'s pages and producer (``log``: the
        HAR's log object, its entries not needed)."""
        path = self.path
        if self.count > limits.MAX_ENTRIES:
            raise InputError(
                f"the HAR has {self.count} entries, above the limit of {limits.MAX_ENTRIES} (simulator.traces.limits).",
                path=path,
            )
        if self.refused is not None:
            raise self.refused
        rows = self.rows
        # Sort by start time; entries without one keep their place at the end.
        if log.get("_untimed") is True:  # written by write_har for a trace without times
            rows = [(None,) + r[1:] for r in rows]
        earliest = datetime.min.replace(tzinfo=timezone.utc)
        rows.sort(key=lambda r: (r[0] is None, r[0] or earliest, r[1]))
        t0 = rows[0][0] if rows else None
        for t, i, *_ in rows:
            if t is not None and t0 is not None and abs((t - t0).total_seconds()) > limits.MAX_SPAN_S:
                raise InputError(
                    f"startedDateTime is {(t - t0).total_seconds():.0f} s from the first entry's, "
                    f"above the limit of {limits.MAX_SPAN_S:.0e} s.",
                    path=path,
                    where=f"entry {i}",
                )
        for row in rows:
            if isinstance(row[2], InputError):
                raise row[2]

        exchanges, transfer = [], []
        unknown_sizes = 0
        firefox = harfields.firefox_log(log)
        asked: dict[str, int] = {}  # URL -> entries asking for it (Firefox's pushes are asked once)
        for row in rows:
            asked[row[3]] = asked.get(row[3], 0) + 1
        for index, (t, _, e, url, status, was_pushed, size) in enumerate(rows):
            e.index = index
            e.start_s = (t - t0).total_seconds() if t is not None and t0 is not None else None
            e.pushed = (was_pushed is not None or firefox) and (  # neither: no rule of harfields.pushed holds
                harfields.pushed({"_was_pushed": was_pushed}, status, e.timings, firefox, asked[url] == 1) is not None
            )
            exchanges.append(e)
            unknown_sizes += e.body_bytes_from == "unknown" and e.status not in (None, 204, 304)
            transfer.append(size)
        self.rows = []
        cached, no_network = self.cached, self.no_network

        pages = []
        for j, p in enumerate(log.get("pages") or ()):
            if not isinstance(p, dict) or not isinstance(p.get("id"), str):
                raise InputError("has no id.", path=path, where=f"page {j}")
            pt = None if log.get("_untimed") is True else _parse_time(p.get("startedDateTime"), f"page {j}", path)
            timings = p.get("pageTimings") if isinstance(p.get("pageTimings"), dict) else {}
            cached_view = p.get("_cached")
            pages.append(
                Page(
                    id=p["id"],
                    title=p.get("title") if isinstance(p.get("title"), str) else None,
                    start_s=(pt - t0).total_seconds() if pt is not None and t0 is not None else None,
                    url=next((p[k] for k in ("_URL", "_url") if isinstance(p.get(k), str)), None),
                    on_load_s=_page_time(timings.get("onLoad"), "onLoad", path, f"page {j}"),
                    on_content_load_s=_page_time(timings.get("onContentLoad"), "onContentLoad", path, f"page {j}"),
                    repeat_view=bool(cached_view) if isinstance(cached_view, (int, bool)) else None,
                    viewport_images=harfields.viewport_images(p),
                )
            )

        meta = {"transfer_sizes": transfer}
        if cached:
            meta["served_from_cache"] = cached
        if no_network:
            meta["not_on_network"] = no_network
        if unknown_sizes:
            meta["unknown_body_sizes"] = unknown_sizes
        creator = log.get("creator")
        if isinstance(creator, dict):
            meta["creator"] = f"{creator.get('name', '')} {creator.get('version', '')}".strip()
        browser = log.get("browser")
        if isinstance(browser, dict) and isinstance(browser.get("name"), str):
            meta["browser"] = f"{browser.get('name', '')} {browser.get('version', '')}".strip()
        if t0 is not None:
            meta["started"] = t0.isoformat()
        return Trace(exchanges=exchanges, format="har", source=path, pages=pages, meta=meta)


def _exchange(entry: dict, where: str, path) -> tuple[Exchange, int | None, int | None]:
    """One HAR entry -> its ``Exchange`` (the field rules are ``harfields``'), its status and
    its ``response._transferSize`` when that is a JSON integer (``trace.meta["transfer_sizes"]``);
    the index, start time and push flag, which need the other entries, are left to
    ``_EntryReader.trace``."""
    request = entry["request"]
    url = request["url"]
    response = entry.get("response")
    if type(response) is not dict and not isinstance(response, dict):
        response = {}
    no_request = entry.get("_noRequestHeaders") is True  # write_har: a response-only list
    req, pseudo = (None, {}) if no_request else _request_headers_pseudo(request, where, path)
    resp, header_text_bytes = _response_headers_sized(response, where, path) if response else (None, None)
    scheme = _s(pseudo.get(b":scheme", b"")) or urlsplit(url).scheme or "https"
    authority = _s(pseudo.get(b":authority", b""))
    if authority and authority not in _AUTHORITIES_PASSED:  # the origin is made of it: a host a client could connect to
        limits.check_authority(authority, path=path, where=where)
        if len(_AUTHORITIES_PASSED) >= 1 << 12:
            _AUTHORITIES_PASSED.clear()
        _AUTHORITIES_PASSED.add(authority)
    status = response.get("status")
    if not isinstance(status, int):
        status = None
    if isinstance(status, bool) or status is not None and not -1 <= status <= 999:  # RFC 9110 15: 3 digits
        raise InputError(f"response.status {status!r} is not a three-digit status code.", path=path, where=where)
    wire, decoded, size_from, transfer = harfields.wire_and_decoded_sizes(
        entry, response, status, path, where, header_text_bytes
    )
    if not isinstance(response.get("_transferSize"), int):
        transfer = None  # a string of digits is a size, not a transfer size for the meta
    req_body = request.get("bodySize")
    if req_body is not None and (type(req_body) is not int or not -1 <= req_body <= limits.MAX_BODY_BYTES):
        req_body = harfields.size_field(req_body, "request.bodySize", path, where)  # else its answer, or -1
    if not req_body or req_body < 0:  # none, 0 or "not known" (-1): the posted text's bytes
        post = request.get("postData") if isinstance(request.get("postData"), dict) else {}
        req_body = len(_b(str(post.get("text") or "")))
    init_url, init_type = harfields.initiator(entry)
    if init_url is not None:
        init_url = _join(url, init_url, "_initiator url", where, path)
    content = response.get("content") if isinstance(response.get("content"), dict) else {}
    content_type = location = None  # the first of each
    for n, v in resp or ():
        if n == b"content-type":
            if content_type is None:
                content_type = v
        elif n == b"location" and location is None:
            location = v
    mime = (_s(content_type) if content_type is not None else "") or str(
        content.get("mimeType") or entry.get("_contentType") or ""
    )
    rtype, rtype_from = harfields.resource_type(entry, url, mime, init_type, status)
    if no_request and not isinstance(entry.get("_resourceType"), str):
        rtype, rtype_from = None, None  # a response-only header list (e.g. from QIF): no resource
    location = (_s(location) if location is not None else None) or response.get("redirectURL")
    if not isinstance(location, str):
        location = None
    timings = harfields.wpt_timings(entry, _timings(entry.get("timings"), where, path), path, where)
    conn = entry.get("connection")
    if conn in (None, ""):
        conn = entry.get("_socket")
    blocking = entry.get("_renderBlocking")
    page = entry.get("pageref")
    return (
        Exchange(
            index=-1,
            request_headers=req,
            response_headers=resp,
            request_body_bytes=req_body,
            response_body_bytes=wire,
            origin=_origin(scheme, authority) if authority else None,
            connection=str(conn) if conn not in (None, "") else None,
            page=page if isinstance(page, str) else None,
            priority=harfields.priority(entry),
            resource_type=rtype,
            initiator=init_url,
            initiator_type=init_type,
            url=None if no_request else url,
            timings=timings,
            response_content_bytes=decoded if decoded != wire else None,
            http_version=harfields.http_version(entry, response, request),
            redirect_url=_join(url, location, "redirect location", where, path)
            if location and status and 300 <= status < 400
            else None,
            resource_type_from=rtype_from,
            render_blocking=blocking if isinstance(blocking, str) else None,
            body_bytes_from=size_from,
            internal=harfields.internal_redirect(response, status),
            document_text=harfields.document_text(content, rtype, path, where),
        ),
        status,
        transfer,
    )


def _read_exchange(entry: dict, where: str, path) -> tuple[Exchange, int | None, int | None]:
    """``_exchange``, by its C twin (``_harheaders.exchange``) for the common entry it reads:
    the same answer, or None for any other entry, which ``_exchange`` reads."""
    if _NATIVE_EXCHANGE is not None:
        found = _NATIVE_EXCHANGE(entry, where, path)
        if found is not None:
            return found
    return _exchange(entry, where, path)


def _join(base: str, ref: str, what: str, where: str, path) -> str:
    """``ref`` resolved against ``base`` (RFC 3986 5.2); a reference ``urlsplit`` cannot read
    (a malformed IPv6 literal, a host NFKC makes invalid) is an ``InputError`` naming ``what``."""
    try:
        if "//" in ref:
            joined = _join_with_authority(ref, scheme_and_netloc(base)[0])
            if joined is not None:
                return joined
        return urljoin(base, ref)
    except ValueError as exc:
        raise InputError(f"{what} {ref[:80]!r} cannot be parsed ({exc}).", path=path, where=where) from None


@functools.lru_cache(maxsize=1 << 12)
def _join_with_authority(ref: str, base_scheme: str) -> str | None:
    """``urljoin(base, ref)`` for a ``ref`` with an authority (RFC 3986 5.2.2: the base's
    scheme at most is used, for a network-path reference), or None for another ``ref``; memoized
    on the base's scheme alone, since every entry has its own URL but a page's initiators
    are few."""
    if joined_as_is(ref):
        return ref
    if not urlsplit(ref, base_scheme).netloc:
        return None
    return _urljoin(base_scheme + "://", ref)


def _page_time(ms, field: str = "pageTimings", path=None, where=None) -> float | None:
    """A pageTimings value (ms) in seconds; -1, 0, missing or not a number -> None; an
    ``Infinity``, ``NaN`` or a time above ``limits.MAX_TIME_MS`` is an ``InputError``."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return None
    if ms > limits.MAX_TIME_MS or (isinstance(ms, float) and not math.isfinite(ms)):
        raise InputError(
            f"pageTimings.{field} is {limits.shown(ms)}, not a finite number of milliseconds up to "
            f"{limits.MAX_TIME_MS:.0e}.",
            path=path,
            where=where,
        )
    if not ms > 0:
        return None
    return float(ms) / 1000.0


# The netlocs of request URLs that passed limits.check_netloc (a pure function of the netloc).
_NETLOCS_PASSED: set[str] = set()
# The :authority values that passed limits.check_authority (a pure function of the value): a
# page asks a few hosts for thousands of resources.
_AUTHORITIES_PASSED: set[str] = set()


@functools.lru_cache(maxsize=1 << 12)
def _origin(scheme: str, authority: str) -> str:
    """``scheme://host[:port]`` without the scheme's default port (RFC 6454 section 4), so
    ``https://a.com:443`` and ``https://a.com`` are one origin and ``http://a.com`` another."""
    scheme = scheme.lower()
    host, sep, port = authority.rpartition(":")
    if sep and "]" not in port and port == {"http": "80", "https": "443"}.get(scheme):
        authority = host
    return f"{scheme}://{authority.lower()}"


def _configure_native():
    """The C module whose ``exchange`` and ``entry`` are the twins of ``_exchange`` and of
    ``_EntryReader.add``'s reading (``_check``, then ``_exchange``), given the memos, helpers and
    limits they read; or None (not built, an older build without them, or the reference asked
    for: WORKBENCH_PURE_PYTHON=1)."""
    native = _harheaders_native
    if native is None or not hasattr(native, "entry"):
        return None
    native.configure_exchange(
        _NATIVE_MEMO,
        _field_name,
        _header_fields.__wrapped__,
        _AUTHORITIES_PASSED,
        Exchange,
        _join,
        _origin,
        harfields.priority,
        harfields.http_version,
        harfields._CHROME_TYPES,
        harfields.WPT_TIMING_FIELDS,
        _NETLOCS_PASSED,
        _parse_time,
        _join_with_authority,
        harfields._folded_version,
        {},  # a non-blank _priority -> harfields.priority's answer
        limits.MAX_BODY_BYTES,
        float(limits.MAX_TIME_MS),
        limits.MAX_FIELD_VALUE_BYTES,
        harfields._STATUS_LINE_BYTES,
    )
    return native


_NATIVE_EXCHANGE = _NATIVE_ENTRY = None
if (_native := _configure_native()) is not None:
    _NATIVE_EXCHANGE, _NATIVE_ENTRY = _native.exchange, _native.entry


def _har_text(path: str, data: bytes | None = None) -> str:
    """The HAR's text: its bytes as UTF-8 (a byte-order mark dropped)."""
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    if not data or data.isspace():  # not data.strip(), without copying the file
        raise InputError("the file is empty.", path=path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"the HAR is not UTF-8 text ({exc.reason}).", path=path, where=f"byte offset {exc.start}"
        ) from None


def _parse_json(text: str, path: str):
    """The whole document at once; its syntax errors as ``InputError``s."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        what = "the HAR is truncated" if exc.pos >= len(text.rstrip()) else "the HAR is not valid JSON"
        raise InputError(f"{what} ({exc.msg}).", path=path, where=f"line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise InputError(
            "the HAR's JSON is nested deeper than the parser goes (simulator.traces.limits).", path=path
        ) from None
    except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits
        raise InputError(f"the HAR holds a number the parser refuses ({str(exc).split(';')[0]}).", path=path) from None


def _read_json(path: str, data: bytes | None = None):
    return _parse_json(_har_text(path, data), path)


def load_har(path: str, data: bytes | None = None) -> Trace:
    """Load a HAR 1.2 file (``data``: its bytes, when already read).

    The entries are read one at a time (``harjson.walk``), so that the whole document is
    never held as Python objects; a document ``walk`` does not take (another shape, a
    syntax error) is read whole, which gives the same trace or the same refusal."""
    path = str(path)
    text = _har_text(path, data)
    reader = _EntryReader(path)
    # The import makes hundreds of thousands of objects and no reference cycles: the cyclic
    # collector's passes over them (the entries' and then the trace's) found nothing and
    # took a fifth of its time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            log = harjson.walk(text, reader.add)
        except (harjson.NotStreamable, ValueError, RecursionError):  # JSONDecodeError is a ValueError
            log = None
        if log is not None:
            return reader.trace(log)
    finally:
        if collecting:
            gc.enable()
    return parse_har(_parse_json(text, path), path=path)
