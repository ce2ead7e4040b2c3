"""The conditions of a measured page load, inferred from its HAR.  Written by hand.

What the page-load model may take from a HAR to replay a load, and nothing else: the graph
(``traces.pagegraph``), sizes, and these conditions.  The observed start and end times of
requests are never results: they only give network parameters, server times and the
browser's CPU time between a parent and a child.

- **RTT per origin**: the TCP handshake of its fresh connections (HAR ``connect`` less
  ``ssl``, RFC 9293 section 3.5: one round trip; half of ``connect`` when an https
  connection has no ``ssl``, as Firefox writes it: the TLS handshake's round trip is
  inside), bounded by the origin's shortest exchange; without one, the origin's fastest small
  exchange (of a response of at most 4 KB: one round trip plus the least server time); else
  the page's median.  The navigation's handshake, when no DNS lookup came before it, runs
  from its request's start (``_navigation_handshake_ms``: Chromium began that connection
  before the request and clamps the times it shows).  An exchange is ``send`` plus ``wait``,
  from the request's first byte to the response's first: at least one round trip.  ``wait``
  alone is not, where the browser's clock was late to end ``send`` (a busy network thread
  writes ``send`` 52 ms and ``wait`` 0.03 ms at 20 ms RTT).  The access path gets the nearest
  origin's RTT; farther origins add their difference past the shared bottleneck.
- **Server time** of each response: ``wait`` less its origin's RTT (``wait`` is the time
  from the request's last byte to the response's first: one round trip plus the server).
- **Set-up time** per origin before its connections open: DNS (``dns`` of its first
  lookup), what its TCP handshake took beyond the RTT its shortest exchange bounds (a
  handshake that queued: the server's accept, the browser's own start on the socket) and
  what its TLS handshake took beyond the model's TLS 1.3 round trip (``ssl`` less one RTT:
  TLS 1.2's second round trip, or the server's handshake work).
- **Bandwidth** of the access path: the 90th percentile of the rates of large receives
  (bodies of at least 20 KB: ``bodySize`` / ``receive``), the highest when fewer than three, or
  where large receives overlapped (responses sharing the link, each at a share of it) their
  bytes, with the share of every smaller response's bytes that arrived meanwhile (its
  ``receive`` interval's overlap), over the time any of them was arriving, whichever is
  larger: both are lower bounds of the link's rate.  Unlimited when the page has no large
  receive.
- **Protocol per origin**: the HTTP version most of its responses used (``h2``/``spdy``
  as HTTP/2, ``h3``, HTTP/1.x as HTTP/1.1 with six connections); unknown: HTTP/2 over
  https, HTTP/1.1 over http.
- **Discovery delay** of each resource: how long after its parent's response had ended
  the browser asked for it (parse and script time; 0 when it asked before: the preload
  scanner or a streamed parse, which the model cannot start earlier than the parent's end).
  What the document asked for after one of its synchronous scripts had ended waited for that
  script (HTML: a parser-blocking script stops the parser until it has run), and so for its
  blocking stylesheets (a script runs only once the stylesheets before it are in; Chromium
  stops the parser at a stylesheet in the body, Chrome's ``in_body_parser_blocking``): the
  delay runs from the last of them, and the model holds the resource until they are ready
  too.  The scripts and stylesheets a resource waited for are those that ended by its start:
  a prefix of them in order of their end (``HeldScripts``: one shared list and
  a length per resource, so the cost is linear in resources, not resources x scripts).  A
  script found at the very instant it ended waits for those before it in that order only
  (two such scripts at one instant no longer wait for each other).
- **Streamed discovery**: a document's child asked for before the document had ended was
  found while the document was still arriving (HTML is parsed as it streams in, and the
  preload scanner looks ahead): how far into the document's body, as the share of its
  receive time that had passed (``streamed``: resource -> share in [0, 1]; 0 when asked for
  before its first byte).  The model discovers it when that share of the body has arrived,
  on another network too: where the parser was is a matter of bytes, not of time.  Not for
  children held by a synchronous script (they wait for it as above).  Where the HAR kept the
  document's text (``content.text``), a child the parser found is found where its tag is
  instead (``traces.doctext.tag_share``), before the document's end or after it, its discovery
  delay (as above) after the bytes that hold the tag have arrived: a capture over HTTP/2 had
  them by a whole TLS record's end (a small document's only record), where over QUIC the first
  packets bring them (``ModelNetwork(tls_full_records=...)``).
- **Start offset**: from the page's start to the navigation request (the browser's own
  start-up), added to the simulated onLoad as it is part of the measured one.
- **A server's first flight** (``one_flight``): the model's servers run TCP as Linux does
  (``ModelNetwork(linux_tcp=True)``: ten first segments, three of them the TLS session
  tickets, the HTTP/2 SETTINGS and their ACK); an origin whose first response on a fresh
  connection needed more segments than that and still arrived within half a round trip of its
  first byte has a server that sends more at once (a larger initial window, its frames in one
  write), and keeps a window of 10 x 1460 bytes.
- **A connection open before the page** (``open_before``): a navigation whose request opened
  no connection (no TCP handshake, no ``ssl``: a reload, or a later run in the same browser)
  went on a connection the browser already had; the model opens that origin's HTTP/2 or
  HTTP/3 connection at the start, through its handshakes (``ModelNetwork(open_before=...)``).
- **Pushes**: what the capture says the server pushed (``Resource.pushed``: WebPageTest's and
  chrome-har's ``_was_pushed``, Firefox's status-0 entries without timings; see
  ``traces.harfields``) the simulated server pushes on the navigation too (``pushes``, for
  ``ServerPlan.pushes``), when it is of the document's origin and that origin speaks HTTP/2 or
  HTTP/3: the browser takes it from its push cache instead of asking for it.  A pushed
  response had no request, so its timings (the browser reading its push cache, or nothing)
  give no RTT, server time, set-up or bandwidth: it is left out of those; its discovery delay
  is kept when it has timings (when the browser claimed it: Chrome, WebPageTest), else it
  gets the model's parse delay.

Producers' timings, read by these rules:

- HAR 1.2 (section 4.2.16) puts every phase after ``startedDateTime`` and ``ssl`` inside
  ``connect``.  A producer that writes ``connect`` shorter than ``ssl`` writes them apart (under
  HAR 1.2 it cannot be shorter): its TCP handshake is ``connect`` itself.
- WebPageTest writes ``connect`` holding ``ssl`` (``connect`` is ``_connect_ms + _ssl_ms``) and
  keeps the TCP handshake alone as ``_connect_ms``, which the RTT is read from when written.  Its
  ``startedDateTime`` is ``_load_start``, when the request was sent: the ``dns`` and
  ``connect`` it lists came before, so the request began that much earlier (its start, its
  end and the offsets above are read so).  The phases its ``timings`` lack are read from its
  ``_dns_ms``, ``_connect_ms``, ``_ssl_ms``, ``_ttfb_ms`` and ``_download_ms`` at import
  (``traces.harfields.wpt_timings``).
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_right
from dataclasses import dataclass, field

from ...traces.doctext import tag_share
from ...traces.pagegraph import PageGraph, Resource
from ...browser.client import HeldScripts

__all__ = ["PageConditions", "infer_conditions", "PROTOCOL_CHOICES"]

PROTOCOL_CHOICES = ("auto", "h2", "h3")
SMALL_RESPONSE_BYTES = 4096
# A Linux server's first flight on a fresh HTTP/2 connection: an initial window of 10 segments
# (RFC 6928) counted in segments, less OpenSSL's session tickets, the SETTINGS and their ACK.
LINUX_FIRST_FLIGHT_SEGMENTS = 10 - 3
SEGMENT_BYTES = 1448  # MSS with TCP timestamps on a 1500-byte MTU
LARGE_RESPONSE_BYTES = 20_000
_PHASES = ("blocked", "dns", "connect", "send", "wait", "receive")
_BEFORE_BODY = ("blocked", "dns", "connect", "send", "wait")
# What stops a document's parser: its synchronous scripts, and the stylesheets before them
# (a script waits for them) or in its body (Chromium stops there; Chrome's HAR says so).
_PARSER_BLOCKERS = ("script", "stylesheet")
_IN_BODY_PARSER_BLOCKING = "_renderBlocking in_body_parser_blocking"


@dataclass(frozen=True)
class PageConditions:
    """The network and server conditions of one page, read from its HAR: RTTs, bandwidth, think and discovery times."""

    rtt_s: float  # the access path's RTT (the nearest origin's)
    bandwidth_bps: float | None  # None: no large receive to measure it by
    origins: tuple  # (origin, rtt_s, protocol, setup_s), for LoadParams.origins
    think_s: dict  # resource -> server time
    discovery_s: dict  # resource -> delay after its parent (and blockers) are ready
    blockers: HeldScripts  # resource -> parser-blocking scripts it waited for (a prefix)
    start_offset_s: float
    rtt_from: dict = field(default_factory=dict)  # origin -> "connect", "small exchange" or "page median"
    streamed: dict = field(default_factory=dict)  # resource -> share of its document's body arrived when found
    pushes: tuple = ()  # resources the server pushes on the navigation (ServerPlan.pushes)
    one_flight: frozenset = frozenset()  # origins whose server sent more than a Linux first flight at once
    open_before: frozenset = frozenset()  # origins whose connection was open before the page began

    def summary(self) -> dict:
        """RTT, median origin RTT (ms), bandwidth (Mbit/s), protocols per origin and start offset, for reporting."""
        protocols: dict[str, int] = {}
        for _, _, protocol, _ in self.origins:
            protocols[protocol] = protocols.get(protocol, 0) + 1
        rtts = [o[1] for o in self.origins]
        return {
            "rtt_ms": round(self.rtt_s * 1000, 3),
            "median_origin_rtt_ms": round(statistics.median(rtts) * 1000, 3),
            "bandwidth_mbit": None if self.bandwidth_bps is None else round(self.bandwidth_bps / 1e6, 3),
            "origin_protocols": protocols,
            "start_offset_ms": round(self.start_offset_s * 1000, 3),
        }


def _ms(timings: dict | None, key: str) -> float | None:
    v = timings.get(key) if timings else None
    if v is None:  # most phases a producer leaves out
        return None
    if type(v) is float:  # most values
        return v if v >= 0 else None  # NaN too is None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None


def _phases_ms(timings: dict | None, keys: tuple) -> float:
    """``sum(_ms(timings, k) or 0.0 for k in keys)``: the same additions in the same order (a
    phase ``_ms`` leaves out, or a zero, adds nothing), the same float, in fewer steps."""
    total = 0.0
    if not timings:
        return total
    get = timings.get
    for k in keys:
        v = get(k)
        if v is None:
            continue
        if type(v) is not float:
            v = _ms(timings, k)
            if not v:
                continue
        elif not v >= 0:  # negative or NaN: not a time (_ms)
            continue
        total += v
    return total


def _setup_before_start_ms(r: Resource) -> float:
    """The set-up phases the producer wrote before the entry's ``startedDateTime`` instead of
    after it: WebPageTest's ``startedDateTime`` is its ``_load_start``, when the request was
    sent, and the ``dns`` and ``connect`` it lists for the entry came before (HAR 1.2 puts
    every phase after ``startedDateTime``)."""
    if _ms(r.timings, "_load_start") is None:
        return 0.0
    return (_ms(r.timings, "dns") or 0.0) + (_ms(r.timings, "connect") or 0.0)


def _start_s(r: Resource) -> float | None:
    """When the browser began on the request (HAR 1.2's ``startedDateTime``; trace clock)."""
    if r.start_s is None:
        return None
    return r.start_s - _setup_before_start_ms(r) / 1000.0


def _end_s(r: Resource, start: float | None = None) -> float | None:
    """When the capture's response ended (trace clock; ``ssl`` is inside ``connect``);
    ``start``: ``_start_s(r)`` when known."""
    if start is None:
        start = _start_s(r)
    if start is None:
        return None
    return start + _phases_ms(r.timings, _PHASES) / 1000.0


def _exchange_ms(r: Resource) -> float | None:
    """From the request's first byte sent to the response's first byte (ms): ``send`` plus
    ``wait``, at least one round trip whichever of the two the browser's clock put the time in;
    None without a ``wait``."""
    wait = _ms(r.timings, "wait")
    if wait is None:
        return None
    return wait + (_ms(r.timings, "send") or 0.0)


def _tcp_handshake_ms(r: Resource) -> float | None:
    """The TCP handshake of the entry's fresh connection (ms), or None when it has none: WebPageTest's
    ``_connect_ms`` (the TCP handshake alone) when written; else ``connect`` less ``ssl`` as HAR 1.2
    has it (``ssl`` inside ``connect``), or ``connect`` alone when it is shorter than ``ssl`` (a
    producer that writes them apart: under HAR 1.2 ``connect`` cannot be shorter); an https
    ``connect`` without ``ssl`` (Firefox) holds the TLS handshake too, at least one more round
    trip (TLS 1.3; TLS 1.2 takes two, which the ``wait`` bound catches): half of it."""
    own = _ms(r.timings, "_connect_ms")
    if own:
        return own
    connect, ssl = _ms(r.timings, "connect"), _ms(r.timings, "ssl")
    if not connect:
        return None
    if ssl is None:
        return connect / 2 if r.origin.startswith("https:") else connect
    return connect - ssl if connect >= ssl else connect


def _navigation_handshake_ms(nav: Resource) -> float | None:
    """The navigation's TCP handshake (ms), read from its request's start when no DNS lookup
    came first (``dns`` 0 or not written): Chromium begins the main frame's connection at
    navigation start, before the request (its loading predictor preconnects), and writes every
    connect time that came before a request's start as that start (net/url_request's
    ConvertRealLoadTimesToBlockingTimes), so ``connect`` shows only what was left of the
    handshake (4 to 9 ms short of the round trip on every page the lab loaded; the browser's
    ``blocked`` before it is the rest, near enough).  A lookup the request waited for put the
    handshake after its start: whole, as for any other request."""
    tcp = _tcp_handshake_ms(nav)
    if tcp is None or _ms(nav.timings, "dns"):
        return tcp
    return tcp + (_ms(nav.timings, "blocked") or 0.0)


def on_protocol(origin: str, protocol: str) -> str:
    """The protocol ``origin`` is loaded with when a load puts every origin on ``protocol`` (h2
    or h3): a cleartext origin stays on HTTP/1.1, as browsers speak HTTP/2 only over TLS
    (RFC 9113 section 3.1's h2c is not implemented by them) and HTTP/3 is https only (RFC 9114
    section 3.1)."""
    return "h1" if origin.startswith("http:") else protocol


def _protocol(versions: list[str | None], origin: str, forced: str) -> str:
    if forced != "auto":
        return on_protocol(origin, forced)
    folded = [
        {"h2": "h2", "spdy": "h2", "h3": "h3", "http/1.1": "h1", "http/1.0": "h1"}.get(v or "", None) for v in versions
    ]
    known = [v for v in folded if v]
    if not known:
        return "h1" if origin.startswith("http:") else "h2"
    return max(("h1", "h2", "h3"), key=known.count)


def resource_times(graph: PageGraph) -> tuple[dict, dict]:
    """Each resource's start and end on the capture (``_start_s``, ``_end_s``; trace clock),
    by index: what ``infer_conditions`` reads of them, made once for a caller that needs the
    ends too (``study.load_event_graph``)."""
    starts = {r.index: _start_s(r) for r in graph.resources}
    return starts, {r.index: _end_s(r, starts[r.index]) for r in graph.resources}


def infer_conditions(
    graph: PageGraph, page_start_s: float | None, protocol: str = "auto", *, times: tuple | None = None
) -> PageConditions:
    """The conditions of ``graph``'s measured load (see the module docstring); ``times``:
    ``resource_times`` of a graph of the same resources' indices, timings and starts, when
    already made."""
    by_origin: dict[str, list[Resource]] = {}
    for r in graph.resources:
        by_origin.setdefault(r.origin, []).append(r)

    rtt: dict[str, float] = {}
    rtt_from: dict[str, str] = {}
    handshake: dict[str, float] = {}  # origin -> its TCP handshakes' median (s)
    for origin, every in by_origin.items():
        # A pushed response had no request: its timings (the browser reading its push cache,
        # or none at all) say nothing of the network or the server.
        rs = [r for r in every if not r.pushed]
        samples = []
        for r in rs:
            tcp = _navigation_handshake_ms(r) if r.index == 0 else _tcp_handshake_ms(r)
            if tcp is not None and tcp > 0.05:
                samples.append(tcp / 1000.0)
        waits = [w / 1000.0 for w in map(_exchange_ms, rs) if w]
        if samples:
            # An exchange is at least one round trip: it bounds a handshake sample that queued.
            handshake[origin] = statistics.median(samples)
            rtt[origin], rtt_from[origin] = min(handshake[origin], min(waits, default=math.inf)), "connect"
            continue
        small = [_exchange_ms(r) for r in rs if r.body_bytes <= SMALL_RESPONSE_BYTES]
        small = [w / 1000.0 for w in small if w]
        if small:
            rtt[origin], rtt_from[origin] = min(small), "small exchange"
    fallback = statistics.median(rtt.values()) if rtt else 0.1
    for origin in by_origin:
        if origin not in rtt:
            rtt[origin], rtt_from[origin] = fallback, "page median"
    rtt = {o: max(v, 0.001) for o, v in rtt.items()}
    base = min(rtt.values())

    # The document's synchronous scripts stop its parser until they have run (HTML's
    # parser-blocking scripts), and a script runs only once the stylesheets before it are in
    # (HTML's "style sheet that is blocking scripts"; Chromium also stops the parser at a
    # stylesheet in the body, Chrome's in_body_parser_blocking): what the document asked for
    # after one of them had ended waited for it.
    starts, ends = times or resource_times(graph)
    # In order of their end (then index): what ended by a resource's start is a prefix.
    sync_scripts = sorted(
        (
            r.index
            for r in graph.resources
            if r.resource_type in _PARSER_BLOCKERS
            and (r.render_blocking or r.render_blocking_reason == _IN_BODY_PARSER_BLOCKING)
            and r.parent == graph.document
            and ends[r.index] is not None
        ),
        key=lambda i: (ends[i], i),
    )
    sync_ends = [ends[i] for i in sync_scripts]
    sync_position = {i: k for k, i in enumerate(sync_scripts)}
    think, discovery, prefix, streamed = {}, {}, {}, {}
    for r in graph.resources:
        wait = _ms(r.timings, "wait")
        if wait is not None and not r.pushed:
            think[r.index] = max(0.0, wait / 1000.0 - rtt[r.origin])
        start = starts[r.index]
        if r.parent is None or start is None or ends[r.parent] is None:
            continue
        if r.pushed and not any(_ms(r.timings, k) for k in _PHASES):
            continue  # a push written with no timings (Firefox): its start is no request's
        held = 0
        if r.parent == graph.document:
            # Every script ended by this start (an end is never before its start); a script
            # never waits for itself, nor for those after it in the order.
            held = bisect_right(sync_ends, start)
            held = min(held, sync_position.get(r.index, held))
        if held:
            prefix[r.index] = held
        since = max(ends[r.parent], sync_ends[held - 1]) if held else ends[r.parent]
        discovery[r.index] = max(0.0, start - since)
        parent = graph[r.parent]
        if held or parent.resource_type != "document" or starts[r.parent] is None:
            continue
        # A tag the document's text places: where it is (found with the bytes that hold it).
        share = None
        if parent.document_text and r.initiator_type == "parser":
            share = tag_share(parent.document_text, r.url, parent.url)
        if share is None and start < ends[r.parent]:
            # Found while the document streamed in: how far into its body (receive time).
            first_byte = starts[r.parent] + _phases_ms(parent.timings, _BEFORE_BODY) / 1000.0
            receive = ends[r.parent] - first_byte
            share = min(1.0, max(0.0, (start - first_byte) / receive if receive > 0 else 1.0))
        if share is not None:
            streamed[r.index] = share

    origins, one_flight = [], set()
    for origin, every in by_origin.items():
        rs = [r for r in every if not r.pushed] or every
        if any(_one_flight(r, rtt[origin]) for r in rs):
            one_flight.add(origin)
        dns = (
            next(
                (
                    _ms(r.timings, "dns")
                    for r in sorted(rs, key=lambda r: (r.start_s or 0.0, r.index))
                    if _ms(r.timings, "dns")
                ),
                0.0,
            )
            or 0.0
        )
        ssl = next((_ms(r.timings, "ssl") for r in rs if _ms(r.timings, "ssl")), 0.0) or 0.0
        extra_tls = max(0.0, ssl / 1000.0 - rtt[origin]) if origin.startswith("https:") else 0.0
        # A handshake longer than the round trip a wait bounds it by queued (the server's accept,
        # the browser's own start on the socket): time before the connection, not distance.
        extra_tcp = max(0.0, handshake.get(origin, 0.0) - rtt[origin])
        origins.append(
            (
                origin,
                max(rtt[origin], base),
                _protocol([r.http_version for r in rs], origin, protocol),
                dns / 1000.0 + extra_tcp + extra_tls,
            )
        )

    rates, receives, others = [], [], []
    for r in graph.resources:
        if r.pushed:
            continue  # read from the push cache: its receive is no transfer
        receive = _ms(r.timings, "receive")
        if r.body_bytes >= LARGE_RESPONSE_BYTES and receive and receive > 1.0:
            rates.append(r.body_bytes * 8.0 / (receive / 1000.0))
            end = ends[r.index]
            if end is not None:
                receives.append((end - receive / 1000.0, end, r.body_bytes))
        elif r.body_bytes > 0 and receive is not None:
            end = ends[r.index]
            if end is not None:
                others.append((end - receive / 1000.0, end, r.body_bytes))
    rates.sort()
    if not rates:
        bandwidth = None
    else:
        bandwidth = rates[-1] if len(rates) < 3 else rates[min(len(rates) - 1, int(round(0.9 * (len(rates) - 1))))]
        # Responses that arrive together share the link: each one's rate is a share of it.
        # Their bytes over the time any of them was arriving, with the smaller responses'
        # bytes that arrived meanwhile, is a lower bound too; the larger of the two is the tighter.
        bandwidth = max(bandwidth, _busy_rate(receives, others))

    # What the server pushed with the document in the capture, it pushes in the simulation:
    # on the navigation's stream, the document's origin only (RFC 9113 section 8.4: a
    # connection pushes what it is authoritative for; the model pushes on the navigation's
    # connection), over HTTP/2 or HTTP/3 (HTTP/1.1 has no push), each URL once.
    doc = graph[graph.document]
    doc_protocol = next(p for o, _, p, _ in origins if o == doc.origin)
    pushes, seen = [], set()
    for r in graph.resources:
        if (
            r.pushed
            and r.index > graph.document
            and r.origin == doc.origin
            and r.url not in seen
            and doc_protocol in ("h2", "h3")
        ):
            seen.add(r.url)
            pushes.append(r.index)

    nav_start = starts[0]
    offset = max(0.0, nav_start - page_start_s) if nav_start is not None and page_start_s is not None else 0.0
    return PageConditions(
        rtt_s=base,
        bandwidth_bps=bandwidth,
        origins=tuple(sorted(origins)),
        think_s=think,
        discovery_s=discovery,
        blockers=HeldScripts(tuple(sync_scripts), prefix),
        start_offset_s=offset,
        rtt_from=rtt_from,
        streamed=streamed,
        pushes=tuple(pushes),
        one_flight=frozenset(one_flight),
        open_before=_open_before(graph[0]),
    )


def _busy_rate(receives: list, others: list = ()) -> float:
    """Bits per second over the time at least one of ``receives`` ((start_s, end_s, bytes))
    was arriving: the bytes of overlapping receives, and of ``others`` (smaller responses, the
    same tuples) the share of each that arrived within that time, over the union of their
    intervals."""
    busy, total = [], 0.0
    for s, e, n in sorted(receives):
        total += n
        if not busy or s > busy[-1][1]:
            busy.append([s, e])
        elif e > busy[-1][1]:
            busy[-1][1] = e
    busy_s = sum(e - s for s, e in busy)
    starts = [s for s, _ in busy]
    for s, e, n in others:
        i = max(0, bisect_right(starts, s) - 1)
        if e <= s:  # read in an instant: counted when that instant is within the busy time
            total += n if i < len(busy) and busy[i][0] <= e <= busy[i][1] else 0
            continue
        inside = 0.0
        while i < len(busy) and busy[i][0] < e:
            inside += max(0.0, min(e, busy[i][1]) - max(s, busy[i][0]))
            i += 1
        total += n * inside / (e - s)
    return total * 8.0 / busy_s if busy_s > 0 else 0.0


def _open_before(nav: Resource) -> frozenset:
    """The navigation's origin when its request opened no connection: no TCP handshake and no
    ``ssl`` written (HAR 1.2 writes -1 for a phase that does not apply, e.g. ``connect`` on a
    reused connection), so the browser had that connection open before the page began (a
    reload, or a later run in the same browser).  Other origins are left to open their own: a
    sub-resource without ``connect`` may ride another origin's connection instead (HTTP/2
    coalescing, RFC 9113 section 9.1.1), which the model does not share."""
    if nav.pushed or not nav.timings or _tcp_handshake_ms(nav) or _ms(nav.timings, "ssl"):
        return frozenset()
    if not any(_ms(nav.timings, k) is not None for k in ("wait", "receive")):
        return frozenset()  # no timings at all: nothing says how the request went
    return frozenset((nav.origin,))


def _one_flight(r: Resource, rtt_s: float) -> bool:
    """The first response on a fresh connection (one with a TCP handshake) arrived in less than
    half a round trip although it needed more segments than a Linux server's first flight
    holds: that server sends more at once (a larger initial window, or its frames in one write)."""
    # The size first: most responses fit the first flight, and need no timings read.
    if not -(-r.body_bytes // SEGMENT_BYTES) > LINUX_FIRST_FLIGHT_SEGMENTS:
        return False
    receive = _ms(r.timings, "receive")
    return receive is not None and receive / 1000.0 < rtt_s / 2 and bool(_tcp_handshake_ms(r))
