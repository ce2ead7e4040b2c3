"""What a HAR entry means, across the producers that write HAR.  Written by hand.

HAR 1.2 leaves much to its producers, and each fills it its own way (Chrome DevTools,
chrome-har / Browsertime, WebPageTest, Firefox, HAR capturers).  This module holds the
rules that turn one entry's fields into the facts the workbench uses, each with the field
it came from, so ``workbench trace info`` can show why:

* **Resource type**: ``_resourceType`` when the producer wrote it (Chrome's names,
  folded to document, stylesheet, script, font, image, xhr, fetch, media, other); else the
  MIME type (``content.mimeType``, the ``content-type`` field, WebPageTest's
  ``_contentType``); else the URL's file extension; else the initiator (a request a
  script made is a fetch); else ``other``.
* **Bytes on the wire** (the response body as it crossed the network, what transfer time
  is made of) kept apart from the **decoded size** (the body after content coding, what a
  compression dictionary or a codec sees):

  - wire: ``response.bodySize`` when it is known (>= 0); a 0 counts only where no body
    came (1xx, 204, 304, an empty content, or a transfer no larger than its headers),
    since some producers write 0 for "unknown"; and not when a content-coded body's
    ``bodySize`` equals its ``content.size`` while ``_transferSize`` is smaller (an
    exporter that wrote the decoded size there: ``_transferSize`` is used).  Else ``_transferSize`` (Chrome: headers
    plus body on the wire) less ``headersSize``, or less the response's header bytes as
    HTTP/1.1 text when ``headersSize`` is unknown.  Else the decoded size less
    ``content.compression`` (the bytes the coding saved).  Else WebPageTest's
    ``_objectSize``.  Else unknown (0, and counted).
  - decoded: ``content.size`` when >= 0 (Firefox writes -1 when it kept no bodies); else
    the wire bytes plus ``content.compression``; else the wire bytes (no coding assumed).
* **HTTP version**: the many spellings (``h2``, ``HTTP/2.0``, WebPageTest's ``2 2``,
  ``spdy/3.1``, ``h3-29``, ``http/2+quic/46``, ``unknown``) folded to ``http/1.0``,
  ``http/1.1``, ``h2``, ``spdy``, ``h3`` or None; WebPageTest's ``_protocol`` first.
* **Initiator**: Chrome's ``_initiator`` object (type and URL, or the first URL of its
  call stack), WebPageTest's and chrome-har's ``_initiator`` URL string with
  ``_initiator_type`` or ``_initiator_detail`` (a JSON string).
* **Priority**: Chrome's DevTools names (VeryHigh ... VeryLow); WebPageTest's network
  priority names (HIGHEST, MEDIUM, LOW, LOWEST, IDLE) are mapped as DevTools maps them
  (HIGHEST is VeryHigh, MEDIUM is High, LOW is Medium, LOWEST is Low, IDLE is VeryLow).
* **Pushed** (HTTP/2 server push, RFC 9113 section 8.4: the response came without a request
  of the browser's): WebPageTest's and chrome-har's (Browsertime's, Chrome DevTools')
  ``_was_pushed`` when it is 1 or true (WebPageTest writes ``"1"`` too).  Firefox marks no
  field: its DevTools know nothing of the push and write the pushed response with
  ``response.status`` 0 and empty timings (every phase -1 or 0), so an entry of a HAR whose
  creator or browser is Firefox, with status 0, no phase above 0 and a URL no other entry of
  the HAR asks for (a status-0 entry whose URL is asked for again is an aborted request)
  counts as pushed.
* **WebPageTest's timings**: WebPageTest keeps its own per-entry fields, ``_dns_ms``,
  ``_connect_ms`` (the TCP handshake alone), ``_ssl_ms`` (the TLS handshake alone),
  ``_ttfb_ms``, ``_download_ms`` (some as strings of digits, -1 for "did not happen"), and the
  offsets from the page's start of each phase (``_dns_start``, ``_connect_start``,
  ``_ssl_start``, ``_load_start`` ...).  Its HAR ``timings`` follow HAR 1.2 (``connect`` holds
  ``ssl``: ``connect`` is ``_connect_ms + _ssl_ms``), but its ``startedDateTime`` is
  ``_load_start``, when the request was sent: the set-up phases it lists (``dns``,
  ``connect``) came before it, not after.  ``wpt_timings`` keeps these fields beside the
  standard phases (under their own names) and fills a standard phase the ``timings`` lack
  from them.
* **A document's text**: ``content.text`` of a document (base64 when ``content.encoding``
  is ``base64``), as DevTools' export "with content" and the lab's captures keep it: where
  in the document each tag the parser found was.
* **Internal redirect** (a redirect the browser made itself, nothing on the network: an HSTS
  host's http:// URL upgraded, RFC 6797 section 8.3, or ``upgrade-insecure-requests``): Chrome
  writes it as status 307 with ``statusText`` "Internal Redirect" and a
  ``Non-Authoritative-Reason`` response field.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import operator
import re
from urllib.parse import urlsplit

from ..errors import InputError
from .limits import MAX_BODY_BYTES, MAX_TIME_MS, number

__all__ = [
    "RESOURCE_TYPES",
    "resource_type",
    "wire_and_decoded_bytes",
    "http_version",
    "initiator",
    "priority",
    "response_header_bytes",
    "size_field",
    "NO_NETWORK_SCHEMES",
    "pushed",
    "firefox_log",
    "wpt_timings",
    "WPT_TIMING_FIELDS",
]

RESOURCE_TYPES = ("document", "stylesheet", "script", "font", "image", "xhr", "fetch", "media", "other")

# URL schemes whose "requests" never cross the network (HAR producers record some of them).
NO_NETWORK_SCHEMES = (
    "data",
    "blob",
    "about",
    "chrome",
    "chrome-extension",
    "moz-extension",
    "javascript",
    "file",
    "filesystem",
)

# Chrome's _resourceType values (DevTools' Network.ResourceType, lower-cased) -> ours.
_CHROME_TYPES = {
    "document": "document",
    "stylesheet": "stylesheet",
    "script": "script",
    "font": "font",
    "image": "image",
    "xhr": "xhr",
    "fetch": "fetch",
    "media": "media",
    "texttrack": "media",
    "eventsource": "fetch",
    "websocket": "other",
    "manifest": "other",
    "ping": "other",
    "cspviolationreport": "other",
    "preflight": "other",
    "signedexchange": "document",
    "prefetch": "other",
    "other": "other",
}

_EXTENSIONS = {
    "html": "document",
    "htm": "document",
    "xhtml": "document",
    "css": "stylesheet",
    "js": "script",
    "mjs": "script",
    "jsx": "script",
    "woff": "font",
    "woff2": "font",
    "ttf": "font",
    "otf": "font",
    "eot": "font",
    "png": "image",
    "jpg": "image",
    "jpeg": "image",
    "gif": "image",
    "webp": "image",
    "avif": "image",
    "svg": "image",
    "ico": "image",
    "bmp": "image",
    "jxl": "image",
    "mp4": "media",
    "webm": "media",
    "m3u8": "media",
    "ts": "media",
    "m4s": "media",
    "mp3": "media",
    "ogg": "media",
    "wav": "media",
    "mpd": "media",
    "json": "fetch",
    "xml": "fetch",
}


def _mime_type(mime: str) -> str | None:
    m = mime.split(";", 1)[0].strip().lower()
    if not m:
        return None
    if m in ("text/html", "application/xhtml+xml"):
        return "document"
    if m == "text/css":
        return "stylesheet"
    if "javascript" in m or "ecmascript" in m or m in ("text/jscript", "application/wasm"):
        return "script"
    if m.startswith("font/") or "font" in m or m in ("application/vnd.ms-fontobject",):
        return "font"
    if m.startswith("image/"):
        return "image"
    if m.startswith(("video/", "audio/")) or m in (
        "application/vnd.apple.mpegurl",
        "application/x-mpegurl",
        "application/dash+xml",
    ):
        return "media"
    if "json" in m or m.endswith("+xml") or m in ("text/xml", "application/xml"):
        return "fetch"
    return None  # text/plain, application/octet-stream ...: say nothing, look further


def _extension_type(url: str) -> str | None:
    path = urlsplit(url).path
    last = path.rsplit("/", 1)[-1]
    if "." not in last:
        return None
    return _EXTENSIONS.get(last.rsplit(".", 1)[-1].lower())


def resource_type(
    entry: dict, url: str, mime: str, initiator_type: str | None, status: int | None = None
) -> tuple[str, str]:
    """(type, the field it came from) for one HAR entry; see the module docstring."""
    given = entry.get("_resourceType")
    if isinstance(given, str) and given.strip():
        return _CHROME_TYPES.get(given.strip().lower(), "other"), "_resourceType"
    # A redirect's body is a notice about the move (often text/html): its MIME type says
    # nothing of what was asked for.
    kind = None if status is not None and 300 <= status < 400 else _mime_type(mime)
    if kind is not None:
        return kind, "mimeType"
    kind = _extension_type(url)
    if kind is not None:
        return kind, "url"
    if initiator_type == "script":
        return "fetch", "initiator"
    return "other", "default"


def response_header_bytes(headers) -> int:
    """The response header section's size as HTTP/1.1 text: ``name: value\\r\\n`` per field,
    a status line and the empty line (RFC 9112 section 2.1)."""
    size = _STATUS_LINE_BYTES
    if type(headers) is list:
        # Most lists: objects with a string name and value, summed at C speed.
        try:
            names, values = list(map(_NAME, headers)), list(map(_VALUE, headers))
        except (KeyError, TypeError):  # an object that is not one, or lacks a member
            names = values = None
        if names is not None and set(map(type, names)) <= _STR and set(map(type, values)) <= _STR:
            return size + sum(map(len, names)) + sum(map(len, values)) + 4 * len(names)
    for h in headers or ():
        if isinstance(h, dict):
            size += len(str(h.get("name", ""))) + len(str(h.get("value", ""))) + 4
    return size


_NAME, _VALUE = operator.itemgetter("name"), operator.itemgetter("value")
_STR = {str}
_STATUS_LINE_BYTES = len("HTTP/1.1 200 OK\r\n") + 2  # and the empty line that ends the section


def size_field(value, field: str, path=None, where=None) -> int | None:
    """A size in bytes, or None for a missing or "not known" one (-1); WebPageTest writes
    some as strings of digits.  Anything else that is not a plain finite number, or a size
    above ``limits.MAX_BODY_BYTES``, is an ``InputError`` naming ``field``."""
    return number(value, field, limit=MAX_BODY_BYTES, path=path, where=where)


def _content_coded(headers) -> bool:
    """Whether a HAR header list names a content coding other than identity."""
    for h in headers if isinstance(headers, list) else ():
        if isinstance(h, dict) and str(h.get("name", "")).lower() == "content-encoding":
            return str(h.get("value", "")).strip().lower() not in ("", "identity")
    return False


def wire_and_decoded_bytes(
    entry: dict, response: dict, status: int | None, path=None, where=None, header_text_bytes: int | None = None
) -> tuple[int, int, str]:
    """(bytes on the wire, decoded bytes, the field the wire bytes came from); ``header_text_bytes``:
    ``response_header_bytes`` of the response's headers less its status line, when counted already."""
    return wire_and_decoded_sizes(entry, response, status, path, where, header_text_bytes)[:3]


