"""Load a page in a real Chromium and record a HAR 1.2 from the DevTools protocol.

Debian's ``chromium`` runs headless under ``playwright`` (its pip wheel's own driver; no
browser download: ``executable_path``).  Playwright's own HAR lacks Chrome's
``_initiator`` and ``_priority``, so the HAR is built here from the ``Network.*`` events
of a DevTools session on the page, the way DevTools' own HAR export builds it:

* ``requestWillBeSent``: URL, method, ``initiator`` -> ``_initiator`` (as Chrome gives it:
  parser with url and line, script with a call stack), ``request.initialPriority`` and
  later ``resourceChangedPriority`` -> ``_priority``, ``type`` -> ``_resourceType``
  (lower-case, as DevTools exports it), ``wallTime`` -> ``startedDateTime``;
* ``requestWillBeSentExtraInfo`` / ``responseReceivedExtraInfo``: the header fields as
  sent and received (for HTTP/2 and HTTP/3 with the pseudo-header fields, in order);
* ``responseReceived``: status, ``protocol`` -> ``httpVersion`` ("h2", "h3"),
  ``connectionId`` -> ``connection``, remote address, ``timing`` -> HAR ``timings``;
* ``responseReceivedEarlyHints`` -> ``_earlyHints`` (the 103's header fields);
* ``dataReceived`` -> ``content.size`` (decoded bytes) and ``bodySize`` (its
  ``encodedDataLength``: the body's bytes as received); ``loadingFinished.encodedDataLength``
  -> ``response._transferSize``; ``requestServedFromCache`` / ``fromDiskCache`` ->
  ``_fromCache`` ("memory" / "disk", as DevTools exports it);
* ``Network.getResponseBody`` once the page is done -> a document's ``content.text`` (as
  DevTools' export "with content"; documents only).

HAR ``timings`` follow DevTools' exporter: ``blocked`` from the request's issue to the
first of DNS / connect / send, ``dns``, ``connect`` (TLS included), ``ssl``, ``send``,
``wait`` (to the response headers), ``receive`` (to ``loadingFinished``), in ms, -1 when
not applicable.

The page is done when its ``load`` event has fired and no request has been in flight for
``quiet_s`` (a script's late fetches count), or at ``timeout_s``.  ``repeat_view`` loads the
page twice in one browser context and records the second (cached) view.  A NetLog
(``--log-net-log``) is written by Chromium itself when it exits; with one, the HAR's
header lists take the order they had on the wire from it (``apply_netlog_header_order``),
else request pseudo-header fields come in Chromium's order and the other fields in
DevTools' (sorted) order.

``idle_first`` (the lab's loads, ``capture.idle.wait_idle``) navigates only once the browser it launched is idle: a cold
Chromium spends its first second or so starting its processes, services and caches, and a page
loaded in that time has its early requests and parsing slowed by it, the more so the sooner
they come (measured in the lab: a 100 ms server time made a page's onLoad 0.23 s later cold
than warm, a 500 ms one not).  WebPageTest waits for an idle CPU before a test, and Lighthouse
loads ``about:blank`` first, for the same reason.

Wall-clock times are inherent to a real browser: two captures of the same page differ.
What is simulated from a capture afterwards is deterministic.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime, timezone

from .idle import wait_idle

__all__ = ["CHROMIUM", "chromium_path", "browse", "chromium_args", "QUIET_ARGS"]

CHROMIUM = "/usr/bin/chromium"


def chromium_path() -> str | None:
    """The system Chromium, when installed (``make system-deps``)."""
    path = os.environ.get("WORKBENCH_CHROMIUM", CHROMIUM)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


# A browser that fetches nothing of its own during a load.
QUIET_ARGS = (
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_args(origin_hostport: str, proto: str, spki_sha256_b64: str, netlog: str | None) -> list[str]:
    """Chromium flags for a capture: trust the server's key, resolve only loopback, force QUIC for h3, NetLog."""
    args = [
        f"--ignore-certificate-errors-spki-list={spki_sha256_b64}",
        *QUIET_ARGS,
        # Resolve nothing but loopback: a capture talks to the local server only.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]
    if proto == "h3":
        # Chromium learns HTTP/3 from alt-svc only after a first TCP visit; force it
        # for the local origin so the page's first request goes over QUIC.
        args += ["--enable-quic", f"--origin-to-force-quic-on={origin_hostport}"]
    else:
        args += ["--disable-quic"]
    if netlog:
        args += [f"--log-net-log={os.path.abspath(netlog)}", "--net-log-capture-mode=Default"]
    return args


# Chromium sends the request pseudo-header fields in this order (RFC 9113 8.3.1 allows any);
# DevTools reports header fields as a map sorted by name, so the order is restored here.
# The regular fields stay in DevTools' (alphabetical) order: the wire order of those is
# only in the NetLog.
CHROME_PSEUDO_ORDER = (":method", ":authority", ":scheme", ":path")


def _request_header_list(headers) -> list[dict]:
    fields = _header_list(headers)
    rank = {n: i for i, n in enumerate(CHROME_PSEUDO_ORDER)}
    pseudo = sorted((f for f in fields if f["name"].startswith(":")), key=lambda f: rank.get(f["name"], 99))
    return pseudo + [f for f in fields if not f["name"].startswith(":")]


def _iso(wall_s: float) -> str:
    return datetime.fromtimestamp(wall_s, timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _header_list(headers) -> list[dict]:
    if isinstance(headers, dict):
        return [{"name": k, "value": str(v)} for k, v in headers.items()]
    return [{"name": h.get("name", ""), "value": str(h.get("value", ""))} for h in headers or ()]


class _Recorder:
    """Collects a page session's ``Network.*`` and ``Page.*`` events."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.requests: dict[str, dict] = {}  # requestId -> state of the current hop
        self.done: list[dict] = []  # finished hops (redirects, completed loads)
        self.extra_req: dict[str, dict] = {}
        self.extra_resp: dict[str, dict] = {}
        self.inflight: set[str] = set()
        self.last_activity = None
        self.page_times: dict[str, float] = {}

    def _touch(self):
        self.last_activity = asyncio.get_running_loop().time()

    # -- event handlers (playwright calls them with the event's params) ----------------
    def will_be_sent(self, ev):
        self._touch()
        rid = ev["requestId"]
        old = self.requests.get(rid)
        if old is not None and ev.get("redirectResponse"):
            old["response"] = ev["redirectResponse"]
            old["end_ts"] = ev["timestamp"]
            old["redirect_url"] = ev["request"]["url"]
            old["extra_req"] = self.extra_req.pop(rid, None)
            old["extra_resp"] = self.extra_resp.pop(rid, None)
            self.done.append(old)
        req = ev["request"]
        self.requests[rid] = {
            "id": rid,
            "url": req["url"],
            "method": req.get("method", "GET"),
            "headers": req.get("headers", {}),
            "post": req.get("postData"),
            "priority": req.get("initialPriority"),
            "initiator": ev.get("initiator"),
            "type": ev.get("type"),
            "wall": ev.get("wallTime"),
            "ts": ev["timestamp"],
            "response": None,
            "received": 0,
            "received_encoded": 0,
            "encoded": None,
            "end_ts": None,
            "failed": None,
            "from_cache": None,
            "early_hints": None,
            "document_url": ev.get("documentURL"),
        }
        self.inflight.add(rid)

    def extra_request(self, ev):
        self.extra_req[ev["requestId"]] = ev

    def extra_response(self, ev):
        self.extra_resp[ev["requestId"]] = ev

    def priority(self, ev):
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["priority"] = ev.get("newPriority", r["priority"])

    def served_from_cache(self, ev):
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["from_cache"] = "memory"

    def response(self, ev):
        self._touch()
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["response"] = ev["response"]
            if ev.get("type"):
                r["type"] = ev["type"]
            if ev["response"].get("fromDiskCache") and not r["from_cache"]:
                r["from_cache"] = "disk"

    def early_hints(self, ev):
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["early_hints"] = ev.get("headers") or {}

    def data(self, ev):
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["received"] += int(ev.get("dataLength") or 0)
            r["received_encoded"] = r.get("received_encoded", 0) + int(ev.get("encodedDataLength") or 0)

    def finished(self, ev):
        self._touch()
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["end_ts"] = ev["timestamp"]
            r["encoded"] = ev.get("encodedDataLength")
        self.inflight.discard(ev["requestId"])

    def failed(self, ev):
        self._touch()
        r = self.requests.get(ev["requestId"])
        if r is not None:
            r["end_ts"] = ev["timestamp"]
            r["failed"] = ev.get("errorText") or "failed"
        self.inflight.discard(ev["requestId"])

    def page_event(self, name):
        def handler(ev):
            self._touch()
            self.page_times[name] = ev["timestamp"]

        return handler

    # -- the HAR -----------------------------------------------------------------------
    def hops(self) -> list[dict]:
        out = list(self.done)
        for rid, r in self.requests.items():
            r["extra_req"] = self.extra_req.get(rid)
            r["extra_resp"] = self.extra_resp.get(rid)
            out.append(r)
        return sorted(out, key=lambda r: r["ts"])


def _timings(r: dict) -> dict:
    """HAR timings (ms) from the DevTools ResourceTiming, as DevTools' HAR exporter does."""
    resp = r["response"] or {}
    t = resp.get("timing")
    end_ms = (r["end_ts"] - r["ts"]) * 1000 if r["end_ts"] is not None else 0.0
    if not t:
        return {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "send": 0,
            "wait": 0,
            "receive": round(max(end_ms, 0.0), 3),
            "ssl": -1,
        }
    issue_to_start = (t["requestTime"] - r["ts"]) * 1000

    def span(a, b):
        return round(t[b] - t[a], 3) if t.get(a, -1) >= 0 and t.get(b, -1) >= 0 else -1

    first = next((t[k] for k in ("dnsStart", "connectStart", "sendStart") if t.get(k, -1) >= 0), 0.0)
    send_end = t.get("sendEnd", 0.0)
    headers_end = t.get("receiveHeadersEnd", send_end)
    finish = (r["end_ts"] - t["requestTime"]) * 1000 if r["end_ts"] is not None else headers_end
    return {
        "blocked": round(max(issue_to_start + first, 0.0), 3),
        "dns": span("dnsStart", "dnsEnd"),
        "connect": span("connectStart", "connectEnd"),
        "ssl": span("sslStart", "sslEnd"),
        "send": round(max(send_end - t.get("sendStart", send_end), 0.0), 3),
        "wait": round(max(headers_end - send_end, 0.0), 3),
        "receive": round(max(finish - headers_end, 0.0), 3),
    }


def build_har(
    rec: _Recorder, page_url: str, *, browser_version: str, page_id: str = "page_1", comment: str = ""
) -> dict:
    """A HAR 1.2 document from the recorded events."""
    hops = [r for r in rec.hops() if not r["url"].startswith("data:")]
    entries = []
    for r in hops:
        resp = r["response"] or {}
        protocol = resp.get("protocol") or ""
        extra_req, extra_resp = r.get("extra_req"), r.get("extra_resp")
        req_headers = (extra_req or {}).get("headers") or resp.get("requestHeaders") or r["headers"]
        resp_headers = (extra_resp or {}).get("headers") or resp.get("headers") or {}
        timings = _timings(r)
        status = int(resp.get("status") or (extra_resp or {}).get("statusCode") or 0)
        size = r["received"]
        if not size and resp:
            cl = next((v for k, v in resp_headers.items() if k.lower() == "content-length"), None)
            size = int(cl) if cl and str(cl).isdigit() else 0
        transfer = 0 if r["from_cache"] == "memory" else r["encoded"]
        # HAR 1.2: bodySize is the body as received (compressed), content.size the decoded
        # body.  dataReceived's encodedDataLength adds up to the former when Chromium reports
        # it; when it does not (a body handed over at once), -1 ("not available", HAR 1.2) and
        # _transferSize (headers and body as received) says it; a cache hit's is its size.
        body_size = r["received_encoded"] if r["received_encoded"] > 0 else -1 if transfer and transfer > 0 else size
        entry = {
            "pageref": page_id,
            "startedDateTime": _iso(r["wall"]) if r["wall"] else _iso(0),
            "time": round(sum(v for k, v in timings.items() if k != "ssl" and v > 0), 3),
            "request": {
                "method": r["method"],
                "url": r["url"],
                "httpVersion": protocol,
                "cookies": [],
                "headers": _request_header_list(req_headers),
                "queryString": [],
                "headersSize": -1,
                "bodySize": len((r["post"] or "").encode()),
            },
            "response": {
                "status": status,
                "statusText": resp.get("statusText", ""),
                "httpVersion": protocol,
                "cookies": [],
                "headers": _header_list(resp_headers),
                "content": {"size": size, "mimeType": resp.get("mimeType", "")},
                "redirectURL": r.get("redirect_url") or "",
                "headersSize": -1,
                "bodySize": body_size,
                "_transferSize": int(transfer) if transfer is not None else -1,
            },
            "cache": {},
            "timings": timings,
            "serverIPAddress": resp.get("remoteIPAddress", ""),
            "_initiator": r["initiator"] or {"type": "other"},
            "_priority": r["priority"],
            "_resourceType": (r["type"] or "other").lower(),
        }
        if resp.get("connectionId") is not None:
            entry["connection"] = str(resp["connectionId"])
        if r["from_cache"]:
            entry["_fromCache"] = r["from_cache"]
        if r.get("text") is not None:
            entry["response"]["content"]["text"] = r["text"]
            if r.get("base64"):
                entry["response"]["content"]["encoding"] = "base64"
        if r["early_hints"] is not None:
            entry["_earlyHints"] = _header_list(r["early_hints"])
        if r["failed"]:
            entry["_error"] = r["failed"]
        entries.append(entry)
    first = hops[0] if hops else None
    timings = {}
    if first is not None:
        for name, key in (("DOMContentLoaded", "onContentLoad"), ("load", "onLoad")):
            if name in rec.page_times:
                timings[key] = round((rec.page_times[name] - first["ts"]) * 1000, 3)
    pages = [
        {
            "startedDateTime": _iso(first["wall"]) if first and first["wall"] else _iso(0),
            "id": page_id,
            "title": page_url,
            "pageTimings": timings,
        }
    ]
    log = {
        "version": "1.2",
        "creator": {"name": "http-workbench capture", "version": "0.1.0"},
        "browser": {"name": "Chromium", "version": browser_version},
        "pages": pages,
        "entries": entries,
    }
    if comment:
        log["comment"] = comment
    return {"log": log}


async def _settle(rec: _Recorder, loaded: asyncio.Event, quiet_s: float, deadline: float) -> None:
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        if (
            loaded.is_set()
            and not rec.inflight
            and rec.last_activity is not None
            and loop.time() - rec.last_activity >= quiet_s
        ):
            return
        await asyncio.sleep(0.05)


async def _document_bodies(cdp, rec: _Recorder) -> None:
    """Each document's body into its hop (``text``, and ``base64`` when so encoded), as DevTools'
    export "with content" writes ``content.text``: where in a document the parser met each tag
    is part of what the page was.  Documents only (the HAR stays small); one that Chromium no
    longer holds is left without."""
    for rid, r in rec.requests.items():
        if (r["type"] or "").lower() != "document" or r["response"] is None or r["failed"]:
            continue
        try:
            body = await asyncio.wait_for(cdp.send("Network.getResponseBody", {"requestId": rid}), 5.0)
        except Exception:  # noqa: BLE001 - evicted, or another target's frame: no body, no harm
            continue
        r["text"], r["base64"] = body.get("body", ""), bool(body.get("base64Encoded"))


async def browse(
    url: str,
    *,
    proto: str,
    spki_sha256_b64: str,
    repeat_view: bool = False,
    netlog: str | None = None,
    timeout_s: float = 30.0,
    quiet_s: float = 0.3,
    executable: str | None = None,
    on_view_start=None,
    launch_args: list[str] | None = None,
    init_script: str | None = None,
    page_timings_js: str | None = None,
    idle_first: bool = False,
) -> dict:
    """Load ``url`` in headless Chromium and return the HAR of the (last) view.
    ``on_view_start(view)`` is called before each navigation (0, then 1 for a repeat view).
    ``launch_args`` replace ``chromium_args`` (the lab's many origins); ``init_script`` runs
    in every document before its own scripts; ``page_timings_js`` is evaluated in the page
    once it is done and the object it returns is added to the page's ``pageTimings``;
    ``idle_first`` waits for the launched browser to be idle before the first navigation
    (``wait_idle``; the seconds waited go into the HAR's page as ``_idleWait_s``)."""
    from playwright.async_api import async_playwright

    executable = executable or chromium_path()
    if executable is None:
        raise RuntimeError(f"Chromium is not installed at {CHROMIUM} (make system-deps)")
    hostport = url.split("/")[2]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    rec = _Recorder()
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=executable,
            headless=True,
            args=launch_args if launch_args is not None else chromium_args(hostport, proto, spki_sha256_b64, netlog),
            timeout=timeout_s * 1000,
        )
        try:
            context = await browser.new_context(ignore_https_errors=False)
            if init_script:
                await context.add_init_script(init_script)
            page = await context.new_page()
            page_errors: list[str] = []  # script errors: a page set that does not run as meant
            page.on("pageerror", lambda exc: page_errors.append(str(exc).splitlines()[0] if str(exc) else "error"))
            cdp = await context.new_cdp_session(page)
            loaded = asyncio.Event()
            handlers = {
                "Network.requestWillBeSent": rec.will_be_sent,
                "Network.requestWillBeSentExtraInfo": rec.extra_request,
                "Network.responseReceivedExtraInfo": rec.extra_response,
                "Network.resourceChangedPriority": rec.priority,
                "Network.requestServedFromCache": rec.served_from_cache,
                "Network.responseReceived": rec.response,
                "Network.responseReceivedEarlyHints": rec.early_hints,
                "Network.dataReceived": rec.data,
                "Network.loadingFinished": rec.finished,
                "Network.loadingFailed": rec.failed,
                "Page.domContentEventFired": rec.page_event("DOMContentLoaded"),
                "Page.loadEventFired": rec.page_event("load"),
            }
            for name, fn in handlers.items():
                cdp.on(name, fn)
            cdp.on("Page.loadEventFired", lambda ev: loaded.set())
            await cdp.send("Network.enable")
            await cdp.send("Page.enable")
            idle_wait_s = await wait_idle() if idle_first else None
            for view in range(2 if repeat_view else 1):
                rec.reset()
                loaded.clear()
                if on_view_start is not None:
                    on_view_start(view)
                remaining = max(deadline - loop.time(), 1.0)
                await page.goto(url, wait_until="load", timeout=remaining * 1000)
                await _settle(rec, loaded, quiet_s, deadline)
            await _document_bodies(cdp, rec)
            har = build_har(
                rec,
                url,
                browser_version=browser.version,
                comment=f"captured by workbench capture over {proto}" + (" (repeat view)" if repeat_view else ""),
            )
            if page_timings_js:
                try:  # a page whose main thread is stuck (a script's endless loop) answers nothing
                    extra = await asyncio.wait_for(page.evaluate(page_timings_js), 5.0)
                except asyncio.TimeoutError:
                    extra = None
                har["log"]["pages"][0]["pageTimings"].update(extra or {})
            if page_errors:
                har["log"]["_pageErrors"] = page_errors
            if idle_wait_s is not None:
                har["log"]["pages"][0]["_idleWait_s"] = round(idle_wait_s, 3)
            await context.close()
        finally:
            await browser.close()  # Chromium writes the NetLog on exit
    return har


# ---------------------------------------------------------------------------- NetLog

_SEND_HEADERS = (
    "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS",
    "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS",
    "HTTP_TRANSACTION_SEND_REQUEST_HEADERS",
)


def _split_line(line: str) -> dict:
    # ":method: GET" -> name ":method"; the separator is the first ": " after the name's own colon.
    cut = line.find(": ", 1)
    return {"name": line[:cut], "value": line[cut + 2 :]} if cut > 0 else {"name": line, "value": ""}


def read_netlog(path: str) -> dict | None:
    """A NetLog JSON document; a log cut short by a crash (no closing brackets) is closed here."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    for tail in ("", "]}", "{}]}"):
        try:
            return json.loads(text.rstrip().rstrip(",") + tail)
        except json.JSONDecodeError:
            continue
    return None


def apply_netlog_header_order(har: dict, netlog: dict) -> int:
    """Give the HAR's header lists the order they had on the wire, from the NetLog.

    DevTools reports header fields as a map sorted by name; the NetLog's
    ``*_SEND_REQUEST_HEADERS`` and ``HTTP_TRANSACTION_READ_RESPONSE_HEADERS`` events list
    them as sent and received.  A HAR entry takes a NetLog list only when both hold the
    same field names (case-insensitive multiset), so nothing is invented.  Returns how
    many entries were reordered; ``log._headerOrder`` says where the order came from."""
    from collections import Counter

    types = {v: k for k, v in netlog.get("constants", {}).get("logEventTypes", {}).items()}
    current_url: dict = {}
    sent: dict[str, list] = {}
    received: dict[str, list] = {}
    for ev in netlog.get("events") or ():
        name = types.get(ev.get("type"))
        src = (ev.get("source") or {}).get("id")
        params = ev.get("params") or {}
        if name == "URL_REQUEST_START_JOB" and "url" in params:
            current_url[src] = params["url"]
        elif name in _SEND_HEADERS and src in current_url and isinstance(params.get("headers"), list):
            sent.setdefault(current_url[src], []).append([_split_line(x) for x in params["headers"]])
        elif (
            name == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS"
            and src in current_url
            and isinstance(params.get("headers"), list)
        ):
            received.setdefault(current_url[src], []).append([_split_line(x) for x in params["headers"][1:]])

    def names(fields):
        return Counter(f["name"].lower() for f in fields)

    def take(pool, url, fields):
        for i, candidate in enumerate(pool.get(url, ())):
            if names(candidate) == names(fields):
                return pool[url].pop(i)
        return None

    reordered = 0
    for e in har["log"]["entries"]:
        url = e["request"]["url"]
        req = take(sent, url, e["request"]["headers"])
        resp = take(received, url, e["response"]["headers"]) if e["response"]["headers"] else None
        if req is not None:
            e["request"]["headers"] = req
        if resp is not None:
            e["response"]["headers"] = resp
        reordered += req is not None or resp is not None
    har["log"]["_headerOrder"] = (
        f"netlog ({reordered} of {len(har['log']['entries'])} entries)" if reordered else "devtools"
    )
    return reordered
