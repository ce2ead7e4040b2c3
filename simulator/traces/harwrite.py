"""HAR 1.2 writer: ``write_har`` and ``har_dict`` (``simulator.traces.har`` re-exports both).

``write_har(trace, path)`` writes a valid HAR 1.2 file that ``har.load_har`` reads back to
the same header lists, sizes, start times, pages and extras (see ``simulator.traces.har``
for the two custom fields, ``log._untimed`` and ``entry._noRequestHeaders``).  Header bytes
are converted to JSON text as UTF-8 (undecodable bytes survive via surrogate escapes).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from ._io import atomic_write
from .model import HeaderList, Trace

__all__ = ["write_har", "har_dict"]


def _s(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _har_headers(headers: HeaderList | None, skip=()) -> list[dict]:
    return [{"name": _s(n), "value": _s(v)} for n, v in headers or () if n not in skip]


def _http_version(headers: HeaderList | None) -> str:
    return "h2" if headers and headers[0][0].startswith(b":") else "HTTP/1.1"


def har_dict(trace: Trace, started: datetime | None = None) -> dict:
    """The HAR 1.2 document for ``trace`` (a dict ready for ``json.dump``)."""
    if started is None:
        started = datetime.fromisoformat(trace.meta.get("started", "2024-06-01T12:00:00+00:00"))
    transfer = trace.meta.get("transfer_sizes") or []

    def when(start_s):
        t = started + timedelta(seconds=start_s or 0.0)
        return t.isoformat(timespec="microseconds")

    entries = []
    for k, e in enumerate(trace.exchanges):
        req = e.request_headers or ()
        pseudo = dict(h for h in req if h[0].startswith(b":"))
        url = e.url
        if url is None and e.request_headers is None:
            url = "https://unknown.invalid/"  # RFC 6761 .invalid: no request was captured
        elif url is None:
            scheme = _s(pseudo.get(b":scheme", b"https"))
            host = pseudo.get(b":authority") or next((v for n, v in req if n == b"host"), b"unknown.invalid")
            url = f"{scheme}://{_s(host)}{_s(pseudo.get(b':path', b'/'))}"
        status = e.status or 0
        ctype = next((_s(v) for n, v in e.response_headers or () if n == b"content-type"), "")
        entry = {
            "startedDateTime": when(e.start_s),
            "time": sum(v for v in (e.timings or {}).values() if isinstance(v, (int, float)) and v > 0),
            "request": {
                "method": _s(pseudo.get(b":method", b"GET")),
                "url": url,
                "httpVersion": e.http_version or _http_version(req),
                "cookies": [],
                "headers": _har_headers(req),
                "queryString": [],
                "headersSize": -1,
                "bodySize": e.request_body_bytes,
            },
            "response": {
                "status": status,
                "statusText": "",
                "httpVersion": e.http_version or _http_version(e.response_headers),
                "cookies": [],
                "headers": _har_headers(e.response_headers, skip=(b":status",)),
                "content": {"size": e.decoded_body_bytes, "mimeType": ctype},
                "redirectURL": e.redirect_url or "",
                "headersSize": -1,
                "bodySize": e.response_body_bytes,
            },
            "cache": {},
            "timings": dict(e.timings) if e.timings else {"send": 0, "wait": 0, "receive": 0},
        }
        if e.document_text is not None:
            entry["response"]["content"]["text"] = e.document_text  # where its tags are (traces.doctext)
        if e.request_headers is None:
            entry["_noRequestHeaders"] = True
        if e.page is not None:
            entry["pageref"] = e.page
        if e.connection is not None:
            entry["connection"] = e.connection
        if e.priority is not None:
            entry["_priority"] = e.priority
        if e.resource_type is not None:
            entry["_resourceType"] = e.resource_type
        if e.render_blocking is not None:
            entry["_renderBlocking"] = e.render_blocking
        if e.pushed:
            entry["_was_pushed"] = 1
        if e.initiator is not None or e.initiator_type is not None:
            init = {"type": e.initiator_type or "other"}
            if e.initiator is not None:
                init["url"] = e.initiator
            entry["_initiator"] = init
        if k < len(transfer) and transfer[k] is not None:
            entry["response"]["_transferSize"] = transfer[k]
        entries.append(entry)

    pages = []
    for p in trace.pages:
        page = {"startedDateTime": when(p.start_s), "id": p.id, "title": p.title or "", "pageTimings": {}}
        for key, value in (("onLoad", p.on_load_s), ("onContentLoad", p.on_content_load_s)):
            if value is not None:
                page["pageTimings"][key] = round(value * 1000.0, 3)
        if p.url is not None:
            page["_URL"] = p.url
        if p.repeat_view is not None:
            page["_cached"] = int(p.repeat_view)
        if p.viewport_images is not None:
            page["_viewportImages"] = list(p.viewport_images)
        pages.append(page)
    log = {"version": "1.2", "creator": {"name": "http-workbench", "version": "0.1.0"}}
    if not trace.timed:
        log["_untimed"] = True  # HAR needs startedDateTime; this says the times are placeholders
    log.update(pages=pages, entries=entries)
    return {"log": log}


def write_har(trace: Trace, path: str, started: datetime | None = None) -> None:
    """Write ``trace`` as HAR 1.2, atomically (temporary file, then ``os.replace``)."""
    # Compact JSON, one entry per line (small files, readable diffs).  ensure_ascii:
    # undecodable header bytes travel as \udcXX escapes and come back intact.
    doc = har_dict(trace, started)
    entries = doc["log"].pop("entries")
    dump = lambda obj: json.dumps(obj, ensure_ascii=True, separators=(",", ":"))  # noqa: E731
    head = dump(doc)[:-2]  # without the closing "}}"
    body = ",\n".join(dump(e) for e in entries)
    text = f'{head},"entries":[\n{body}\n]}}}}\n'
    atomic_write(str(path), text.encode("ascii"))