def wire_and_decoded_sizes(
    entry: dict, response: dict, status: int | None, path=None, where=None, header_text_bytes: int | None = None
) -> tuple[int, int, str, int | None]:
    """``wire_and_decoded_bytes`` and the ``_transferSize`` read on the way (``size_field``'s answer)."""
    content = response.get("content")
    if type(content) is not dict and not isinstance(content, dict):
        content = {}
    # size_field of each, in this order (the first refused is the message); a JSON integer in
    # range, most sizes, is its own answer without the call (-1, "not known", is None, as is a
    # missing size).
    limit = MAX_BODY_BYTES
    body = response.get("bodySize")
    if body is not None and (type(body) is not int or not -1 <= body <= limit):
        body = size_field(body, "response.bodySize", path, where)
    elif body == -1:
        body = None  # "not known"
    decoded = content.get("size")
    if decoded is not None and (type(decoded) is not int or not -1 <= decoded <= limit):
        decoded = size_field(decoded, "response.content.size", path, where)
    elif decoded == -1:
        decoded = None  # "not known"
    saved = content.get("compression")
    if saved is not None and (type(saved) is not int or not -1 <= saved <= limit):
        saved = size_field(saved, "response.content.compression", path, where)
    elif saved == -1:
        saved = None  # "not known"
    saved = saved or 0
    transfer = response.get("_transferSize")
    if transfer is not None and (type(transfer) is not int or not -1 <= transfer <= limit):
        transfer = size_field(transfer, "response._transferSize", path, where)
    elif transfer == -1:
        transfer = None  # "not known"
    headers_size = response.get("headersSize")
    if headers_size is not None and (type(headers_size) is not int or not -1 <= headers_size <= limit):
        headers_size = size_field(headers_size, "response.headersSize", path, where)
    elif headers_size == -1:
        headers_size = None  # "not known"
    # The header section's size is needed only with _transferSize (which holds headers and body).
    if headers_size or transfer is None:
        header_bytes = headers_size
    elif header_text_bytes is not None:
        header_bytes = _STATUS_LINE_BYTES + header_text_bytes
    else:
        header_bytes = response_header_bytes(response.get("headers"))
    no_body = (
        (status is not None and (status < 200 or status in (204, 304)))
        or decoded == 0
        or (transfer is not None and transfer <= header_bytes)
    )
    wire, source = None, "unknown"
    if (
        body is not None
        and decoded is not None
        and body == decoded
        and body > 0
        and transfer is not None
        and 0 < transfer < body
        and _content_coded(response.get("headers"))
    ):
        # A coded body (Content-Encoding, RFC 9110 section 8.4) whose bodySize is its decoded
        # size (some exporters write content.size there): _transferSize, the bytes that came
        # over the network, says what was on the wire.
        wire, source = max(0, transfer - header_bytes), "_transferSize"
    elif body is not None and (body > 0 or no_body):
        wire, source = body, "bodySize"
    elif transfer is not None and transfer > 0:
        wire, source = max(0, transfer - header_bytes), "_transferSize"
    elif decoded is not None:
        wire, source = max(0, decoded - saved), "content.size"
    else:
        obj = size_field(entry.get("_objectSize"), "_objectSize", path, where)
        if obj is not None:
            wire, source = obj, "_objectSize"
    if wire is None:
        wire = 0
    if decoded is None:
        decoded = wire + saved if source != "unknown" else 0
    return wire, decoded, source, transfer


def http_version(entry: dict, response: dict, request: dict) -> str | None:
    """The HTTP version the exchange used, folded (see the module docstring)."""
    for text in (entry.get("_protocol"), response.get("httpVersion"), request.get("httpVersion")):
        v = _version(text)
        if v is not None:
            return v
    return None


def _version(text) -> str | None:
    if not isinstance(text, str):
        return None
    return _folded_version(text)


@functools.lru_cache(maxsize=1 << 8)
def _folded_version(text: str) -> str | None:
    """``_version`` of a string, memoized: a HAR spells its few versions on every entry."""
    t = text.strip().lower()
    if not t or t == "unknown":
        return None
    if t.startswith(("h3", "http/3", "quic", "http/2+quic")) or re.match(r"^3(\s|$|\.)", t):
        return "h3"
    if t.startswith("spdy"):
        return "spdy"
    if t.startswith(("h2", "http/2")) or re.match(r"^2(\s|$|\.)", t):
        return "h2"
    if t in ("http/1.1", "1.1"):
        return "http/1.1"
    if t in ("http/1.0", "1.0", "http/0.9"):
        return "http/1.0"
    return None


def initiator(entry: dict) -> tuple[str | None, str | None]:
    """(initiator URL, initiator type) from Chrome's object or the URL-string forms."""
    init = entry.get("_initiator")
    kind = entry.get("_initiator_type") if isinstance(entry.get("_initiator_type"), str) else None
    if isinstance(entry.get("_initiator_detail"), str) and not isinstance(init, dict):
        try:
            detail = json.loads(entry["_initiator_detail"])
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            detail = None
        if isinstance(detail, dict):
            kind = kind or (detail.get("type") if isinstance(detail.get("type"), str) else None)
            if not isinstance(init, str) or not init:
                init = detail
    if isinstance(init, str):  # WebPageTest, chrome-har: the initiator's URL (its type may be absent)
        return init.strip() or None, kind
    if not isinstance(init, dict):
        return None, kind
    kind = init.get("type") if isinstance(init.get("type"), str) else kind
    url = init.get("url") if isinstance(init.get("url"), str) else None
    stack = init.get("stack")
    while not url and isinstance(stack, dict):  # the first URL found in the call stack
        for frame in stack.get("callFrames") or ():
            if isinstance(frame, dict) and isinstance(frame.get("url"), str) and frame["url"]:
                url = frame["url"]
                break
        stack = stack.get("parent")
    return url or None, kind


# net::RequestPriority names (WebPageTest) -> DevTools' names, as DevTools maps them.
_NET_PRIORITY = {
    "highest": "VeryHigh",
    "medium": "High",
    "low": "Medium",
    "lowest": "Low",
    "idle": "VeryLow",
    "throttled": "VeryLow",
}
_DEVTOOLS_PRIORITY = {"veryhigh": "VeryHigh", "high": "High", "medium": "Medium", "low": "Low", "verylow": "VeryLow"}


def priority(entry: dict) -> str | None:
    """The request priority in DevTools names (VeryHigh .. VeryLow) from ``_priority`` or ``_initialPriority``."""
    value = entry.get("_priority")
    if not isinstance(value, str) or not value.strip():
        value = entry.get("_initialPriority")
    if not isinstance(value, str) or not value.strip():
        return None
    v = value.strip()
    if v.isupper():  # WebPageTest writes net priorities in capitals
        return _NET_PRIORITY.get(v.lower(), None)
    return _DEVTOOLS_PRIORITY.get(v.lower().replace(" ", ""), None)


def viewport_images(page: dict) -> tuple[str, ...] | None:
    """The page's ``_viewportImages`` (the lab's: the URLs of the images in the viewport when
    first laid out), or None when the producer wrote none or not a list of URLs."""
    value = page.get("_viewportImages")
    if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
        return None
    return tuple(value)


def _flag(value) -> bool:
    """A producer's boolean: true, 1 or the strings "1"/"true" (WebPageTest writes both forms)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == 1
    return isinstance(value, str) and value.strip().lower() in ("1", "true")


def firefox_log(log: dict) -> bool:
    """Whether the HAR was written by Firefox (``log.creator`` or ``log.browser`` names it)."""
    for key in ("creator", "browser"):
        part = log.get(key)
        if isinstance(part, dict) and isinstance(part.get("name"), str) and "firefox" in part["name"].lower():
            return True
    return False


def pushed(entry: dict, status: int | None, timings: dict | None, firefox: bool, url_asked_once: bool) -> str | None:
    """The field that says the response was pushed (see the module docstring), or None.
    ``firefox``: the HAR is Firefox's; ``url_asked_once``: no other entry has this URL."""
    if _flag(entry.get("_was_pushed")):
        return "_was_pushed"
    if firefox and status == 0 and url_asked_once:
        phases = [v for k, v in (timings or {}).items() if not k.startswith("_")]
        if all(isinstance(v, (int, float)) and v <= 0 for v in phases):
            return "status 0, no timings (Firefox)"
    return None


def internal_redirect(response: dict, status: int | None) -> bool:
    """True when the entry is a redirect the browser made itself (see the module docstring)."""
    if status is None or not 300 <= status < 400:
        return False
    if response.get("statusText") == "Internal Redirect":
        return True
    headers = response.get("headers")
    return isinstance(headers, list) and any(
        isinstance(h, dict) and str(h.get("name", "")).lower() == "non-authoritative-reason" for h in headers
    )


def document_text(content: dict, resource_type: str | None, path=None, where=None) -> str | None:
    """A document's body as text when the HAR kept it (``content.text``, base64 when
    ``content.encoding`` says so, HAR 1.2), for where its tags are; None for other types or
    when absent.  A body that says it is base64 and is not is bad input."""
    text = content.get("text")
    if resource_type != "document" or not isinstance(text, str) or not text:
        return None
    if content.get("encoding") == "base64":
        try:
            text = base64.b64decode(text, validate=True).decode("utf-8", errors="replace")
        except (binascii.Error, ValueError):
            raise InputError("response.content.text says base64 (content.encoding) and is not.", path=path, where=where)
    return text


# WebPageTest's own timing fields (ms) kept beside the HAR phases: durations, then offsets
# from the page's start.
WPT_TIMING_FIELDS = (
    "_dns_ms",
    "_connect_ms",
    "_ssl_ms",
    "_ttfb_ms",
    "_download_ms",
    "_dns_start",
    "_connect_start",
    "_ssl_start",
    "_load_start",
)


def wpt_timings(entry: dict, timings: dict | None, path=None, where=None) -> dict | None:
    """``timings`` with WebPageTest's own fields added (those it wrote as numbers >= 0) and the standard
    phases it lacks (absent or -1) filled from them: ``dns`` from ``_dns_ms``, ``ssl`` from
    ``_ssl_ms``, ``connect`` from ``_connect_ms`` plus ``_ssl_ms`` (HAR 1.2: ``ssl`` is inside
    ``connect``), ``wait`` from ``_ttfb_ms``, ``receive`` from ``_download_ms``.  ``timings``
    itself when the entry has none of them."""
    own = {}
    for key in WPT_TIMING_FIELDS:
        if key in entry:
            try:
                value = number(entry[key], key, limit=MAX_TIME_MS, path=path, where=where, integer=False)
            except InputError:
                continue  # an extra the workbench only reads where the HAR phases lack it
            if value is not None:
                own[key] = value
    if not own:
        return timings
    out = dict(timings or {})

    def lacks(phase):
        v = out.get(phase)
        return not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0

    fill = {
        "dns": own.get("_dns_ms"),
        "ssl": own.get("_ssl_ms"),
        "wait": own.get("_ttfb_ms"),
        "receive": own.get("_download_ms"),
    }
    if "_connect_ms" in own:
        fill["connect"] = own["_connect_ms"] + own.get("_ssl_ms", 0)
    for phase, value in fill.items():
        if value is not None and lacks(phase):
            out[phase] = value
    out.update(own)
    return out
